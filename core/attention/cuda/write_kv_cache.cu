// Stores this step's K/V into the paged cache: one thread per 8 elements
// (a 16-byte load of f16/bf16 activations). Launched as a dependent
// (core/common/cuda_pdl.cuh): its launch overlaps the rope before it.
#include <type_traits>

#include "core/attention/cuda/attention_kernels.h"
#include "core/attention/cuda/kv_types.cuh"
#include "core/common/cuda_pdl.cuh"

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

template <typename ActT, typename KvT>
cudaError_t launch_typed(const PagedAttentionArgs& a, int32_t* counters, int64_t n_counters,
                         cudaStream_t stream) {
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
