// Helpers shared by the op kernels (kernels.cu, gemv.cu): fp32 math on
// f32/f16/bf16 storage, a block-wide sum, and the dtype dispatch of launchers.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "aphrodite/plugin.h"

namespace aph::ops::kernels {

__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ float to_f(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T from_f(float v);
template <> __device__ __forceinline__ float from_f<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_f<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// silu(g) * u as silu_mul stores it; the gated GEMV (gemv.cu) calls it too,
// so that both give the same bits.
template <typename T>
__device__ __forceinline__ T silu_times(T g, T u) {
  const float gf = to_f(g);
  return from_f<T>(gf / (1.0f + __expf(-gf)) * to_f(u));
}

// The sum of v over the block, returned to every thread. Every thread of the
// block must call it (it holds two block barriers).
__device__ __forceinline__ float block_sum(float v) {
  __shared__ float partial[32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + 31) >> 5;
  v = threadIdx.x < warps ? partial[threadIdx.x] : 0.0f;
  if (warp == 0)
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (threadIdx.x == 0) partial[0] = v;
  __syncthreads();
  float r = partial[0];
  __syncthreads();
  return r;
}

// Calls f(T{}) with T the C++ type of an aph dtype; returns the launch error
// (cudaGetLastError) or cudaErrorInvalidValue for another dtype.
template <typename F>
int dispatch(int dtype, F&& f) {
  switch (dtype) {
    case APH_DTYPE_F32: f(float{}); break;
    case APH_DTYPE_F16: f(__half{}); break;
    case APH_DTYPE_BF16: f(__nv_bfloat16{}); break;
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
  return static_cast<int>(cudaGetLastError());
}

}  // namespace aph::ops::kernels
