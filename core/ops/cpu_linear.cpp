// CPU dense linear y = x · Wᵀ (+ b): W rows in F32, F16 or BF16, split across
// the pool by output feature. Weight rows are widened to F32 once per call
// and reused for every row of x; the dot products use AVX2/FMA when the CPU
// has them (chosen at run time, so one binary runs everywhere).
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/common/error.hpp"
#include "core/common/half.hpp"
#include "core/ops/backend.hpp"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace aph::ops::cpu {

namespace {

constexpr int kRowBlock = 4;

void widen_portable(const void* src, aph_dtype dtype, int64_t k, float* dst) {
  if (dtype == APH_DTYPE_F32) {
    std::memcpy(dst, src, k * sizeof(float));
  } else if (dtype == APH_DTYPE_BF16) {
    const uint16_t* s = static_cast<const uint16_t*>(src);
    for (int64_t i = 0; i < k; ++i) dst[i] = bf16_to_f32(s[i]);
  } else {
    const uint16_t* s = static_cast<const uint16_t*>(src);
    for (int64_t i = 0; i < k; ++i) dst[i] = f16_to_f32(s[i]);
  }
}

// y[j] = dot(x, w_j) for kRowBlock rows; independent accumulators let the
// compiler keep several multiply-adds in flight.
void dot4_portable(const float* x, const float* const* w, int64_t k, float* y) {
  for (int j = 0; j < kRowBlock; ++j) {
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= k; i += 8)
      for (int l = 0; l < 8; ++l) acc[l] += x[i + l] * w[j][i + l];
    float s = 0;
    for (; i < k; ++i) s += x[i] * w[j][i];
    y[j] = s + ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  }
}

#if defined(__x86_64__)
__attribute__((target("avx2,fma,f16c"))) void widen_avx2(const void* src, aph_dtype dtype, int64_t k, float* dst) {
  int64_t i = 0;
  if (dtype == APH_DTYPE_BF16) {
    const uint16_t* s = static_cast<const uint16_t*>(src);
    for (; i + 8 <= k; i += 8) {
      __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
      _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)));
    }
    for (; i < k; ++i) dst[i] = bf16_to_f32(s[i]);
  } else if (dtype == APH_DTYPE_F16) {
    const uint16_t* s = static_cast<const uint16_t*>(src);
    for (; i + 8 <= k; i += 8) {
      __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
      _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
    }
    for (; i < k; ++i) dst[i] = f16_to_f32(s[i]);
  } else {
    std::memcpy(dst, src, k * sizeof(float));
  }
}

__attribute__((target("avx2,fma"))) float hsum(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));
  return _mm_cvtss_f32(lo);
}

__attribute__((target("avx2,fma"))) void dot4_avx2(const float* x, const float* const* w, int64_t k, float* y) {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= k; i += 8) {
    __m256 xv = _mm256_loadu_ps(x + i);
    a0 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(w[0] + i), a0);
    a1 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(w[1] + i), a1);
    a2 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(w[2] + i), a2);
    a3 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(w[3] + i), a3);
  }
  float t[kRowBlock] = {hsum(a0), hsum(a1), hsum(a2), hsum(a3)};
  for (; i < k; ++i)
    for (int j = 0; j < kRowBlock; ++j) t[j] += x[i] * w[j][i];
  for (int j = 0; j < kRowBlock; ++j) y[j] = t[j];
}

// F16C from CPUID directly: clang's __builtin_cpu_supports does not know it.
bool have_avx2() {
  static const bool ok = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
    const bool f16c = (c >> 29) & 1u;
    return f16c && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return ok;
}
#endif

using WidenFn = void (*)(const void*, aph_dtype, int64_t, float*);
using Dot4Fn = void (*)(const float*, const float* const*, int64_t, float*);

}  // namespace

void linear(const Exec& exec, const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y) {
  const int64_t n = w.dim(0), k = w.dim(1), m = x.numel() / k;
  WidenFn widen = widen_portable;
  Dot4Fn dot4 = dot4_portable;
#if defined(__x86_64__)
  if (have_avx2()) {
    widen = widen_avx2;
    dot4 = dot4_avx2;
  }
#endif
  const size_t esize = dtype_size(w.dtype());
  const char* wbase = static_cast<const char*>(w.data());
  const float* xs = x.as<float>();
  float* ys = y.as<float>();
  const float* b = bias ? bias->as<float>() : nullptr;
  const int64_t blocks = (n + kRowBlock - 1) / kRowBlock;
  parallel_for(exec.pool, blocks, 4, [&](int64_t bb, int64_t be) {
    // F32 weights are used in place; others are widened into this scratch.
    std::vector<float> scratch(w.dtype() == APH_DTYPE_F32 ? 0 : static_cast<size_t>(kRowBlock * k));
    std::vector<float> zero_row;
    for (int64_t blk = bb; blk < be; ++blk) {
      const int64_t n0 = blk * kRowBlock;
      const int rows = static_cast<int>(std::min<int64_t>(kRowBlock, n - n0));
      const float* wr[kRowBlock];
      for (int j = 0; j < kRowBlock; ++j) {
        if (j >= rows) {
          if (zero_row.empty()) zero_row.assign(k, 0.0f);
          wr[j] = zero_row.data();
          continue;
        }
        const void* src = wbase + (n0 + j) * k * esize;
        if (w.dtype() == APH_DTYPE_F32) {
          wr[j] = static_cast<const float*>(src);
        } else {
          widen(src, w.dtype(), k, scratch.data() + j * k);
          wr[j] = scratch.data() + j * k;
        }
      }
      for (int64_t r = 0; r < m; ++r) {
        float out[kRowBlock];
        dot4(xs + r * k, wr, k, out);
        for (int j = 0; j < rows; ++j) ys[r * n + n0 + j] = out[j] + (b ? b[n0 + j] : 0.0f);
      }
    }
  });
}

}  // namespace aph::ops::cpu
