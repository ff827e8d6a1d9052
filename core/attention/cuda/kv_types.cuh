// Element types of activations and the KV cache inside the kernels, and the
// conversions between them. fp8 is converted to f16 pairs in hardware on
// sm_89+ (the intrinsic falls back to software on older parts).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>
#include <type_traits>

namespace aph::attention::cuda {

struct Fp8E4M3 {};
struct Fp8E5M2 {};

template <typename T> struct KvTraits;

template <> struct KvTraits<__half> {
  static constexpr int kBytes = 2;
};
template <> struct KvTraits<__nv_bfloat16> {
  static constexpr int kBytes = 2;
};
template <> struct KvTraits<Fp8E4M3> {
  static constexpr int kBytes = 1;
  static constexpr __nv_fp8_interpretation_t kInterp = __NV_E4M3;
};
template <> struct KvTraits<Fp8E5M2> {
  static constexpr int kBytes = 1;
  static constexpr __nv_fp8_interpretation_t kInterp = __NV_E5M2;
};

template <typename T> constexpr bool kIsFp8 = KvTraits<T>::kBytes == 1;

__device__ __forceinline__ float2 half2_bits_to_float2(uint32_t bits) {
  __half2 h = *reinterpret_cast<__half2*>(&bits);
  return __half22float2(h);
}
__device__ __forceinline__ float2 bf162_bits_to_float2(uint32_t bits) {
  __nv_bfloat162 h = *reinterpret_cast<__nv_bfloat162*>(&bits);
  return __bfloat1622float2(h);
}

// Two fp8 elements as an f16 pair's bits (exact for both fp8 forms).
template <typename KvT>
__device__ __forceinline__ uint32_t fp8x2_to_half2_bits(uint16_t bits) {
  const __half2_raw raw = __nv_cvt_fp8x2_to_halfraw2(bits, KvTraits<KvT>::kInterp);
  return static_cast<uint32_t>(raw.x) | (static_cast<uint32_t>(raw.y) << 16);
}

template <typename KvT>
__device__ __forceinline__ float2 fp8x2_to_float2(uint16_t bits) {
  return half2_bits_to_float2(fp8x2_to_half2_bits<KvT>(bits));
}

// Eight cache elements (16 bytes for f16/bf16, 8 for fp8) at p, to float.
template <typename KvT>
__device__ __forceinline__ void kv8_to_float(const uint8_t* p, float* out) {
  if constexpr (kIsFp8<KvT>) {
    uint2 raw = *reinterpret_cast<const uint2*>(p);
    const uint32_t w[2] = {raw.x, raw.y};
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      float2 a = fp8x2_to_float2<KvT>(static_cast<uint16_t>(w[i] & 0xffff));
      float2 b = fp8x2_to_float2<KvT>(static_cast<uint16_t>(w[i] >> 16));
      out[4 * i + 0] = a.x;
      out[4 * i + 1] = a.y;
      out[4 * i + 2] = b.x;
      out[4 * i + 3] = b.y;
    }
  } else {
    uint4 raw = *reinterpret_cast<const uint4*>(p);
    const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      float2 f = std::is_same_v<KvT, __half> ? half2_bits_to_float2(w[i]) : bf162_bits_to_float2(w[i]);
      out[2 * i] = f.x;
      out[2 * i + 1] = f.y;
    }
  }
}

template <typename T> __device__ __forceinline__ float to_float(T x);
template <> __device__ __forceinline__ float to_float<__half>(__half x) { return __half2float(x); }
template <> __device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 x) {
  return __bfloat162float(x);
}

template <typename T> __device__ __forceinline__ T from_float(float x);
template <> __device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// Two floats packed as one 32-bit pair of T (low half = first).
template <typename T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  if constexpr (std::is_same_v<T, __half>) {
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
  } else {
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
  }
}

// One value into a cache element, rounded to the act dtype ActT first (what
// a separate rope would have left in the activations), then to the cache's
// type; fp8 stores value / scale. The KV write with RoPE and the decode that
// does its own RoPE (decode_mma.cu) store the same bytes this way.
template <typename ActT, typename KvT>
__device__ __forceinline__ void store_cache_elem(float v, uint8_t* dst, float scale) {
  const float r = to_float<ActT>(from_float<ActT>(v));
  if constexpr (kIsFp8<KvT>) {
    *dst = __nv_cvt_float_to_fp8(r / scale, __NV_SATFINITE, KvTraits<KvT>::kInterp);
  } else {
    *reinterpret_cast<KvT*>(dst) = from_float<KvT>(r);
  }
}

}  // namespace aph::attention::cuda
