// The tile of the tile GEMM (tile_gemm.cu): its shape, the products of one k
// step by ldmatrix + mma.sync, and the write of the finished tile.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/common/cuda_mma.cuh"
#include "plugins/quant-gguf/cuda/device_math.cuh"
#include "plugins/quant-gguf/cuda/tile_gemm.hpp"

namespace aph::gguf::cuda::tile {

constexpr int kBN = 64;   // W rows per CTA
constexpr int kBM = 64;   // x rows per CTA
constexpr int kBK = 128;  // k per step
constexpr int kThreads = 128;
constexpr int kLd = kBK + 8;   // shared row stride in elements: 272 bytes, rows in different banks
constexpr int kLdC = kBM + 4;  // fp32 result stride

// The targets of one launch_tile_gemm_multi, by value: target t owns the
// grid's columns first_tile[t] .. first_tile[t + 1] - 1 and its split
// partials start partial_off[t] floats into the workspace.
struct TileTargets {
  const uint8_t* w[kTileGemmMaxTargets];
  int64_t n[kTileGemmMaxTargets];
  const float* bias[kTileGemmMaxTargets];
  void* y[kTileGemmMaxTargets];
  int64_t partial_off[kTileGemmMaxTargets];
  int first_tile[kTileGemmMaxTargets + 1];
  int count;
};

// The target of CTA column `tile` and the first W row of that column in it.
__device__ __forceinline__ int target_of(const TileTargets& tt, int tile, int64_t* n0) {
  int t = 0;
  while (t + 1 < tt.count && tile >= tt.first_tile[t + 1]) ++t;
  *n0 = static_cast<int64_t>(tile - tt.first_tile[t]) * kBN;
  return t;
}

// The mma.sync accumulators of a warp: C of its 16 W rows x each 8 rows of x.
using Acc = float[kBM / 8][4];

// acc += the warp's 16 rows of w_s (kBN x kLd, W decoded) times the kBM rows
// of x_s (kBM x kLd), over the step's kBK.
template <typename T>
__device__ __forceinline__ void mma_step(const T* w_s, const T* x_s, int warp, int lane, Acc& acc) {
#pragma unroll
  for (int kk = 0; kk < kBK / 16; ++kk) {
    // A: the warp's 16 W rows x 16 of k; lanes 0-15 address rows at
    // column 0, lanes 16-31 at column 8.
    uint32_t a[4];
    cuda_mma::ldmatrix_x4(a, w_s + (warp * 16 + lane % 16) * kLd + kk * 16 + (lane / 16) * 8);
#pragma unroll
    for (int jp = 0; jp < kBM / 16; ++jp) {
      // B for two tiles of 8 x rows (x_s[m][k] is B column-major): tiles
      // (rows 0-7, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 0-7),
      // (rows 8-15, k 8-15) of this pair.
      uint32_t b[4];
      cuda_mma::ldmatrix_x4(b, x_s + (jp * 16 + (lane / 16) * 8 + lane % 8) * kLd + kk * 16 + (lane / 8) % 2 * 8);
      cuda_mma::mma16816<T>(acc[2 * jp], a, b[0], b[1]);
      cuda_mma::mma16816<T>(acc[2 * jp + 1], a, b[2], b[3]);
    }
  }
}

// The accumulators into c_s[m][n] (kBM x kLdC floats), so that the writes of
// write_tile go along n, as y's rows do: lane l holds rows (n) l / 4 and
// l / 4 + 8, columns (m) 2 (l % 4) and +1 of each 8-column tile.
__device__ __forceinline__ void stash_acc(const Acc& acc, int warp, int lane, float* c_s) {
#pragma unroll
  for (int jt = 0; jt < kBM / 8; ++jt) {
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int mm = jt * 8 + 2 * (lane % 4) + e, nn = warp * 16 + lane / 4;
      c_s[mm * kLdC + nn] = acc[jt][e];
      c_s[mm * kLdC + nn + 8] = acc[jt][2 + e];
    }
  }
}

// c_s (the CTA's tile at rows m0, columns n0) into y with the bias, or into
// this split's fp32 partials when K is split.
// Threads tid of `threads` (the CTA's, or one warpgroup's) share the work.
template <typename T>
__device__ __forceinline__ void write_tile(const float* c_s, int64_t m0, int64_t n0, int64_t m, int64_t n,
                                           const float* __restrict__ bias, T* __restrict__ y,
                                           float* __restrict__ partial, int tid = threadIdx.x,
                                           int threads = kThreads) {
  const int split = blockIdx.z, splits = gridDim.z;
  for (int idx = tid; idx < kBM * kBN; idx += threads) {
    const int mm = idx / kBN, nn = idx % kBN;
    const int64_t row = m0 + mm, col = n0 + nn;
    if (row >= m || col >= n) continue;
    const float v = c_s[mm * kLdC + nn];
    if (splits == 1)
      y[row * n + col] = from_float<T>(v + (bias ? bias[col] : 0.0f));
    else
      partial[(static_cast<int64_t>(split) * m + row) * n + col] = v;
  }
}

}  // namespace aph::gguf::cuda::tile
