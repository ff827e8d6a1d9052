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

#include "core/common/cuda_pdl.cuh"
#include "plugins/quant-gguf/cuda/device_math.cuh"
#include "plugins/quant-gguf/cuda/kernels.hpp"

namespace aph::gguf::cuda {

// f(i, x[i]) for the 32 values of x (16-byte aligned is faster), in order.
template <typename T, typename F>
__device__ __forceinline__ void each_of_block32(const T* x, F&& f) {
  static_assert(sizeof(T) == 2, "F16 or BF16 activations");
  if (reinterpret_cast<uintptr_t>(x) % 16 == 0) {
    const uint4* src = reinterpret_cast<const uint4*>(x);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint4 u = src[i];
      const T* h = reinterpret_cast<const T*>(&u);
#pragma unroll
      for (int j = 0; j < 8; ++j) f(8 * i + j, to_float(h[j]));
    }
  } else {  // a view into a row (tests make one): element loads
#pragma unroll
    for (int i = 0; i < 32; ++i) f(i, to_float(x[i]));
  }
}

// x: 32 values, or with `up` the 32 gate values of silu(gate) * up, each
// product rounded to T as the core's silu_mul stores it; q: 32 codes,
// 16-byte aligned; d: one float; s: two floats.
template <typename T>
__device__ __forceinline__ void quantize_block32(const T* x, const T* up, int8_t* q, float* d, float* s) {
  float v[32];
  each_of_block32(x, [&](int i, float g) { v[i] = g; });
  if (up != nullptr)  // 16 bytes of up at a time: no second array of 32 live
    each_of_block32(up, [&](int i, float u) { v[i] = to_float(from_float<T>(v[i] / (1.0f + __expf(-v[i])) * u)); });
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

// This thread's share of the row's blocks. Not inlined: its 32 values in
// flight would count against the registers of the matvec loop that follows
// (Q6_K's spilled), while a call leaves nothing of the loop live.
template <typename T>
__device__ __noinline__ void quantize_blocks_of_row(const T* x, const T* up, int64_t k, SmemX sx) {
  for (int64_t b = threadIdx.x; b < k / 32; b += blockDim.x)
    quantize_block32(x + 32 * b, up ? up + 32 * b : nullptr, sx.q + 32 * b, sx.d + b, sx.s + 2 * b);
}

// Every thread of the CTA takes part (it ends with a barrier). up: as for
// quantize_block32.
template <typename T>
__device__ __forceinline__ SmemX quantize_row_to_smem(const T* x, const T* up, int64_t k, uint8_t* smem) {
  const SmemX sx{reinterpret_cast<int8_t*>(smem), reinterpret_cast<float*>(smem + smem_x_d_offset(k)),
                 reinterpret_cast<float*>(smem + smem_x_s_offset(k))};
  quantize_blocks_of_row(x, up, k, sx);
  __syncthreads();
  return sx;
}

// The quantized x a matvec kernel reads, once its producer has finished:
// the quantization kernel's copy, or (kRaw) the CTA's own in shared memory,
// of the k elements of x.raw (silu(x.raw) * x.up with up). A raw grid is one
// wave, every CTA placed before the trigger completes, so it lets the next
// kernel launch at once: CTAs of it parked early delay none of this grid's.
struct XCodes {
  const int8_t* q;
  const float* d;
  const float* s;
};
template <bool kRaw, typename T>
__device__ __forceinline__ XCodes matvec_x(const MatvecX& x, int64_t k) {
  cuda_pdl::wait_for_producer();
  if constexpr (kRaw) {
    cuda_pdl::allow_dependents();
    extern __shared__ __align__(16) uint8_t smem[];
    const SmemX sx = quantize_row_to_smem(static_cast<const T*>(x.raw), static_cast<const T*>(x.up), k, smem);
    return XCodes{sx.q, sx.d, sx.s};
  } else {
    return XCodes{x.q, x.d, x.s};
  }
}

}  // namespace aph::gguf::cuda
