// FP8 (OCP e4m3fn and e5m2) <-> fp32 on the host, bit-exact with CUDA's
// __nv_cvt_float_to_fp8(x, __NV_SATFINITE, ...): round to nearest even,
// finite overflow saturates to the largest finite value, NaN stays NaN. The
// CPU reference and the GPU test rely on both sides producing the same bytes.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

namespace aph::attention {

struct Fp8Format {
  int exp_bits;
  int man_bits;
  int bias;
  float max_finite;
  uint8_t max_code;  // positive largest finite
  uint8_t nan_code;  // positive NaN
};

inline constexpr Fp8Format kE4M3{4, 3, 7, 448.0f, 0x7e, 0x7f};
inline constexpr Fp8Format kE5M2{5, 2, 15, 57344.0f, 0x7b, 0x7f};

inline uint8_t f32_to_fp8(float f, const Fp8Format& fmt) {
  const uint8_t sign = std::signbit(f) ? 0x80 : 0x00;
  if (std::isnan(f)) return sign | fmt.nan_code;
  float a = std::fabs(f);
  if (a >= fmt.max_finite) return sign | fmt.max_code;
  if (a == 0.0f) return sign;
  const int emin = 1 - fmt.bias;  // exponent of the smallest normal
  int e;
  std::frexp(a, &e);              // a = m * 2^e, m in [0.5, 1)
  int unbiased = e - 1;
  if (unbiased < emin) unbiased = emin;
  // Quantize on the grid of this binade (or the subnormal grid); nearbyint in
  // the default rounding mode is round-half-to-even.
  float ulp = std::ldexp(1.0f, unbiased - fmt.man_bits);
  float q = std::nearbyint(a / ulp);
  float r = q * ulp;
  if (r > fmt.max_finite) return sign | fmt.max_code;
  if (r == 0.0f) return sign;
  if (r < std::ldexp(1.0f, emin)) {  // subnormal
    return sign | static_cast<uint8_t>(q);
  }
  std::frexp(r, &e);
  int exp_field = e - 1 + fmt.bias;
  int mant = static_cast<int>(std::ldexp(r, -(e - 1)) * (1 << fmt.man_bits)) - (1 << fmt.man_bits);
  return sign | static_cast<uint8_t>((exp_field << fmt.man_bits) | mant);
}

inline float fp8_to_f32_slow(uint8_t b, const Fp8Format& fmt) {
  const bool neg = (b & 0x80) != 0;
  const int exp_field = (b >> fmt.man_bits) & ((1 << fmt.exp_bits) - 1);
  const int mant = b & ((1 << fmt.man_bits) - 1);
  float v;
  if (fmt.exp_bits == 4) {
    if (exp_field == 15 && mant == 7) return NAN;
  } else if (exp_field == 31) {
    v = mant == 0 ? INFINITY : NAN;
    return neg ? -v : v;
  }
  if (exp_field == 0) {
    v = std::ldexp(static_cast<float>(mant), 1 - fmt.bias - fmt.man_bits);
  } else {
    v = std::ldexp(1.0f + static_cast<float>(mant) / (1 << fmt.man_bits), exp_field - fmt.bias);
  }
  return neg ? -v : v;
}

// 256-entry decode tables: the CPU attention dequantizes every cached element.
inline const std::array<float, 256>& fp8_table(const Fp8Format& fmt) {
  static const std::array<float, 256> e4m3 = [] {
    std::array<float, 256> t{};
    for (int i = 0; i < 256; ++i) t[i] = fp8_to_f32_slow(static_cast<uint8_t>(i), kE4M3);
    return t;
  }();
  static const std::array<float, 256> e5m2 = [] {
    std::array<float, 256> t{};
    for (int i = 0; i < 256; ++i) t[i] = fp8_to_f32_slow(static_cast<uint8_t>(i), kE5M2);
    return t;
  }();
  return fmt.exp_bits == 4 ? e4m3 : e5m2;
}

inline float fp8_to_f32(uint8_t b, const Fp8Format& fmt) { return fp8_table(fmt)[b]; }

}  // namespace aph::attention
