// Small device helpers shared by the GGUF kernels: F16/BF16 conversion, warp
// sums, and the weight load that streams past L1.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace aph::gguf::cuda {

__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ __half from_float<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

__device__ __forceinline__ uint32_t bits_of(__half v) { return __half_as_ushort(v); }
__device__ __forceinline__ uint32_t bits_of(__nv_bfloat16 v) { return __bfloat16_as_ushort(v); }

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Weights are read once per matvec: keep them out of L1, which holds the
// activations every warp of the SM re-reads, and let L2 fetch 256 bytes
// (each warp reads whole consecutive blocks). p must be 16-byte aligned.
__device__ __forceinline__ int4 ld_weights(const void* p) {
  int4 v;
  asm("ld.global.nc.L1::no_allocate.L2::256B.v4.s32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

// Pulls bytes [p, p + n) into L2, one prefetch per 128-byte line spread over
// the warp's lanes (all lanes call). A matvec issues it for its first rows
// before it waits for the kernel that writes x: weights never depend on it.
__device__ __forceinline__ void prefetch_l2(const uint8_t* p, int64_t n) {
  for (int64_t off = static_cast<int64_t>(threadIdx.x % 32) * 128; off < n; off += 32 * 128)
    asm volatile("prefetch.global.L2 [%0];" ::"l"(p + off));
}

}  // namespace aph::gguf::cuda
