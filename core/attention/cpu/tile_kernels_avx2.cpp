// Compiled with -mavx2 -mfma -mf16c (see ../CMakeLists.txt) and only entered
// after a run-time CPU check. Kept free of inline library templates so no
// AVX2 code can leak into code paths of older CPUs through ODR merging.
#include "core/attention/cpu/tile_kernels.hpp"

#include "core/common/cpu_features.hpp"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>

namespace aph::attention::cpu {
namespace {

// {hsum(v0), .., hsum(v3)}, each summed in the same order.
inline __m128 hsum4(__m256 v0, __m256 v1, __m256 v2, __m256 v3) {
  __m256 s = _mm256_hadd_ps(_mm256_hadd_ps(v0, v1), _mm256_hadd_ps(v2, v3));
  return _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
}

// Eight keys a pass, one FMA chain each (two FMAs a cycle need eight chains
// of four cycles). A short last group repeats its last key and drops the
// extra sums, so every key's score takes the same path.
void scores(const float* q, const float* const* k, int32_t n, int32_t head_dim, float scale, float* s) {
  const __m256 sc = _mm256_set1_ps(scale);
  for (int32_t j = 0; j < n; j += 8) {
    const float* kr[8];
    for (int32_t i = 0; i < 8; ++i) kr[i] = k[j + i < n ? j + i : n - 1];
    // Unrolled by hand (the pragmas): at -O2 the arrays would live in memory.
    __m256 a[8];
#pragma GCC unroll 8
    for (int32_t i = 0; i < 8; ++i) a[i] = _mm256_setzero_ps();
    for (int32_t d = 0; d < head_dim; d += 8) {
      const __m256 qv = _mm256_loadu_ps(q + d);
#pragma GCC unroll 8
      for (int32_t i = 0; i < 8; ++i) a[i] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kr[i] + d), a[i]);
    }
    const __m128 lo = hsum4(a[0], a[1], a[2], a[3]), hi = hsum4(a[4], a[5], a[6], a[7]);
    alignas(32) float out[8];
    _mm256_store_ps(out, _mm256_mul_ps(_mm256_set_m128(hi, lo), sc));
    for (int32_t i = 0; i < 8 && j + i < n; ++i) s[j + i] = out[i];
  }
}

// exp for x <= 0 (Cephes' expf polynomial after x = n ln2 + r, |r| <= ln2/2):
// about 1 ulp; 0 below -87.3 (past the smallest normal) and for -inf.
inline __m256 exp_nonpositive(__m256 x) {
  const __m256 live = _mm256_cmp_ps(x, _mm256_set1_ps(-87.3f), _CMP_GE_OQ);
  x = _mm256_max_ps(x, _mm256_set1_ps(-87.3f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 y = _mm256_set1_ps(1.9875691500e-4f);
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(1.3981999507e-3f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(8.3334519073e-3f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(4.1665795894e-2f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(1.6666665459e-1f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(5.0000001201e-1f));
  y = _mm256_fmadd_ps(y, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i pow2 = _mm256_slli_epi32(
      _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_and_ps(_mm256_mul_ps(y, _mm256_castsi256_ps(pow2)), live);
}

// The tile's lanes past n are -inf, so they add exact zeros to the sum.
float exp_sum(const float* s, float m, int32_t n, float* p) {
  alignas(32) float x[kTileKeys];
  for (int32_t j = 0; j < kTileKeys; ++j) x[j] = j < n ? s[j] - m : -__builtin_inff();
  const __m256 e0 = exp_nonpositive(_mm256_load_ps(x));
  const __m256 e1 = exp_nonpositive(_mm256_load_ps(x + 8));
  alignas(32) float e[kTileKeys];
  _mm256_store_ps(e, e0);
  _mm256_store_ps(e + 8, e1);
  for (int32_t j = 0; j < n; ++j) p[j] = e[j];
  const __m256 t = _mm256_add_ps(e0, e1);
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  h = _mm_add_ss(h, _mm_movehdup_ps(h));
  return _mm_cvtss_f32(h);
}

// W elements of acc (W / 8 FMA chains over the keys) from element d on.
template <int W>
inline void accumulate_span(float* acc, __m256 corr, const float* p, const float* const* v, int32_t n,
                            int32_t d) {
  __m256 x[W / 8];
#pragma GCC unroll 8
  for (int i = 0; i < W / 8; ++i) x[i] = _mm256_mul_ps(_mm256_loadu_ps(acc + d + 8 * i), corr);
  for (int32_t j = 0; j < n; ++j) {
    const __m256 pj = _mm256_set1_ps(p[j]);
#pragma GCC unroll 8
    for (int i = 0; i < W / 8; ++i) x[i] = _mm256_fmadd_ps(pj, _mm256_loadu_ps(v[j] + d + 8 * i), x[i]);
  }
#pragma GCC unroll 8
  for (int i = 0; i < W / 8; ++i) _mm256_storeu_ps(acc + d + 8 * i, x[i]);
}

// 64 elements a pass (eight chains), then 32 and 16: head sizes are
// multiples of 16.
void accumulate(float* acc, float corr, const float* p, const float* const* v, int32_t n, int32_t head_dim) {
  const __m256 c = _mm256_set1_ps(corr);
  int32_t d = 0;
  for (; d + 64 <= head_dim; d += 64) accumulate_span<64>(acc, c, p, v, n, d);
  if (d + 32 <= head_dim) {
    accumulate_span<32>(acc, c, p, v, n, d);
    d += 32;
  }
  if (d < head_dim) accumulate_span<16>(acc, c, p, v, n, d);
}

void widen_f16(const uint16_t* src, float* dst, int32_t n) {
  int32_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  for (; i < n; ++i) dst[i] = _cvtsh_ss(src[i]);
}

void widen_bf16(const uint16_t* src, float* dst, int32_t n) {
  int32_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
    _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(h, 16)));
  }
  for (; i < n; ++i) {
    const uint32_t bits = static_cast<uint32_t>(src[i]) << 16;
    __builtin_memcpy(dst + i, &bits, 4);
  }
}

void widen_fp8(const uint8_t* src, const float* table, float scale, float* dst, int32_t n) {
  const __m256 sc = _mm256_set1_ps(scale);
  int32_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i idx = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + i)));
    _mm256_storeu_ps(dst + i, _mm256_mul_ps(_mm256_i32gather_ps(table, idx, 4), sc));
  }
  for (; i < n; ++i) dst[i] = table[src[i]] * scale;
}

}  // namespace

const TileKernels* avx2_tile_kernels() {
  static const bool ok = cpu_has_avx2_fma_f16c();
  static const TileKernels k{scores, exp_sum, accumulate, widen_f16, widen_bf16, widen_fp8, "avx2"};
  return ok ? &k : nullptr;
}

}  // namespace aph::attention::cpu

#else  // not an x86 build with AVX2 flags: the portable kernels only

namespace aph::attention::cpu {
const TileKernels* avx2_tile_kernels() { return nullptr; }
}  // namespace aph::attention::cpu

#endif
