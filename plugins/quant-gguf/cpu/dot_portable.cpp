#include <cmath>

#include "plugins/quant-gguf/cpu/dot.hpp"

namespace aph::gguf {

namespace {

float dot_g(const int8_t* q, const float* a, const float* b, ActQ8 x, int64_t k, int group) {
  float acc = 0.0f;
  for (int64_t g = 0; g < k / group; ++g) {
    int32_t isum = 0;
    for (int i = 0; i < group; ++i) isum += q[g * group + i] * x.q[g * group + i];
    float sx = group == 16 ? x.s16[g] : x.s16[2 * g] + x.s16[2 * g + 1];
    acc += a[g] * x.d[g * group / 32] * static_cast<float>(isum) + b[g] * sx;
  }
  return acc;
}

float dot_g32(const int8_t* q, const float* a, const float* b, ActQ8 x, int64_t k) {
  return dot_g(q, a, b, x, k, 32);
}
float dot_g16(const int8_t* q, const float* a, const float* b, ActQ8 x, int64_t k) {
  return dot_g(q, a, b, x, k, 16);
}

void dot4_g32(const int8_t* q, const float* a, const float* b, const ActQ8* x, int64_t k, float* out) {
  for (int r = 0; r < 4; ++r) out[r] = dot_g(q, a, b, x[r], k, 32);
}
void dot4_g16(const int8_t* q, const float* a, const float* b, const ActQ8* x, int64_t k, float* out) {
  for (int r = 0; r < 4; ++r) out[r] = dot_g(q, a, b, x[r], k, 16);
}

float dot_f32(const float* w, const float* x, int64_t k) {
  float acc = 0.0f;
  for (int64_t i = 0; i < k; ++i) acc += w[i] * x[i];
  return acc;
}

void quantize_act(const float* x, int8_t* q, float* d, float* s16, int64_t k) {
  for (int64_t blk = 0; blk < k / 32; ++blk) {
    const float* xb = x + 32 * blk;
    float amax = 0.0f;
    for (int i = 0; i < 32; ++i) amax = std::fmax(amax, std::fabs(xb[i]));
    float scale = amax / 127.0f;
    float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
    int32_t sums[2] = {0, 0};
    for (int i = 0; i < 32; ++i) {
      int v = static_cast<int>(std::nearbyint(xb[i] * inv));
      q[32 * blk + i] = static_cast<int8_t>(v);
      sums[i / 16] += v;
    }
    d[blk] = scale;
    s16[2 * blk] = scale * static_cast<float>(sums[0]);
    s16[2 * blk + 1] = scale * static_cast<float>(sums[1]);
  }
}

DotKernels::BlockDot no_block_dot(uint32_t) { return nullptr; }

}  // namespace

const DotKernels& portable_kernels() {
  static const DotKernels k{dot_g32, dot_g16, dot4_g32, dot4_g16, dot_f32, quantize_act, no_block_dot,
                            "portable"};
  return k;
}

const DotKernels& dot_kernels() {
  static const DotKernels* best = avx2_kernels() ? avx2_kernels() : &portable_kernels();
  return *best;
}

}  // namespace aph::gguf
