// The activation side of the integer dot products: x quantized per 32
// elements to int8 codes q = round(x / d) with d = amax / 127, the scale d,
// and d * (sum of the codes) of each 16-element half (the term the weight
// offsets of Q4_1/Q5_1/K-quants multiply). The global scratch
// (quantize_act_kernel: a thread per 32-block, any alignment), the
// shared-memory copy a batch-1 matvec makes of x in every CTA
// (quantize_row_to_smem) and the RMSNorm forms (quantize_normed_row: 8
// elements a thread, four threads a block) all give bit-identical codes.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "core/common/cuda_pdl.cuh"
#include "plugins/quant-gguf/cuda/device_math.cuh"
#include "plugins/quant-gguf/cuda/kernels.hpp"

namespace aph::gguf::cuda {

// Where one quantized row of k lives: codes, then the scales, then the half
// sums. In a CTA's shared memory (smem_x_*) the sections are 16-byte aligned
// for float2 / float4 loads.
struct SmemX {
  int8_t* q;
  float* d;
  float* s;
};

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

// The 32 values v as codes q (16-byte aligned), scale d (one float) and
// scaled half sums s (two floats).
__device__ __forceinline__ void quantize_values32(const float (&v)[32], int8_t* q, float* d, float* s) {
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

// silu(g) * u rounded to T, as the core's silu_mul stores it.
template <typename T>
__device__ __forceinline__ float silu_mul_rounded(float g, float u) {
  return to_float(from_float<T>(g / (1.0f + __expf(-g)) * u));
}

// x: 32 values, or with `up` the 32 gate values of silu(gate) * up.
template <typename T>
__device__ __forceinline__ void quantize_block32(const T* x, const T* up, int8_t* q, float* d, float* s) {
  float v[32];
  each_of_block32(x, [&](int i, float g) { v[i] = g; });
  if (up != nullptr)  // 16 bytes of up at a time: no second array of 32 live
    each_of_block32(up, [&](int i, float u) { v[i] = silu_mul_rounded<T>(v[i], u); });
  quantize_values32(v, q, d, s);
}

// Eight consecutive values of a 16-byte aligned row as floats, and back.
template <typename T>
__device__ __forceinline__ void load8(const T* p, float (&v)[8]) {
  const uint4 u = *reinterpret_cast<const uint4*>(p);
  const T* h = reinterpret_cast<const T*>(&u);
#pragma unroll
  for (int j = 0; j < 8; ++j) v[j] = to_float(h[j]);
}
template <typename T>
__device__ __forceinline__ void store8(T* p, const float (&v)[8]) {
  uint4 u;
  T* h = reinterpret_cast<T*>(&u);
#pragma unroll
  for (int j = 0; j < 8; ++j) h[j] = from_float<T>(v[j]);
  *reinterpret_cast<uint4*>(p) = u;
}

// v = residual + delta over 8 values, each sum rounded to T as the core's
// add_rms_norm stores it (delta NULL: the residual alone).
template <typename T>
__device__ __forceinline__ void residual_sum8(const T* residual, const T* delta, float (&v)[8]) {
  load8(residual, v);
  if (delta == nullptr) return;
  float e[8];
  load8(delta, e);
#pragma unroll
  for (int j = 0; j < 8; ++j) v[j] = to_float(from_float<T>(v[j] + e[j]));
}

// The sum of v over the CTA, in every thread (all threads call).
__device__ __forceinline__ float cta_sum(float v) {
  __shared__ float warp_parts[32];
  v = warp_sum(v);
  __syncthreads();  // an earlier call's parts are read by now
  if (threadIdx.x % 32 == 0) warp_parts[threadIdx.x / 32] = v;
  __syncthreads();
  float total = 0.0f;
  for (unsigned w = 0; w < blockDim.x / 32; ++w) total += warp_parts[w];
  return total;
}

// Elements [8 * slot, 8 * slot + 8) of a row, quantized by this lane with
// the three lanes that hold the rest of its 32-block (lanes 4j..4j+3: slot
// and lane agree mod 4). Every lane of the warp calls; lanes with live false
// (past the row, a whole block of them) store nothing. The same codes,
// scale and half sums as quantize_values32, with 8 values a thread instead
// of 32: a row's blocks are quantized by four times as many threads.
__device__ __forceinline__ void quantize_slot8(const float (&v)[8], bool live, int64_t slot, SmemX dst) {
  float amax = 0.0f;
#pragma unroll
  for (int j = 0; j < 8; ++j) amax = fmaxf(amax, fabsf(v[j]));
  amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
  amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
  const float dd = amax / 127.0f;
  const float inv = dd > 0.0f ? 1.0f / dd : 0.0f;
  unsigned word[2] = {0u, 0u};
  int sum = 0;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const int c = __float2int_rn(v[j] * inv);
    sum += c;
    word[j / 4] |= (static_cast<unsigned>(c) & 0xFFu) << (8 * (j % 4));
  }
  sum += __shfl_xor_sync(0xffffffffu, sum, 1);  // the two slots of a 16-element half
  if (!live) return;
  *reinterpret_cast<int2*>(dst.q + 8 * slot) = make_int2(static_cast<int>(word[0]), static_cast<int>(word[1]));
  if (slot % 4 == 0) dst.d[slot / 4] = dd;
  if (slot % 2 == 0) dst.s[slot / 2] = dd * static_cast<float>(sum);
}

// The norm weights of a thread's first slot (quantize_normed_row). They do
// not depend on x, so the kernels load them before they wait for x's
// producer, not with x after it. H200, bench/run.sh's configuration,
// medians of 3 interleaved runs: the 135M Q4_1 (the raw-x matvec norms x in
// every CTA) 1712.9 tok/s against 1672.5 loaded after the wait; the 8B
// Q4_K_M (one norm kernel) 420.6 against 420.7.
struct FirstNormW {
  float4 w[2];
};
__device__ __forceinline__ FirstNormW first_norm_w(const float* w, int64_t k) {
  FirstNormW f{};
  if (threadIdx.x < k / 8) {
    f.w[0] = *reinterpret_cast<const float4*>(w + 8 * threadIdx.x);
    f.w[1] = *reinterpret_cast<const float4*>(w + 8 * threadIdx.x + 4);
  }
  return f;
}

// One row of x = RMSNorm(residual + delta) * w quantized into dst by the
// whole CTA (blockDim a multiple of 32), 8 elements a thread, in two passes
// over the row: the sum of squares, then the normed values, each rounded to
// T as the core's add_rms_norm rounds them. A thread keeps its first 8 sums
// in registers for the second pass (a row of up to 8 * blockDim elements is
// read once); later ones it reads again (from L1). With residual_out, the
// first pass also stores the sums there. residual, delta, residual_out and w
// 16-byte aligned, k a multiple of 32.
template <typename T>
__device__ __noinline__ void quantize_normed_row(const T* residual, const T* delta, const float* w, float eps,
                                                 T* residual_out, int64_t k, SmemX dst, FirstNormW first_w) {
  const int64_t slots = k / 8;
  float ss = 0.0f;
  float first[8] = {};
  for (int64_t s = threadIdx.x; s < slots; s += blockDim.x) {
    float v[8];
    residual_sum8(residual + 8 * s, delta ? delta + 8 * s : nullptr, v);
#pragma unroll
    for (int j = 0; j < 8; ++j) ss += v[j] * v[j];
    if (residual_out != nullptr) store8(residual_out + 8 * s, v);
    if (s == threadIdx.x) {
#pragma unroll
      for (int j = 0; j < 8; ++j) first[j] = v[j];
    }
  }
  const float inv = rsqrtf(cta_sum(ss) / static_cast<float>(k) + eps);
  for (int64_t base = 0; base < slots; base += blockDim.x) {  // whole warps: quantize_slot8 shuffles
    const int64_t s = base + threadIdx.x;
    const bool live = s < slots;
    float v[8] = {};
    if (live) {
      if (base == 0) {
#pragma unroll
        for (int j = 0; j < 8; ++j) v[j] = first[j];
      } else {
        residual_sum8(residual + 8 * s, delta ? delta + 8 * s : nullptr, v);
      }
      const float4 w0 = base == 0 ? first_w.w[0] : *reinterpret_cast<const float4*>(w + 8 * s);
      const float4 w1 = base == 0 ? first_w.w[1] : *reinterpret_cast<const float4*>(w + 8 * s + 4);
      const float wv[8] = {w0.x, w0.y, w0.z, w0.w, w1.x, w1.y, w1.z, w1.w};
#pragma unroll
      for (int j = 0; j < 8; ++j) v[j] = to_float(from_float<T>(v[j] * inv * wv[j]));
    }
    quantize_slot8(v, live, s, dst);
  }
}


__host__ __device__ constexpr int64_t align16(int64_t v) { return (v + 15) / 16 * 16; }
__host__ __device__ constexpr int64_t smem_x_d_offset(int64_t k) { return align16(k); }
__host__ __device__ constexpr int64_t smem_x_s_offset(int64_t k) {
  return align16(smem_x_d_offset(k) + k / 32 * 4);
}
__host__ __device__ constexpr int64_t smem_x_bytes(int64_t k) { return smem_x_s_offset(k) + k / 16 * 4; }
__device__ __forceinline__ SmemX smem_x(uint8_t* smem, int64_t k) {
  return SmemX{reinterpret_cast<int8_t*>(smem), reinterpret_cast<float*>(smem + smem_x_d_offset(k)),
               reinterpret_cast<float*>(smem + smem_x_s_offset(k))};
}

// The row's blocks quantized by the whole CTA, 8 elements a thread
// (quantize_slot8; x and up 16-byte aligned). Not inlined: values in flight
// would count against the registers of the matvec loop that follows (Q6_K's
// spilled), while a call leaves nothing of the loop live.
template <typename T>
__device__ __noinline__ void quantize_blocks_of_row(const T* x, const T* up, int64_t k, SmemX sx) {
  const int64_t slots = k / 8;
  for (int64_t base = 0; base < slots; base += blockDim.x) {  // whole warps: quantize_slot8 shuffles
    const int64_t s = base + threadIdx.x;
    const bool live = s < slots;
    float v[8] = {};
    if (live) {
      load8(x + 8 * s, v);
      if (up != nullptr) {
        float u[8];
        load8(up + 8 * s, u);
#pragma unroll
        for (int j = 0; j < 8; ++j) v[j] = silu_mul_rounded<T>(v[j], u[j]);
      }
    }
    quantize_slot8(v, live, s, sx);
  }
}

// Every thread of the CTA takes part (it ends with a barrier). up: as for
// quantize_block32, whose codes these equal.
template <typename T>
__device__ __forceinline__ SmemX quantize_row_to_smem(const T* x, const T* up, int64_t k, uint8_t* smem) {
  const SmemX sx = smem_x(smem, k);
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
  FirstNormW first_w{};
  if (kRaw && x.norm_w != nullptr) first_w = first_norm_w(x.norm_w, k);
  cuda_pdl::wait_for_producer();
  if constexpr (kRaw) {
    cuda_pdl::allow_dependents();
    extern __shared__ __align__(16) uint8_t smem[];
    if (x.norm_w != nullptr) {  // x = RMSNorm(raw + delta) * norm_w; CTA 0 stores the sum
      const SmemX sx = smem_x(smem, k);
      quantize_normed_row(static_cast<const T*>(x.raw), static_cast<const T*>(x.delta), x.norm_w, x.norm_eps,
                          blockIdx.x == 0 ? static_cast<T*>(x.residual_out) : nullptr, k, sx, first_w);
      __syncthreads();
      return XCodes{sx.q, sx.d, sx.s};
    }
    const SmemX sx = quantize_row_to_smem(static_cast<const T*>(x.raw), static_cast<const T*>(x.up), k, smem);
    return XCodes{sx.q, sx.d, sx.s};
  } else {
    return XCodes{x.q, x.d, x.s};
  }
}

}  // namespace aph::gguf::cuda
