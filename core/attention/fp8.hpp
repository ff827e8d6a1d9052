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

// Nearest code by binary search over the ascending positive codes, ties to
// the even code (= even mantissa, as IEEE round-to-nearest-even). Both
// differences are exact (Sterbenz), so ties are detected exactly.
inline uint8_t f32_to_fp8(float f, const Fp8Format& fmt) {
  const uint8_t sign = std::signbit(f) ? 0x80 : 0x00;
  if (std::isnan(f)) return sign | fmt.nan_code;
  const float a = std::fabs(f);
  if (a >= fmt.max_finite) return sign | fmt.max_code;
  const auto& t = fp8_table(fmt);
  int lo = 0, hi = fmt.max_code;  // first code whose value is >= a
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (t[mid] < a) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  int c = lo;
  if (c > 0) {
    const float up = t[c] - a, down = a - t[c - 1];
    if (down < up || (down == up && ((c - 1) & 1) == 0)) c = c - 1;
  }
  return sign | static_cast<uint8_t>(c);
}

}  // namespace aph::attention
