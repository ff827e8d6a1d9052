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

// Word i of v (i known at compile time where it is unrolled).
__device__ __forceinline__ int int4_at(const int4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
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

// Q4_K and Q5_K: the factors of sub-blocks 2 * part and 2 * part + 1 (ggml's
// get_scale_min_k4) from the block's 16-byte header: d, dmin, then the scale
// bytes S[0..3], S[4..7], S[8..11]. da, db: d * scale; ma, mb: dmin * min.
struct K4Factors {
  float da, db, ma, mb;
};
__device__ __forceinline__ K4Factors k4_pair_factors(const int4& head, int part) {
  const int sh = 16 * (part & 1);
  const unsigned lo = static_cast<unsigned>(head.y) >> sh,
                 mid = static_cast<unsigned>(head.z) >> sh,
                 hi = static_cast<unsigned>(head.w) >> sh;
  unsigned sc, mn;
  if (part < 2) {
    sc = lo & 0x3F3Fu;
    mn = mid & 0x3F3Fu;
  } else {
    sc = (hi & 0x0F0Fu) | ((lo >> 2) & 0x3030u);
    mn = ((hi >> 4) & 0x0F0Fu) | ((mid >> 2) & 0x3030u);
  }
  const int bits = head.x;
  const float2 dm = __half22float2(*reinterpret_cast<const __half2*>(&bits));
  return {dm.x * static_cast<float>(sc & 0xFF), dm.x * static_cast<float>(sc >> 8),
          dm.y * static_cast<float>(mn & 0xFF), dm.y * static_cast<float>(mn >> 8)};
}

// Pulls bytes [p, p + n) into L2, one prefetch per 128-byte line spread over
// the warp's lanes (all lanes call). A matvec issues it for its first rows
// before it waits for the kernel that writes x: weights never depend on it.
__device__ __forceinline__ void prefetch_l2(const uint8_t* p, int64_t n) {
  for (int64_t off = static_cast<int64_t>(threadIdx.x % 32) * 128; off < n; off += 32 * 128)
    asm volatile("prefetch.global.L2 [%0];" ::"l"(p + off));
}

}  // namespace aph::gguf::cuda
