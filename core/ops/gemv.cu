// The dense GEMV of batch-1 decode: every weight byte is read once, so the
// kernel's speed is how soon and how long its loads stay in flight.
//
// - Each lane issues kGemvDepth 16-byte weight loads (streaming: read once,
//   kept out of L1 so x stays there) before it does any math, and the first
//   batch before griddepcontrol.wait: the weights do not depend on the kernel
//   before, so they stream while it finishes (cuda_pdl.cuh).
// - `split` warps share a row, each a slice of it, so that a warp has about
//   one batch of loads to wait for. A warp that looped over a whole row
//   waited for each batch before it issued the next (H200, Llama-3-8B shapes
//   alone: a 4096 x 14336 down projection 34.9 -> 29.6 us with 8 warps a row,
//   a 6144 x 4096 QKV 17.8 -> 15.3 us with 2; the 8B's decode 201.8 -> 213.0
//   tok/s with 2 and 4, 214.6 with 2 and 8; docs/PERFORMANCE.md).
#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "core/common/cuda_pdl.cuh"
#include "core/common/env_flag.hpp"
#include "core/ops/cuda_math.cuh"
#include "core/ops/kernels.hpp"

namespace aph::ops::kernels {

namespace {

constexpr int kWarps = 8;      // a CTA is 256 threads
constexpr int kGemvDepth = 8;  // 16-byte weight loads a lane has in flight
constexpr int kMaxSplit = 8;  // a CTA's warps all on one row

template <typename T>
constexpr int kPer = 16 / sizeof(T);  // elements in a 16-byte vector

// Warps of one CTA take kWarps / split rows; the split warps of a row take
// consecutive slices of it and add their sums through shared memory.
// kRows (1, 2, 4 or 8) bounds the rows of x, so m = 1 carries one
// accumulator, not eight.
//
// kGated: w holds 2n rows, n gate rows then the n up rows of a dense gate/up
// projection, and y[r, i] = silu(gate_i · x_r) * (up_i · x_r). The first
// half of a CTA's row slots take gate rows, the second half the same up rows,
// so the product is formed inside the CTA (no handoff between CTAs) and the
// separate silu_mul kernel, a dependent launch a layer, does not run. Each
// projection is rounded to Ty first, as the GEMV stores it for silu_mul, so
// the result is the same bit for bit as the two kernels'.
template <typename T, typename Ty, int kRows, bool kGated = false>
__global__ void __launch_bounds__(kWarps * 32) gemv_kernel(const T* __restrict__ x, const T* __restrict__ w,
                                                          const float* __restrict__ bias, Ty* __restrict__ y, int m,
                                                          int64_t n, int64_t k, int split) {
  __shared__ float partial[kWarps][kRows];
  cuda_pdl::allow_dependents();
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int slots = kWarps / split, slot = warp / split;
  // Gated: output `out` of this CTA's slots / 2; slot >= slots / 2 is its up row.
  const int64_t out = kGated ? static_cast<int64_t>(blockIdx.x) * (slots / 2) + slot % (slots / 2)
                             : static_cast<int64_t>(blockIdx.x) * slots + slot;
  const int64_t row = kGated && slot >= slots / 2 ? out + n : out;
  const int part = warp % split;
  const bool has_row = out < n;
  // Vector indices within a row fit 32 bits; 64-bit ones cost registers the
  // weight batch needs.
  const int vecs = static_cast<int>(k / kPer<T>);
  const int per_part = (vecs + split - 1) / split;
  const int begin = min(vecs, part * per_part);
  const int end = has_row ? min(vecs, begin + per_part) : begin;
  const uint4* wr = reinterpret_cast<const uint4*>(w) + (has_row ? row : 0) * vecs;
  uint4 wv[kGemvDepth];
  auto load = [&](int v0) {
#pragma unroll
    for (int u = 0; u < kGemvDepth; ++u) {
      const int v = v0 + u * 32;
      wv[u] = v < end ? __ldcs(wr + v) : make_uint4(0, 0, 0, 0);
    }
  };
  int v0 = begin + lane;
  load(v0);
  cuda_pdl::wait_for_producer();  // x comes from the kernel before
  float acc[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) acc[r] = 0.0f;
  while (v0 < end) {
#pragma unroll
    for (int u = 0; u < kGemvDepth; ++u) {
      const int v = v0 + u * 32;
      if (v < end) {
        const T* we = reinterpret_cast<const T*>(&wv[u]);
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          if (r < m) {
            const uint4 xv = __ldg(reinterpret_cast<const uint4*>(x) + r * vecs + v);
            const T* xe = reinterpret_cast<const T*>(&xv);
#pragma unroll
            for (int e = 0; e < kPer<T>; ++e) acc[r] = fmaf(to_f(we[e]), to_f(xe[e]), acc[r]);
          }
        }
      }
    }
    v0 += 32 * kGemvDepth;
    if (v0 < end) load(v0);
  }
#pragma unroll
  for (int r = 0; r < kRows; ++r)
    for (int o = 16; o > 0; o >>= 1) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], o);
  if constexpr (kGated) {
    if (lane == 0)
#pragma unroll
      for (int r = 0; r < kRows; ++r) partial[warp][r] = acc[r];
    __syncthreads();
    const int half = slots / 2;
    const int64_t i = static_cast<int64_t>(blockIdx.x) * half + threadIdx.x;
    if (threadIdx.x >= half || i >= n) return;
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      if (r >= m) break;
      // Summed in the order of the ungated form below, then rounded as
      // stored, then silu_mul's own arithmetic.
      float g = 0.0f, u = 0.0f;
      for (int p = 0; p < split; ++p) {
        g += partial[threadIdx.x * split + p][r];
        u += partial[(threadIdx.x + half) * split + p][r];
      }
      y[r * n + i] = silu_times(from_f<Ty>(g + (bias ? bias[i] : 0.0f)), from_f<Ty>(u + (bias ? bias[i + n] : 0.0f)));
    }
    return;
  }
  if (split > 1) {
    if (lane == 0)
#pragma unroll
      for (int r = 0; r < kRows; ++r) partial[warp][r] = acc[r];
    __syncthreads();
    if (part != 0) return;
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      float s = 0.0f;
      for (int p = 0; p < split; ++p) s += partial[warp + p][r];
      acc[r] = s;
    }
  }
  if (lane != 0 || !has_row) return;
#pragma unroll
  for (int r = 0; r < kRows; ++r)
    if (r < m) y[r * n + row] = from_f<Ty>(acc[r] + (bias ? bias[row] : 0.0f));
}

// Any k and alignment: one element per lane per step.
template <typename T, typename Ty>
__global__ void gemv_scalar_kernel(const T* x, const T* w, const float* bias, Ty* y, int m, int64_t n, int64_t k) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x >> 5) + warp;
  if (row >= n) return;
  const T* wr = w + row * k;
  float acc[kGemvMaxRows];
#pragma unroll
  for (int r = 0; r < kGemvMaxRows; ++r) acc[r] = 0.0f;
  for (int64_t j = lane; j < k; j += 32) {
    const float wf = to_f(wr[j]);
#pragma unroll
    for (int r = 0; r < kGemvMaxRows; ++r)
      if (r < m) acc[r] += wf * to_f(x[r * k + j]);
  }
#pragma unroll
  for (int r = 0; r < kGemvMaxRows; ++r) {
    if (r >= m) break;
    float v = acc[r];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) y[r * n + row] = from_f<Ty>(v + (bias ? bias[row] : 0.0f));
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

bool valid_split(int s) { return s == 1 || s == 2 || s == 4 || s == 8; }

// Warps a row: the most that still give each warp a slice of at least
// APH_GEMV_MIN_SLICE vectors, by default 7 of the 8 loads a lane of a batch
// (32 lanes x kGemvDepth): a row of 4096 bf16 is then two warps' full
// batches, one of 14336 eight warps' 7/8 batches (H200, the 8B's down
// projection alone 31.2 us with 4 warps, 29.6 with 8; its decode after 512
// 212.9 -> 214.6 tok/s with a minimum of 224 against 256, medians of 2
// interleaved runs). APH_GEMV_SPLIT=N fixes the split.
int choose_split(int64_t vecs) {
  static const int forced = [] {
    const long s = env_int("APH_GEMV_SPLIT", 0);
    return valid_split(static_cast<int>(s)) ? static_cast<int>(s) : 0;
  }();
  static const int64_t min_slice = [] {
    const long s = env_int("APH_GEMV_MIN_SLICE", 0);
    return s > 0 ? static_cast<int64_t>(s) : static_cast<int64_t>(28 * kGemvDepth);
  }();
  if (forced) return forced;
  int split = 1;
  while (split < kMaxSplit && vecs / (split * 2) >= min_slice) split *= 2;
  return split;
}

// The vector kernel of kRows >= m rows of x, one form or the other.
template <typename T, typename Ty, bool kGated>
void launch_vector(const T* x, const T* w, const float* bias, Ty* y, int m, int64_t n, int64_t k, int split,
                   cudaStream_t s) {
  const int slots = kWarps / split;
  const int outputs_per_cta = kGated ? slots / 2 : slots;
  const unsigned blocks = static_cast<unsigned>((n + outputs_per_cta - 1) / outputs_per_cta);
  // A launch error shows in cudaGetLastError, which dispatch returns.
  auto go = [&](auto kernel) {
    (void)cuda_pdl::launch_dependent(kernel, dim3(blocks), dim3(kWarps * 32), 0, s, x, w, bias, y, m, n, k, split);
  };
  if (m == 1) {
    go(gemv_kernel<T, Ty, 1, kGated>);
  } else if (m == 2) {
    go(gemv_kernel<T, Ty, 2, kGated>);
  } else if (m <= 4) {
    go(gemv_kernel<T, Ty, 4, kGated>);
  } else {
    go(gemv_kernel<T, Ty, kGemvMaxRows, kGated>);
  }
}

}  // namespace

int gemv(const void* x, const void* w, const float* bias, void* y, int64_t m, int64_t n, int64_t k, int dtype,
         int y_dtype, void* stream, int split) {
  if (m == 0 || n == 0) return 0;
  if (m > kGemvMaxRows || (split != 0 && !valid_split(split))) {
    return static_cast<int>(cudaErrorInvalidValue);
  }
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  int status = 0;
  const int launched = dispatch(dtype, [&](auto t) {
    using T = decltype(t);
    const bool vec = k % kPer<T> == 0 && aligned16(x) && aligned16(w);
    status = dispatch(y_dtype, [&](auto ty) {
      using Ty = decltype(ty);
      const auto* xt = static_cast<const T*>(x);
      const auto* wt = static_cast<const T*>(w);
      auto* yt = static_cast<Ty*>(y);
      const int mi = static_cast<int>(m);
      if (!vec) {
        const unsigned blocks = static_cast<unsigned>((n + kWarps - 1) / kWarps);
        gemv_scalar_kernel<T, Ty><<<blocks, kWarps * 32, 0, s>>>(xt, wt, bias, yt, mi, n, k);
        return;
      }
      launch_vector<T, Ty, false>(xt, wt, bias, yt, mi, n, k, split ? split : choose_split(k / kPer<T>), s);
    });
  });
  return status ? status : launched;
}

int gemv_silu_mul(const void* x, const void* w, const float* bias, void* y, int64_t m, int64_t n, int64_t k,
                  int dtype, int y_dtype, void* stream, int split) {
  if (m == 0 || n == 0) return 0;
  // A CTA needs a gate and an up slot: at most kWarps / 2 warps a row.
  if (m > kGemvMaxRows || (split != 0 && (!valid_split(split) || split > kWarps / 2))) {
    return static_cast<int>(cudaErrorInvalidValue);
  }
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  int status = 0;
  bool taken = false;
  const int launched = dispatch(dtype, [&](auto t) {
    using T = decltype(t);
    if (k % kPer<T> != 0 || !aligned16(x) || !aligned16(w)) return;
    taken = true;
    status = dispatch(y_dtype, [&](auto ty) {
      using Ty = decltype(ty);
      const int sp = split ? split : std::min(choose_split(k / kPer<T>), kWarps / 2);
      launch_vector<T, Ty, true>(static_cast<const T*>(x), static_cast<const T*>(w), bias, static_cast<Ty*>(y),
                                 static_cast<int>(m), n, k, sp, s);
    });
  });
  if (launched == 0 && !taken) return kGemvNotTaken;
  return status ? status : launched;
}

}  // namespace aph::ops::kernels
