// The activation side of the integer dot products: x quantized per 32
// elements to int8 codes q = round(x / d) with d = amax / 127, the scale d,
// and d * (sum of the codes) of each 16-element half (the term the weight
// offsets of Q4_1/Q5_1/K-quants multiply). One thread quantizes one 32-block,
// so the same function fills the global scratch (quantize_act_kernel) and
// the shared-memory copy a batch-1 matvec makes of x in every CTA
// (quantize_row_to_smem); both give bit-identical codes.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "plugins/quant-gguf/cuda/device_math.cuh"

namespace aph::gguf::cuda {

// 32 values from x (16-byte aligned is faster).
template <typename T>
__device__ __forceinline__ void load_block32(const T* x, float (&v)[32]) {
  static_assert(sizeof(T) == 2, "F16 or BF16 activations");
  if (reinterpret_cast<uintptr_t>(x) % 16 == 0) {
    const uint4* src = reinterpret_cast<const uint4*>(x);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint4 u = src[i];
      const T* h = reinterpret_cast<const T*>(&u);
#pragma unroll
      for (int j = 0; j < 8; ++j) v[8 * i + j] = to_float(h[j]);
    }
  } else {  // a view into a row (tests make one): element loads
#pragma unroll
    for (int i = 0; i < 32; ++i) v[i] = to_float(x[i]);
  }
}

// x: 32 values, or with `up` the 32 gate values of silu(gate) * up, each
// product rounded to T as the core's silu_mul stores it; q: 32 codes,
// 16-byte aligned; d: one float; s: two floats.
template <typename T>
__device__ __forceinline__ void quantize_block32(const T* x, const T* up, int8_t* q, float* d, float* s) {
  float v[32];
  load_block32(x, v);
  if (up != nullptr) {
    float u[32];
    load_block32(up, u);
#pragma unroll
    for (int i = 0; i < 32; ++i) v[i] = to_float(from_float<T>(v[i] / (1.0f + __expf(-v[i])) * u[i]));
  }
  float amax = 0.0f;
#pragma unroll
  for (int i = 0; i < 32; ++i) amax = fmaxf(amax, fabsf(v[i]));
  const float dd = amax / 127.0f;
  const float inv = dd > 0.0f ? 1.0f / dd : 0.0f;
  int packed[8];
  int sum[2] = {0, 0};
#pragma unroll
  for (int w = 0; w < 8; ++w) {
    unsigned word = 0;
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      const int c = __float2int_rn(v[4 * w + b] * inv);
      sum[w / 4] += c;
      word |= (static_cast<unsigned>(c) & 0xFFu) << (8 * b);
    }
    packed[w] = static_cast<int>(word);
  }
  int4* dst = reinterpret_cast<int4*>(q);
  dst[0] = make_int4(packed[0], packed[1], packed[2], packed[3]);
  dst[1] = make_int4(packed[4], packed[5], packed[6], packed[7]);
  *d = dd;
  s[0] = dd * static_cast<float>(sum[0]);
  s[1] = dd * static_cast<float>(sum[1]);
}

// Where a CTA's copy of one quantized row of k lives in shared memory: codes,
// then the scales (float2 loads), then the half sums (float4 loads), each
// section 16-byte aligned.
struct SmemX {
  int8_t* q;
  float* d;
  float* s;
};
__host__ __device__ constexpr int64_t align16(int64_t v) { return (v + 15) / 16 * 16; }
__host__ __device__ constexpr int64_t smem_x_d_offset(int64_t k) { return align16(k); }
__host__ __device__ constexpr int64_t smem_x_s_offset(int64_t k) {
  return align16(smem_x_d_offset(k) + k / 32 * 4);
}
__host__ __device__ constexpr int64_t smem_x_bytes(int64_t k) { return smem_x_s_offset(k) + k / 16 * 4; }

// Every thread of the CTA takes part (it ends with a barrier). up: as for
// quantize_block32.
template <typename T>
__device__ __forceinline__ SmemX quantize_row_to_smem(const T* x, const T* up, int64_t k, uint8_t* smem) {
  const SmemX sx{reinterpret_cast<int8_t*>(smem), reinterpret_cast<float*>(smem + smem_x_d_offset(k)),
                 reinterpret_cast<float*>(smem + smem_x_s_offset(k))};
  for (int64_t b = threadIdx.x; b < k / 32; b += blockDim.x)
    quantize_block32(x + 32 * b, up ? up + 32 * b : nullptr, sx.q + 32 * b, sx.d + b, sx.s + 2 * b);
  __syncthreads();
  return sx;
}

}  // namespace aph::gguf::cuda
