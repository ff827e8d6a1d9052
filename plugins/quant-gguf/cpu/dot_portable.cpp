#include <cmath>

#include "plugins/quant-gguf/cpu/dot.hpp"

namespace aph::gguf {

namespace {

// The weight offset's activation sum of group g.
float group_sum(const ActQ8& x, int64_t g, int group) {
  return group == 16 ? x.s16[g] : x.s16[2 * g] + x.s16[2 * g + 1];
}

void rows8(const Rows8& w, const ActQ8* x, int64_t m, int64_t k, float* out) {
  const int G = w.group;
  for (int64_t r = 0; r < m; ++r)
    for (int i = 0; i < 8; ++i) {
      float acc = 0.0f, off = 0.0f;
      for (int64_t g = 0; g < k / G; ++g) {
        int32_t isum = 0;
        for (int e = 0; e < G; ++e) {
          const int64_t at = g * G + e;
          isum += w.q[((at / 4) * 8 + i) * 4 + at % 4] * x[r].q[at];
        }
        acc += static_cast<float>(isum) * (w.a[g * 8 + i] * x[r].d[g * G / 32]);
        off += w.b[g * 8 + i] * group_sum(x[r], g, G);
      }
      out[r * 8 + i] = acc + off;
    }
}

DotKernels::Rows8Direct no_direct(uint32_t) { return nullptr; }

float dot_f32(const float* w, const float* x, int64_t k) {
  float acc = 0.0f;
  for (int64_t i = 0; i < k; ++i) acc += w[i] * x[i];
  return acc;
}

void quantize_act(const float* x, int8_t* q, float* d, float* s16, int32_t* sum16, int64_t k) {
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
    for (int h = 0; h < 2; ++h) {
      s16[2 * blk + h] = scale * static_cast<float>(sums[h]);
      sum16[2 * blk + h] = sums[h];
    }
  }
}

}  // namespace

const DotKernels& portable_kernels() {
  static const DotKernels k{rows8, no_direct, dot_f32, quantize_act, "portable"};
  return k;
}

const DotKernels& dot_kernels() {
  static const DotKernels* best = avx_vnni_kernels() ? avx_vnni_kernels()
                                  : avx2_kernels()   ? avx2_kernels()
                                                     : &portable_kernels();
  return *best;
}

}  // namespace aph::gguf
