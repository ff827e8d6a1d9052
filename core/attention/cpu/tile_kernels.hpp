// The inner loops of the CPU attention, over one tile of up to kTileKeys
// keys for one query head. An AVX2 build and a portable build exist;
// tile_kernels() picks one at run time. Within one process every call goes
// through the same kernels, and each kernel's arithmetic for a key or an
// element never depends on how many keys the tile holds beside it, so a
// query's result is the same whichever batch or chunk it arrives in.
#pragma once

#include <cstdint>

namespace aph::attention::cpu {

// Keys per tile: the online softmax's step. Tiles start at key positions
// that are multiples of it (not at paged blocks: those may be any size).
constexpr int32_t kTileKeys = 16;

struct TileKernels {
  // s[j] = scale * dot(q, k[j][0, head_dim)) for j < n (n <= kTileKeys).
  void (*scores)(const float* q, const float* const* k, int32_t n, int32_t head_dim, float scale,
                 float* s);
  // p[j] = exp(s[j] - m) for j < n; returns the sum of p[0, n). Every s[j] <= m.
  float (*exp_sum)(const float* s, float m, int32_t n, float* p);
  // acc[d] = acc[d] * corr + sum_j p[j] * v[j][d], d < head_dim.
  void (*accumulate)(float* acc, float corr, const float* p, const float* const* v, int32_t n,
                     int32_t head_dim);
  // dst[i] = the IEEE half src[i] as float, i < n.
  void (*widen_f16)(const uint16_t* src, float* dst, int32_t n);
  // dst[i] = the bfloat16 src[i] as float, i < n.
  void (*widen_bf16)(const uint16_t* src, float* dst, int32_t n);
  // dst[i] = table[src[i]] * scale (an fp8 format's 256 values), i < n.
  void (*widen_fp8)(const uint8_t* src, const float* table, float scale, float* dst, int32_t n);
  const char* name;
};

const TileKernels& tile_kernels();  // the best for this CPU
const TileKernels& portable_tile_kernels();
const TileKernels* avx2_tile_kernels();  // nullptr when not built or not supported

}  // namespace aph::attention::cpu
