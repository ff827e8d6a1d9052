// Compiled with -mavx2 -mfma -mf16c (see CMakeLists.txt) and only entered
// after a run-time CPU check. Kept free of inline library templates so no
// AVX2 code can leak into code paths of older CPUs through ODR merging.
#include "plugins/quant-gguf/cpu/dot.hpp"

#include "core/common/cpu_features.hpp"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>

namespace aph::gguf {

namespace {

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// 32 products w*x summed pairwise into 8 int32 lanes: lanes 0-3 cover bytes
// 0-15 and lanes 4-7 bytes 16-31. maddubs wants unsigned*signed, so the sign
// of w moves onto x.
inline __m256i dot32(__m256i w, __m256i x) {
  __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
  return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

float dot_g32(const int8_t* q, const float* a, const float* b, ActQ8 x, int64_t k) {
  __m256 acc = _mm256_setzero_ps();
  float accb = 0.0f;
  for (int64_t g = 0; g < k / 32; ++g) {
    __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 32 * g));
    __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.q + 32 * g));
    __m256 s = _mm256_cvtepi32_ps(dot32(w, xv));
    acc = _mm256_fmadd_ps(s, _mm256_set1_ps(a[g] * x.d[g]), acc);
    accb += b[g] * (x.s16[2 * g] + x.s16[2 * g + 1]);
  }
  return hsum(acc) + accb;
}

float dot_g16(const int8_t* q, const float* a, const float* b, ActQ8 x, int64_t k) {
  __m256 acc = _mm256_setzero_ps();
  float accb = 0.0f;
  for (int64_t g = 0; g < k / 32; ++g) {
    __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 32 * g));
    __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.q + 32 * g));
    __m256 s = _mm256_cvtepi32_ps(dot32(w, xv));
    __m256 scale = _mm256_set_m128(_mm_set1_ps(a[2 * g + 1] * x.d[g]), _mm_set1_ps(a[2 * g] * x.d[g]));
    acc = _mm256_fmadd_ps(s, scale, acc);
    accb += b[2 * g] * x.s16[2 * g] + b[2 * g + 1] * x.s16[2 * g + 1];
  }
  return hsum(acc) + accb;
}

// Horizontal sums of four vectors at once: {hsum(v0), .., hsum(v3)}.
inline __m128 hsum4(__m256 v0, __m256 v1, __m256 v2, __m256 v3) {
  __m256 s01 = _mm256_hadd_ps(v0, v1), s23 = _mm256_hadd_ps(v2, v3);
  __m256 s = _mm256_hadd_ps(s01, s23);
  return _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
}

template <int G>
void dot4(const int8_t* q, const float* a, const float* b, const ActQ8* x, int64_t k, float* out) {
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  float accb[4] = {0, 0, 0, 0};
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t g = 0; g < k / 32; ++g) {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 32 * g));
    const __m256i wabs = _mm256_sign_epi8(w, w);
    for (int r = 0; r < 4; ++r) {
      const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[r].q + 32 * g));
      const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(wabs, _mm256_sign_epi8(xv, w)), ones);
      __m256 scale;
      if constexpr (G == 32) {
        scale = _mm256_set1_ps(a[g] * x[r].d[g]);
        accb[r] += b[g] * (x[r].s16[2 * g] + x[r].s16[2 * g + 1]);
      } else {
        scale = _mm256_set_m128(_mm_set1_ps(a[2 * g + 1] * x[r].d[g]), _mm_set1_ps(a[2 * g] * x[r].d[g]));
        accb[r] += b[2 * g] * x[r].s16[2 * g] + b[2 * g + 1] * x[r].s16[2 * g + 1];
      }
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), scale, acc[r]);
    }
  }
  __m128 s = _mm_add_ps(hsum4(acc[0], acc[1], acc[2], acc[3]), _mm_loadu_ps(accb));
  _mm_storeu_ps(out, s);
}

void dot4_g32(const int8_t* q, const float* a, const float* b, const ActQ8* x, int64_t k, float* out) {
  dot4<32>(q, a, b, x, k, out);
}
void dot4_g16(const int8_t* q, const float* a, const float* b, const ActQ8* x, int64_t k, float* out) {
  dot4<16>(q, a, b, x, k, out);
}

float dot_f32(const float* w, const float* x, int64_t k) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(x + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 8), _mm256_loadu_ps(x + i + 8), acc1);
  }
  float acc = hsum(_mm256_add_ps(acc0, acc1));
  for (; i < k; ++i) acc += w[i] * x[i];
  return acc;
}

void quantize_act(const float* x, int8_t* q, float* d, float* s16, int64_t k) {
  const __m256 sign_mask = _mm256_set1_ps(-0.0f);
  for (int64_t blk = 0; blk < k / 32; ++blk) {
    const float* xb = x + 32 * blk;
    __m256 v[4];
    __m256 amax = _mm256_setzero_ps();
    for (int j = 0; j < 4; ++j) {
      v[j] = _mm256_loadu_ps(xb + 8 * j);
      amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign_mask, v[j]));
    }
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    float scale = _mm_cvtss_f32(m) / 127.0f;
    float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
    __m256 iv = _mm256_set1_ps(inv);
    __m256i r[4];
    for (int j = 0; j < 4; ++j)
      r[j] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v[j], iv),
                                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    // Sums per 16 before packing: lanes of r[0], r[1] are elements 0-15.
    __m256i s0 = _mm256_add_epi32(r[0], r[1]);
    __m256i s1 = _mm256_add_epi32(r[2], r[3]);
    __m128i h0 = _mm_add_epi32(_mm256_castsi256_si128(s0), _mm256_extracti128_si256(s0, 1));
    __m128i h1 = _mm_add_epi32(_mm256_castsi256_si128(s1), _mm256_extracti128_si256(s1, 1));
    h0 = _mm_hadd_epi32(h0, h1);
    h0 = _mm_hadd_epi32(h0, h0);
    // Pack to int8; packs interleave 128-bit lanes, the permute restores order.
    __m256i p01 = _mm256_packs_epi32(r[0], r[1]);
    __m256i p23 = _mm256_packs_epi32(r[2], r[3]);
    __m256i p = _mm256_packs_epi16(p01, p23);
    p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * blk), p);
    d[blk] = scale;
    s16[2 * blk] = scale * static_cast<float>(_mm_cvtsi128_si32(h0));
    s16[2 * blk + 1] = scale * static_cast<float>(_mm_extract_epi32(h0, 1));
  }
}

inline float f16(const uint8_t* p) {
  uint16_t h;
  __builtin_memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// Nibbles of 16 bytes as 32 unsigned codes: low nibbles are elements 0-15,
// high nibbles 16-31 (the Q4_0 nibble order).
inline __m256i nibbles(const uint8_t* qs) {
  __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m128i low = _mm_set1_epi8(0x0F);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), low), _mm_and_si128(v, low));
}

inline __m256 udot32(__m256i w_unsigned, const int8_t* xq) {
  __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq));
  __m256i p = _mm256_maddubs_epi16(w_unsigned, xv);
  return _mm256_cvtepi32_ps(_mm256_madd_epi16(p, _mm256_set1_epi16(1)));
}

// w = d*(q-8): d*dx*dot(q, xq) - 8*d*sum(x).
float dot_q4_0(const uint8_t* row, ActQ8 x, int64_t k) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  float accb = 0.0f;
  int64_t nb = k / 32, b = 0;
  for (; b + 2 <= nb; b += 2) {
    const uint8_t* b0 = row + 18 * b;
    const uint8_t* b1 = b0 + 18;
    float d0 = f16(b0), d1 = f16(b1);
    acc0 = _mm256_fmadd_ps(udot32(nibbles(b0 + 2), x.q + 32 * b), _mm256_set1_ps(d0 * x.d[b]), acc0);
    acc1 = _mm256_fmadd_ps(udot32(nibbles(b1 + 2), x.q + 32 * b + 32), _mm256_set1_ps(d1 * x.d[b + 1]), acc1);
    accb += d0 * (x.s16[2 * b] + x.s16[2 * b + 1]) + d1 * (x.s16[2 * b + 2] + x.s16[2 * b + 3]);
  }
  for (; b < nb; ++b) {
    const uint8_t* b0 = row + 18 * b;
    float d0 = f16(b0);
    acc0 = _mm256_fmadd_ps(udot32(nibbles(b0 + 2), x.q + 32 * b), _mm256_set1_ps(d0 * x.d[b]), acc0);
    accb += d0 * (x.s16[2 * b] + x.s16[2 * b + 1]);
  }
  return hsum(_mm256_add_ps(acc0, acc1)) - 8.0f * accb;
}

// w = d*q + m: d*dx*dot(q, xq) + m*sum(x).
float dot_q4_1(const uint8_t* row, ActQ8 x, int64_t k) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  float accb = 0.0f;
  int64_t nb = k / 32, b = 0;
  for (; b + 2 <= nb; b += 2) {
    const uint8_t* b0 = row + 20 * b;
    const uint8_t* b1 = b0 + 20;
    acc0 = _mm256_fmadd_ps(udot32(nibbles(b0 + 4), x.q + 32 * b), _mm256_set1_ps(f16(b0) * x.d[b]), acc0);
    acc1 = _mm256_fmadd_ps(udot32(nibbles(b1 + 4), x.q + 32 * b + 32),
                           _mm256_set1_ps(f16(b1) * x.d[b + 1]), acc1);
    accb += f16(b0 + 2) * (x.s16[2 * b] + x.s16[2 * b + 1]) +
            f16(b1 + 2) * (x.s16[2 * b + 2] + x.s16[2 * b + 3]);
  }
  for (; b < nb; ++b) {
    const uint8_t* b0 = row + 20 * b;
    acc0 = _mm256_fmadd_ps(udot32(nibbles(b0 + 4), x.q + 32 * b), _mm256_set1_ps(f16(b0) * x.d[b]), acc0);
    accb += f16(b0 + 2) * (x.s16[2 * b] + x.s16[2 * b + 1]);
  }
  return hsum(_mm256_add_ps(acc0, acc1)) + accb;
}

float dot_q8_0(const uint8_t* row, ActQ8 x, int64_t k) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t nb = k / 32, b = 0;
  auto one = [&](int64_t i, __m256 acc) {
    const uint8_t* blk = row + 34 * i;
    __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
    __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.q + 32 * i));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot32(w, xv)), _mm256_set1_ps(f16(blk) * x.d[i]), acc);
  };
  for (; b + 2 <= nb; b += 2) {
    acc0 = one(b, acc0);
    acc1 = one(b + 1, acc1);
  }
  for (; b < nb; ++b) acc0 = one(b, acc0);
  return hsum(_mm256_add_ps(acc0, acc1));
}

inline int scale_min(int j, const uint8_t* S, int* m) {
  if (j < 4) {
    *m = S[j + 4] & 63;
    return S[j] & 63;
  }
  *m = (S[j + 4] >> 4) | ((S[j] >> 6) << 4);
  return (S[j + 4] & 15) | ((S[j - 4] >> 6) << 4);
}

// Q4_K: per sub-block j, w = d*sc_j*q - dmin*m_j with q the low (even j) or
// high (odd j) nibbles of 32 bytes.
float dot_q4_k(const uint8_t* row, ActQ8 x, int64_t k) {
  __m256 acc = _mm256_setzero_ps();
  float accm = 0.0f;
  const __m256i low = _mm256_set1_epi8(0x0F);
  for (int64_t b = 0; b < k / 256; ++b) {
    const uint8_t* blk = row + 144 * b;
    const float d = f16(blk), dmin = f16(blk + 2);
    const uint8_t* S = blk + 4;
    for (int c = 0; c < 4; ++c) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 16 + 32 * c));
      for (int t = 0; t < 2; ++t) {
        const int j = 2 * c + t;
        const int64_t xb = 8 * b + j;  // activation block of 32
        int m;
        const int sc = scale_min(j, S, &m);
        const __m256i q = t ? _mm256_and_si256(_mm256_srli_epi16(v, 4), low) : _mm256_and_si256(v, low);
        const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.q + 32 * xb));
        const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(q, xv), _mm256_set1_epi16(1));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(d * static_cast<float>(sc) * x.d[xb]), acc);
        accm += dmin * static_cast<float>(m) * (x.s16[2 * xb] + x.s16[2 * xb + 1]);
      }
    }
  }
  return hsum(acc) - accm;
}

// Q6_K: q = (ql nibble | qh bits << 4) in [0, 63], w = d*sc_g*(q - 32) per
// group of 16; the -32 is folded in through the activation sums.
float dot_q6_k(const uint8_t* row, ActQ8 x, int64_t k) {
  __m256 acc = _mm256_setzero_ps();
  float acc32 = 0.0f;
  const __m256i low = _mm256_set1_epi8(0x0F), two = _mm256_set1_epi8(0x03);
  for (int64_t b = 0; b < k / 256; ++b) {
    const uint8_t* blk = row + 210 * b;
    const float d = f16(blk + 208);
    const int8_t* sc = reinterpret_cast<const int8_t*>(blk + 192);
    for (int h = 0; h < 2; ++h) {
      const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 128 + 32 * h));
      for (int u = 0; u < 4; ++u) {
        const __m256i ql = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 64 * h + 32 * (u & 1)));
        const __m256i lo = _mm256_and_si256(u < 2 ? ql : _mm256_srli_epi16(ql, 4), low);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * u), two);
        const __m256i q = _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
        const int64_t xb = 8 * b + 4 * h + u;
        const int g = 8 * h + 2 * u;  // first group of 16
        const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.q + 32 * xb));
        const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(q, xv), _mm256_set1_epi16(1));
        const float s0 = d * static_cast<float>(sc[g]), s1 = d * static_cast<float>(sc[g + 1]);
        const __m256 scale = _mm256_set_m128(_mm_set1_ps(s1 * x.d[xb]), _mm_set1_ps(s0 * x.d[xb]));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), scale, acc);
        acc32 += s0 * x.s16[2 * xb] + s1 * x.s16[2 * xb + 1];
      }
    }
  }
  return hsum(acc) - 32.0f * acc32;
}

DotKernels::BlockDot block_dot(uint32_t type) {
  switch (type) {
    case 2: return dot_q4_0;
    case 3: return dot_q4_1;
    case 8: return dot_q8_0;
    case 12: return dot_q4_k;
    case 14: return dot_q6_k;
    default: return nullptr;
  }
}

}  // namespace

const DotKernels* avx2_kernels() {
  static const bool ok = aph::cpu_has_avx2_fma_f16c();
  static const DotKernels k{dot_g32, dot_g16, dot4_g32, dot4_g16, dot_f32, quantize_act, block_dot, "avx2"};
  return ok ? &k : nullptr;
}

}  // namespace aph::gguf

#else  // not an x86 build with AVX2 flags: the portable kernels only

namespace aph::gguf {
const DotKernels* avx2_kernels() { return nullptr; }
}  // namespace aph::gguf

#endif
