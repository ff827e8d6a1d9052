// The pieces of the batch-1..8 k-quant matvec that the register form
// (matvec_fast.cu) and the ring form (matvec_ring.cu) share: a warp's rows,
// one step of their dot products, and the store of finished rows.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "plugins/quant-gguf/cuda/device_math.cuh"
#include "plugins/quant-gguf/cuda/kernels.hpp"
#include "plugins/quant-gguf/cuda/row_sink.cuh"
#include "plugins/quant-gguf/cuda/vecdot.cuh"

namespace aph::gguf::cuda::warp_rows {

constexpr int kWarps = 4;  // per CTA
constexpr int kRowsPerWarp = 2;

// One step of R rows: weights wv already loaded for block blk; adds the
// dot products with the m <= MT activation rows to acc.
template <class P, int MT, int R>
__device__ __forceinline__ void step(const typename P::W (&wv)[R], int64_t blk, int part,
                                     const int8_t* xq, const float* xd, const float* xs, int64_t k,
                                     int m, float (&acc)[R][MT]) {
  if constexpr (MT == 1) {
    // Unpack next to each use: holding every row's codes costs registers.
    typename P::X xv;
    P::load_x(xq, xd, xs, blk, part, xv);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      typename P::C c;
      P::unpack(wv[r], part, c);
      acc[r][0] += P::dot(c, xv);
    }
  } else {
    // Unpack once for all activation rows.
    typename P::C c[R];
#pragma unroll
    for (int r = 0; r < R; ++r) P::unpack(wv[r], part, c[r]);
#pragma unroll
    for (int i = 0; i < MT; ++i) {
      if (i < m) {
        typename P::X xv;
        P::load_x(xq + i * k, xd + i * (k / 32), xs + i * (k / 16), blk, part, xv);
#pragma unroll
        for (int r = 0; r < R; ++r) acc[r][i] += P::dot(c[r], xv);
      }
    }
  }
}

template <class P, int R>
__device__ __forceinline__ void load_step(const uint8_t* const (&wrow)[R], int64_t nb, int64_t blk,
                                          int part, typename P::W (&wv)[R]) {
#pragma unroll
  for (int r = 0; r < R; ++r) P::load_w(wrow[r], nb, blk, part, wv[r]);
}

// Rows row0 .. row0 + R - 1 of token i from the lane sums, into t's sink
// (all lanes call: warp shuffles). With R == 2 a warp holds both rows of a
// RoPE pair (row0 is even).
template <int MT, int R, typename T>
__device__ __forceinline__ void store_rows(float (&acc)[R][MT], int m, const MatvecTarget& t, const RopeKv& kv,
                                           int64_t row0, const SinkInputs (&pre)[R]) {
#pragma unroll
  for (int i = 0; i < MT; ++i) {
    if (i < m) {  // uniform: m is a kernel argument
      float v[R];
#pragma unroll
      for (int r = 0; r < R; ++r)
        v[r] = warp_sum(acc[r][i]) + (t.bias && row0 + r < t.n ? t.bias[row0 + r] : 0.0f);
      if (threadIdx.x % 32 == 0) {
#pragma unroll
        for (int r = 0; r < R; ++r)
          if (row0 + r < t.n) sink_row<T>(t, kv, i, row0 + r, v[r], v[r ^ (R - 1)], &pre[r]);
      }
    }
  }
}

template <class P, int R>
__device__ __forceinline__ void row_pointers(const uint8_t* w, int64_t n, int64_t nb, int64_t row0,
                                             const uint8_t* (&wrow)[R]) {
  // Rows past n (last warp only) re-read row n-1 and are never stored.
#pragma unroll
  for (int r = 0; r < R; ++r) wrow[r] = w + min(row0 + r, n - 1) * P::row_bytes(nb);
}

}  // namespace aph::gguf::cuda::warp_rows
