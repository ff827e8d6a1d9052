// Stores this step's K/V into the paged cache: one thread per 8 elements
// (a 16-byte load of f16/bf16 activations). Launched as a dependent
// (core/common/cuda_pdl.cuh): its launch overlaps the rope before it.
#include <algorithm>
#include <type_traits>

#include "core/attention/cuda/attention_kernels.h"
#include "core/attention/cuda/kv_types.cuh"
#include "core/common/cuda_pdl.cuh"
#include "core/common/rope_pair.cuh"

namespace aph::attention::cuda {
namespace {

template <typename KvT>
__device__ __forceinline__ void store8(const float* f, uint8_t* dst, float scale) {
  if constexpr (kIsFp8<KvT>) {
    uint8_t b[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      // Division (not a reciprocal multiply) so the bytes match the CPU's.
      b[i] = __nv_cvt_float_to_fp8(f[i] / scale, __NV_SATFINITE, KvTraits<KvT>::kInterp);
    }
    uint2 w;
    w.x = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
    w.y = b[4] | (b[5] << 8) | (b[6] << 16) | (static_cast<uint32_t>(b[7]) << 24);
    *reinterpret_cast<uint2*>(dst) = w;
  } else {
    uint4 w;
    w.x = pack2<KvT>(f[0], f[1]);
    w.y = pack2<KvT>(f[2], f[3]);
    w.z = pack2<KvT>(f[4], f[5]);
    w.w = pack2<KvT>(f[6], f[7]);
    *reinterpret_cast<uint4*>(dst) = w;
  }
}

template <typename ActT, typename KvT>
__global__ void write_kv_cache_kernel(const ActT* __restrict__ k, const ActT* __restrict__ v,
                                      uint8_t* __restrict__ k_cache, uint8_t* __restrict__ v_cache,
                                      const int64_t* __restrict__ slot_mapping, int64_t n_chunks,
                                      int32_t row_chunks, int64_t total_slots, float k_scale,
                                      float v_scale, int32_t* __restrict__ counters,
                                      int64_t n_counters) {
  cuda_pdl::allow_dependents();  // the decode kernel after it
  cuda_pdl::wait_for_producer();
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  // The decode kernel that follows on the stream counts finished splits here.
  for (int64_t j = i; j < n_counters; j += static_cast<int64_t>(gridDim.x) * blockDim.x) counters[j] = 0;
  if (i >= n_chunks) return;
  int64_t token = i / row_chunks;
  int64_t chunk = i % row_chunks;
  int64_t slot = slot_mapping[token];
  if (slot < 0 || slot >= total_slots) return;
  const size_t src = static_cast<size_t>(i) * 8;
  const size_t dst = (static_cast<size_t>(slot) * row_chunks + chunk) * 8 * KvTraits<KvT>::kBytes;
  float f[8];
  uint4 raw = *reinterpret_cast<const uint4*>(k + src);
  const uint32_t* w = reinterpret_cast<const uint32_t*>(&raw);
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    float2 x = std::is_same_v<ActT, __half> ? half2_bits_to_float2(w[j]) : bf162_bits_to_float2(w[j]);
    f[2 * j] = x.x;
    f[2 * j + 1] = x.y;
  }
  store8<KvT>(f, k_cache + dst, k_scale);
  raw = *reinterpret_cast<const uint4*>(v + src);
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    float2 x = std::is_same_v<ActT, __half> ? half2_bits_to_float2(w[j]) : bf162_bits_to_float2(w[j]);
    f[2 * j] = x.x;
    f[2 * j + 1] = x.y;
  }
  store8<KvT>(f, v_cache + dst, v_scale);
}

struct RopeWrite {
  const void* q;
  const void* k;
  const void* v;
  int64_t q_stride, k_stride, v_stride;
  void* q_rot;
  uint8_t* k_cache;
  uint8_t* v_cache;
  const int64_t* slot_mapping;
  int64_t total_slots;
  const int32_t* positions;
  const float* inv_freq;
  int32_t num_heads, num_kv_heads, head_dim, rotary_dim;
  bool interleaved;
  float mscale, k_scale, v_scale;
  int32_t* counters;
  int64_t n_counters;
};

// Grid (token, slice), like ops' rope kernel: a token's (head, pair) items
// spread over gridDim.y blocks of threads. Each thread rotates whole pairs
// (both elements read before either is written: q_rot may be q) with that
// kernel's arithmetic (core/common/rope_pair.cuh), then stores them: q rows into q_rot, k
// rows into the token's cache slot; v is copied into its slot.
template <typename ActT, typename KvT>
__global__ void rope_write_kv_kernel(RopeWrite a) {
  cuda_pdl::allow_dependents();  // the decode kernel after it
  constexpr int kB = KvTraits<KvT>::kBytes;
  const int64_t t = blockIdx.x;
  const int stride = gridDim.y * blockDim.x;
  const int first = blockIdx.y * blockDim.x + threadIdx.x;
  const int H = a.num_heads, KVH = a.num_kv_heads, HD = a.head_dim;
  const int half = a.rotary_dim / 2;
  // Slots, positions and frequencies are the step's inputs, copied before
  // its first kernel (decode reads its block table before the wait the same
  // way): this thread's first angle is computed while the q/k/v projection
  // still runs, leaving loads, rotation and stores after the wait.
  const int64_t slot = a.slot_mapping[t];
  const float pos = static_cast<float>(a.positions[t]);
  rope::Pair first_pair{};
  if (first < (H + KVH) * half) first_pair = rope::pair(pos, a.inv_freq, first % half, half, a.interleaved, a.mscale);
  cuda_pdl::wait_for_producer();
  // The decode kernel that follows on the stream counts finished splits here
  // (the previous layer's decode may still be running before the wait).
  const int64_t g = (static_cast<int64_t>(blockIdx.x) * gridDim.y + blockIdx.y) * blockDim.x + threadIdx.x;
  const int64_t threads = static_cast<int64_t>(gridDim.x) * gridDim.y * blockDim.x;
  for (int64_t j = g; j < a.n_counters; j += threads) a.counters[j] = 0;

  const bool store = slot >= 0 && slot < a.total_slots;  // padding tokens store nothing
  const ActT* qin = static_cast<const ActT*>(a.q) + t * a.q_stride;
  const ActT* kin = static_cast<const ActT*>(a.k) + t * a.k_stride;
  ActT* qout = static_cast<ActT*>(a.q_rot) + t * H * HD;
  uint8_t* kdst = a.k_cache + static_cast<size_t>(slot) * KVH * HD * kB;
  uint8_t* vdst = a.v_cache + static_cast<size_t>(slot) * KVH * HD * kB;
  // Element j of head hd (q heads first, then k heads) after rotation.
  auto put = [&](int hd, int j, float val) {
    if (hd < H) {
      qout[hd * HD + j] = from_float<ActT>(val);
    } else if (store) {
      store_cache_elem<ActT, KvT>(val, kdst + (static_cast<size_t>(hd - H) * HD + j) * kB, a.k_scale);
    }
  };
  auto src_of = [&](int hd) { return hd < H ? qin + hd * HD : kin + (hd - H) * HD; };
  for (int idx = first; idx < (H + KVH) * half; idx += stride) {
    const int hd = idx / half, i = idx % half;
    const ActT* src = src_of(hd);
    const rope::Pair pr = idx == first ? first_pair : rope::pair(pos, a.inv_freq, i, half, a.interleaved, a.mscale);
    const float2 r = rope::rotate(pr, to_float<ActT>(src[pr.a]), to_float<ActT>(src[pr.b]));
    put(hd, pr.a, r.x);
    put(hd, pr.b, r.y);
  }
  const int pass = HD - a.rotary_dim;
  for (int idx = first; idx < (H + KVH) * pass; idx += stride) {
    const int hd = idx / pass, j = a.rotary_dim + idx % pass;
    put(hd, j, to_float<ActT>(src_of(hd)[j]));
  }
  if (store) {
    const ActT* vin = static_cast<const ActT*>(a.v) + t * a.v_stride;
    for (int j = first; j < KVH * HD; j += stride) store_cache_elem<ActT, KvT>(to_float<ActT>(vin[j]), vdst + j * kB, a.v_scale);
  }
}

template <typename ActT, typename KvT>
cudaError_t launch_rope_typed(const PagedAttentionArgs& a, int32_t* counters, int64_t n_counters,
                              cudaStream_t stream) {
  const FusedRope& r = a.rope;
  RopeWrite w{};
  w.q = a.q;
  w.k = a.k;
  w.v = a.v;
  w.q_stride = r.q_stride;
  w.k_stride = r.k_stride;
  w.v_stride = r.v_stride;
  w.q_rot = r.q_rot;
  w.k_cache = static_cast<uint8_t*>(a.k_cache);
  w.v_cache = static_cast<uint8_t*>(a.v_cache);
  w.slot_mapping = a.slot_mapping;
  w.total_slots = static_cast<int64_t>(a.layout.num_blocks) * a.layout.block_size;
  w.positions = r.positions;
  w.inv_freq = r.inv_freq;
  w.num_heads = a.num_heads;
  w.num_kv_heads = a.layout.num_kv_heads;
  w.head_dim = a.layout.head_dim;
  w.rotary_dim = r.rotary_dim;
  w.interleaved = r.interleaved;
  w.mscale = r.mscale;
  w.k_scale = a.k_scale;
  w.v_scale = a.v_scale;
  w.counters = counters;
  w.n_counters = n_counters;
  // 128 (head, pair) items a block, as ops' rope: a decode token of 40 heads
  // x 64 pairs fills 20 blocks.
  const int items = (a.num_heads + a.layout.num_kv_heads) * (r.rotary_dim / 2);
  const dim3 grid(static_cast<unsigned>(a.n_tokens), static_cast<unsigned>(std::max(1, (items + 127) / 128)));
  return cuda_pdl::launch_dependent(rope_write_kv_kernel<ActT, KvT>, grid, dim3(128), 0, stream, w);
}

template <typename ActT, typename KvT>
cudaError_t launch_typed(const PagedAttentionArgs& a, int32_t* counters, int64_t n_counters,
                         cudaStream_t stream) {
  if (a.rope.inv_freq != nullptr) return launch_rope_typed<ActT, KvT>(a, counters, n_counters, stream);
  const int32_t row_chunks = a.layout.num_kv_heads * a.layout.head_dim / 8;
  const int64_t n_chunks = static_cast<int64_t>(a.n_tokens) * row_chunks;
  const int threads = 256;
  const int64_t blocks = (n_chunks + threads - 1) / threads;
  const int64_t total_slots = static_cast<int64_t>(a.layout.num_blocks) * a.layout.block_size;
  return cuda_pdl::launch_dependent(write_kv_cache_kernel<ActT, KvT>, dim3(static_cast<unsigned>(blocks)),
                                    dim3(threads), 0, stream, static_cast<const ActT*>(a.k),
                                    static_cast<const ActT*>(a.v), static_cast<uint8_t*>(a.k_cache),
                                    static_cast<uint8_t*>(a.v_cache), a.slot_mapping, n_chunks, row_chunks,
                                    total_slots, a.k_scale, a.v_scale, counters, n_counters);
}

template <typename ActT>
cudaError_t launch_act(const PagedAttentionArgs& a, int32_t* counters, int64_t n_counters,
                       cudaStream_t stream) {
  switch (a.layout.dtype) {
    case APH_DTYPE_F16: return launch_typed<ActT, __half>(a, counters, n_counters, stream);
    case APH_DTYPE_BF16: return launch_typed<ActT, __nv_bfloat16>(a, counters, n_counters, stream);
    case APH_DTYPE_F8_E4M3: return launch_typed<ActT, Fp8E4M3>(a, counters, n_counters, stream);
    case APH_DTYPE_F8_E5M2: return launch_typed<ActT, Fp8E5M2>(a, counters, n_counters, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace

cudaError_t launch_write_kv_cache(const PagedAttentionArgs& a, int32_t* counters,
                                  int64_t n_counters, cudaStream_t stream) {
  if (a.n_tokens == 0) return cudaSuccess;
  return a.act_dtype == APH_DTYPE_BF16 ? launch_act<__nv_bfloat16>(a, counters, n_counters, stream)
                                       : launch_act<__half>(a, counters, n_counters, stream);
}

}  // namespace aph::attention::cuda
