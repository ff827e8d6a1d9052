// CUDA kernels of the model ops. Math in fp32, storage in the activation
// dtype; every launch goes on the caller's stream.
#include <algorithm>

#include <cuda_runtime.h>

#include "core/common/cuda_pdl.cuh"
#include "core/common/rope_pair.cuh"
#include "core/ops/cuda_math.cuh"
#include "core/ops/kernels.hpp"

namespace aph::ops::kernels {

namespace {

cudaStream_t S(void* s) { return static_cast<cudaStream_t>(s); }

template <typename Tin, typename Tout>
__global__ void embedding_kernel(const Tin* table, const int32_t* ids, int64_t vocab, int64_t h, Tout* out) {
  const int64_t row = blockIdx.x;
  const int32_t id = ids[row];
  const bool valid = id >= 0 && id < vocab;
  for (int64_t j = threadIdx.x; j < h; j += blockDim.x) {
    out[row * h + j] = from_f<Tout>(valid ? to_f(table[static_cast<int64_t>(id) * h + j]) : 0.0f);
  }
}

// Rows of up to kNormRegs * blockDim.x elements (h <= 8192 with 1024 threads)
// stay in registers: every load of a row is issued before any store, so the
// loads overlap and nothing is read twice. A row of 4096 took 5.8 us as a
// load-store loop (each store could alias the next load); longer rows loop.
constexpr int kNormRegs = 8;

// o[j] = v * w / rms for a register-held row, ss the thread's sum of squares.
template <typename T>
__device__ __forceinline__ void store_normed(const float (&v)[kNormRegs], const float (&wv)[kNormRegs], float ss,
                                             float eps, int64_t h, T* o) {
  const float inv = rsqrtf(block_sum(ss) / static_cast<float>(h) + eps);
#pragma unroll
  for (int u = 0; u < kNormRegs; ++u) {
    const int64_t j = threadIdx.x + static_cast<int64_t>(u) * blockDim.x;
    if (j < h) o[j] = from_f<T>(v[u] * inv * wv[u]);
  }
}

template <typename T>
__global__ void rms_norm_kernel(const T* x, const float* w, float eps, int64_t h, T* out) {
  cuda_pdl::allow_dependents();  // a matvec reads this output next
  cuda_pdl::wait_for_producer();
  const T* xr = x + blockIdx.x * h;
  T* o = out + blockIdx.x * h;
  if (h <= kNormRegs * static_cast<int64_t>(blockDim.x)) {
    float v[kNormRegs], wv[kNormRegs];
    float ss = 0;
#pragma unroll
    for (int u = 0; u < kNormRegs; ++u) {
      const int64_t j = threadIdx.x + static_cast<int64_t>(u) * blockDim.x;
      v[u] = j < h ? to_f(xr[j]) : 0.0f;
      wv[u] = j < h ? w[j] : 0.0f;
    }
#pragma unroll
    for (int u = 0; u < kNormRegs; ++u) ss += v[u] * v[u];
    store_normed(v, wv, ss, eps, h, o);
    return;
  }
  float ss = 0;
  for (int64_t j = threadIdx.x; j < h; j += blockDim.x) {
    float v = to_f(xr[j]);
    ss += v * v;
  }
  const float inv = rsqrtf(block_sum(ss) / static_cast<float>(h) + eps);
  for (int64_t j = threadIdx.x; j < h; j += blockDim.x) o[j] = from_f<T>(to_f(xr[j]) * inv * w[j]);
}

template <typename T>
__global__ void add_rms_norm_kernel(const T* residual, const T* delta, const float* w, float eps, int64_t h, T* out,
                                    T* residual_out) {
  cuda_pdl::allow_dependents();
  cuda_pdl::wait_for_producer();
  // r and r_out may be one row (in place): each element is read before its
  // own thread stores it.
  const T* r = residual + blockIdx.x * h;
  T* r_out = residual_out + blockIdx.x * h;
  const T* d = delta + blockIdx.x * h;
  T* o = out + blockIdx.x * h;
  if (h <= kNormRegs * static_cast<int64_t>(blockDim.x)) {
    float v[kNormRegs], dv[kNormRegs], wv[kNormRegs];
#pragma unroll
    for (int u = 0; u < kNormRegs; ++u) {
      const int64_t j = threadIdx.x + static_cast<int64_t>(u) * blockDim.x;
      v[u] = j < h ? to_f(r[j]) : 0.0f;
      dv[u] = j < h ? to_f(d[j]) : 0.0f;
      wv[u] = j < h ? w[j] : 0.0f;
    }
    float ss = 0;
#pragma unroll
    for (int u = 0; u < kNormRegs; ++u) {
      // Round the sum to the storage type first, as the reference model does.
      const T s = from_f<T>(v[u] + dv[u]);
      v[u] = to_f(s);
      ss += v[u] * v[u];
      const int64_t j = threadIdx.x + static_cast<int64_t>(u) * blockDim.x;
      if (j < h) r_out[j] = s;
    }
    store_normed(v, wv, ss, eps, h, o);
    return;
  }
  float ss = 0;
  for (int64_t j = threadIdx.x; j < h; j += blockDim.x) {
    // Round the sum to the storage type first, as the reference model does.
    T s = from_f<T>(to_f(r[j]) + to_f(d[j]));
    r_out[j] = s;
    float v = to_f(s);
    ss += v * v;
  }
  const float inv = rsqrtf(block_sum(ss) / static_cast<float>(h) + eps);
  for (int64_t j = threadIdx.x; j < h; j += blockDim.x) o[j] = from_f<T>(to_f(r_out[j]) * inv * w[j]);
}

// Grid (token, slice): the (head, pair) items of one token are spread over
// gridDim.y blocks. One block per token left a decode step's rope on a single
// SM, 10 us of sincosf for 40 heads (H200, Llama-3-8B shape).
template <typename T>
__global__ void rope_kernel(RopeLaunch a) {
  cuda_pdl::allow_dependents();  // the KV cache write reads k and v next
  cuda_pdl::wait_for_producer();
  const int64_t t = blockIdx.x;
  const int stride = gridDim.y * blockDim.x;
  const int first = blockIdx.y * blockDim.x + threadIdx.x;
  const int half = a.rotary_dim / 2;
  const float pos = static_cast<float>(a.positions[t]);
  const int heads = a.num_heads + a.num_kv_heads;
  const T* qin = static_cast<const T*>(a.q) + t * a.q_stride;
  const T* kin = static_cast<const T*>(a.k) + t * a.k_stride;
  T* qout = static_cast<T*>(a.q_out) + t * a.num_heads * a.head_dim;
  T* kout = static_cast<T*>(a.k_out) + t * a.num_kv_heads * a.head_dim;
  // One thread per (head, pair): both elements of a pair are read before
  // either is written, so in-place use is safe.
  for (int idx = first; idx < heads * half; idx += stride) {
    const int hd = idx / half, i = idx % half;
    const T* src = hd < a.num_heads ? qin + hd * a.head_dim : kin + (hd - a.num_heads) * a.head_dim;
    T* dst = hd < a.num_heads ? qout + hd * a.head_dim : kout + (hd - a.num_heads) * a.head_dim;
    const rope::Pair pr = rope::pair(pos, a.inv_freq, i, half, a.interleaved, a.mscale);
    const float2 r = rope::rotate(pr, to_f(src[pr.a]), to_f(src[pr.b]));
    dst[pr.a] = from_f<T>(r.x);
    dst[pr.b] = from_f<T>(r.y);
  }
  const int pass = a.head_dim - a.rotary_dim;
  if (pass > 0) {
    for (int idx = first; idx < heads * pass; idx += stride) {
      const int hd = idx / pass, j = a.rotary_dim + idx % pass;
      const T* src = hd < a.num_heads ? qin + hd * a.head_dim : kin + (hd - a.num_heads) * a.head_dim;
      T* dst = hd < a.num_heads ? qout + hd * a.head_dim : kout + (hd - a.num_heads) * a.head_dim;
      dst[j] = src[j];
    }
  }
  const T* vin = static_cast<const T*>(a.v) + t * a.v_stride;
  T* vout = static_cast<T*>(a.v_out) + t * a.num_kv_heads * a.head_dim;
  if (vin != vout) {
    for (int j = first; j < a.num_kv_heads * a.head_dim; j += stride) vout[j] = vin[j];
  }
}

// kVec elements a thread at a time: 16-byte pieces when the rows allow
// (silu_mul checks), else one. The element form read 2 bytes a load: at 64
// rows of 14336 (the 8B's MLP at batch 64) it moved 5.5 MB in 5.5 us (stop
// 20's trace), about 1 TB/s.
template <typename T, int kVec>
__global__ void silu_mul_kernel(const T* gate, const T* up, int64_t in_stride, int64_t n, T* out) {
  cuda_pdl::allow_dependents();
  cuda_pdl::wait_for_producer();
  const int64_t r = blockIdx.y;
  const int64_t pieces = n / kVec;
  for (int64_t j = blockIdx.x * blockDim.x + threadIdx.x; j < pieces; j += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    if constexpr (kVec == 1) {
      out[r * n + j] = silu_times(gate[r * in_stride + j], up[r * in_stride + j]);
    } else {
      const uint4 gv = *reinterpret_cast<const uint4*>(gate + r * in_stride + j * kVec);
      const uint4 uv = *reinterpret_cast<const uint4*>(up + r * in_stride + j * kVec);
      uint4 ov;
      const T* ge = reinterpret_cast<const T*>(&gv);
      const T* ue = reinterpret_cast<const T*>(&uv);
      T* oe = reinterpret_cast<T*>(&ov);
#pragma unroll
      for (int e = 0; e < kVec; ++e) oe[e] = silu_times(ge[e], ue[e]);
      *reinterpret_cast<uint4*>(out + r * n + j * kVec) = ov;
    }
  }
}

// One block per row. Rows of whole 16-byte words (every activation row in
// practice) move as uint4: the byte loop spent 13 us on one 8 KB row, one
// dependent load at a time.
__global__ void gather_kernel(const char* __restrict__ x, const int32_t* __restrict__ idx, int64_t row_bytes,
                              char* __restrict__ out) {
  const char* src = x + static_cast<int64_t>(idx[blockIdx.x]) * row_bytes;
  char* dst = out + blockIdx.x * row_bytes;
  if (row_bytes % 16 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(out) % 16 == 0) {
    const auto* s4 = reinterpret_cast<const uint4*>(src);
    auto* d4 = reinterpret_cast<uint4*>(dst);
    for (int64_t j = threadIdx.x; j < row_bytes / 16; j += blockDim.x) d4[j] = s4[j];
    return;
  }
  for (int64_t j = threadIdx.x; j < row_bytes; j += blockDim.x) dst[j] = src[j];
}

// Launched as a dependent: after the LM head (bf16 logits to the sampler's
// fp32) its launch overlaps the head's tail instead of following its end
// (H200, real SmolLM2-135M Q4_1 decode after 512, medians of 4 interleaved
// runs: 1718.6 -> 1723.0 tok/s; the random Q4_0 1727.2 -> 1726.4, no change).
template <typename Tin, typename Tout>
__global__ void convert_kernel(const Tin* in, Tout* out, int64_t n) {
  cuda_pdl::allow_dependents();
  cuda_pdl::wait_for_producer();
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] = from_f<Tout>(to_f(in[i]));
}

template <typename T>
__global__ void add_bias_kernel(T* y, const float* bias, int64_t n, int64_t total) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = from_f<T>(to_f(y[i]) + bias[i % n]);
}

unsigned grid_for(int64_t n, int threads) {
  int64_t g = (n + threads - 1) / threads;
  return static_cast<unsigned>(g < 1 ? 1 : (g > 65535 * 8 ? 65535 * 8 : g));
}

int norm_threads(int64_t h) { return h >= 4096 ? 1024 : (h >= 1024 ? 512 : 256); }

}  // namespace

int embedding(const void* table, int table_dtype, const int32_t* ids, int64_t m, int64_t vocab, int64_t h, void* out,
              int out_dtype, void* stream) {
  if (m == 0) return 0;
  return dispatch(table_dtype, [&](auto tin) {
    using Tin = decltype(tin);
    dispatch(out_dtype, [&](auto tout) {
      using Tout = decltype(tout);
      embedding_kernel<Tin, Tout><<<static_cast<unsigned>(m), 256, 0, S(stream)>>>(
          static_cast<const Tin*>(table), ids, vocab, h, static_cast<Tout*>(out));
    });
  });
}

int rms_norm(const void* x, const float* w, float eps, int64_t m, int64_t h, void* out, int dtype, void* stream) {
  if (m == 0) return 0;
  return dispatch(dtype, [&](auto t) {
    using T = decltype(t);
    cuda_pdl::launch_dependent(rms_norm_kernel<T>, dim3(static_cast<unsigned>(m)), dim3(norm_threads(h)), 0,
                               S(stream), static_cast<const T*>(x), w, eps, h, static_cast<T*>(out));
  });
}

int add_rms_norm(const void* residual, const void* delta, const float* w, float eps, int64_t m, int64_t h, void* out,
                 void* residual_out, int dtype, void* stream) {
  if (m == 0) return 0;
  return dispatch(dtype, [&](auto t) {
    using T = decltype(t);
    cuda_pdl::launch_dependent(add_rms_norm_kernel<T>, dim3(static_cast<unsigned>(m)), dim3(norm_threads(h)), 0,
                               S(stream), static_cast<const T*>(residual), static_cast<const T*>(delta), w, eps, h,
                               static_cast<T*>(out), static_cast<T*>(residual_out));
  });
}

int rope_qkv(const RopeLaunch& args, void* stream) {
  if (args.tokens == 0) return 0;
  return dispatch(args.dtype, [&](auto t) {
    using T = decltype(t);
    // 128 (head, pair) items a block: a decode token of 40 heads x 64 pairs
    // fills 20 blocks.
    const int items = (args.num_heads + args.num_kv_heads) * (args.rotary_dim / 2);
    const dim3 grid(static_cast<unsigned>(args.tokens), static_cast<unsigned>(std::max(1, (items + 127) / 128)));
    cuda_pdl::launch_dependent(rope_kernel<T>, grid, dim3(128), 0, S(stream), args);
  });
}

int silu_mul(const void* gate, const void* up, int64_t in_stride, int64_t m, int64_t n, void* out, int dtype,
             void* stream) {
  if (m == 0 || n == 0) return 0;
  return dispatch(dtype, [&](auto t) {
    using T = decltype(t);
    constexpr int kVec = 16 / sizeof(T);
    const bool whole = n % kVec == 0 && in_stride % kVec == 0 && reinterpret_cast<uintptr_t>(gate) % 16 == 0 &&
                       reinterpret_cast<uintptr_t>(up) % 16 == 0 && reinterpret_cast<uintptr_t>(out) % 16 == 0;
    const int64_t pieces = whole ? n / kVec : n;
    dim3 grid(static_cast<unsigned>((pieces + 255) / 256), static_cast<unsigned>(m));
    auto kernel = whole ? silu_mul_kernel<T, kVec> : silu_mul_kernel<T, 1>;
    cuda_pdl::launch_dependent(kernel, grid, dim3(256), 0, S(stream), static_cast<const T*>(gate),
                               static_cast<const T*>(up), in_stride, n, static_cast<T*>(out));
  });
}

int gather_rows(const void* x, const int32_t* idx, int64_t count, int64_t row_bytes, void* out, void* stream) {
  if (count == 0) return 0;
  gather_kernel<<<static_cast<unsigned>(count), 256, 0, S(stream)>>>(static_cast<const char*>(x), idx, row_bytes,
                                                                      static_cast<char*>(out));
  return static_cast<int>(cudaGetLastError());
}

int convert(const void* in, int in_dtype, void* out, int out_dtype, int64_t n, void* stream) {
  if (n == 0) return 0;
  return dispatch(in_dtype, [&](auto tin) {
    using Tin = decltype(tin);
    dispatch(out_dtype, [&](auto tout) {
      using Tout = decltype(tout);
      (void)cuda_pdl::launch_dependent(convert_kernel<Tin, Tout>, dim3(grid_for(n, 256)), dim3(256), 0, S(stream),
                                       static_cast<const Tin*>(in), static_cast<Tout*>(out), n);
    });
  });
}

int add_bias(void* y, const float* bias, int64_t m, int64_t n, int dtype, void* stream) {
  if (m * n == 0) return 0;
  return dispatch(dtype, [&](auto t) {
    using T = decltype(t);
    add_bias_kernel<T><<<grid_for(m * n, 256), 256, 0, S(stream)>>>(static_cast<T*>(y), bias, n, m * n);
  });
}

}  // namespace aph::ops::kernels
