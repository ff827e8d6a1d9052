#include <cmath>

#include "core/attention/cpu/tile_kernels.hpp"
#include "core/common/half.hpp"

namespace aph::attention::cpu {
namespace {

// Eight partial sums, so the compiler can vectorize without reassociating
// one accumulator (no -ffast-math here).
void scores(const float* q, const float* const* k, int32_t n, int32_t head_dim, float scale, float* s) {
  for (int32_t j = 0; j < n; ++j) {
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int32_t d = 0; d < head_dim; d += 8)
      for (int32_t i = 0; i < 8; ++i) acc[i] += q[d + i] * k[j][d + i];
    float sum = 0;
    for (float a : acc) sum += a;
    s[j] = sum * scale;
  }
}

float exp_sum(const float* s, float m, int32_t n, float* p) {
  float sum = 0;
  for (int32_t j = 0; j < n; ++j) {
    p[j] = std::exp(s[j] - m);
    sum += p[j];
  }
  return sum;
}

void accumulate(float* acc, float corr, const float* p, const float* const* v, int32_t n, int32_t head_dim) {
  for (int32_t d = 0; d < head_dim; ++d) {
    float a = acc[d] * corr;
    for (int32_t j = 0; j < n; ++j) a += p[j] * v[j][d];
    acc[d] = a;
  }
}

void widen_f16(const uint16_t* src, float* dst, int32_t n) {
  for (int32_t i = 0; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}

void widen_bf16(const uint16_t* src, float* dst, int32_t n) {
  for (int32_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(src[i]);
}

void widen_fp8(const uint8_t* src, const float* table, float scale, float* dst, int32_t n) {
  for (int32_t i = 0; i < n; ++i) dst[i] = table[src[i]] * scale;
}

}  // namespace

const TileKernels& portable_tile_kernels() {
  static const TileKernels k{scores, exp_sum, accumulate, widen_f16, widen_bf16, widen_fp8, "portable"};
  return k;
}

const TileKernels& tile_kernels() {
  static const TileKernels* best = avx2_tile_kernels() ? avx2_tile_kernels() : &portable_tile_kernels();
  return *best;
}

}  // namespace aph::attention::cpu
