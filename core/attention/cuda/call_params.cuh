// What every attention kernel takes from a PagedAttentionArgs call (the
// decode kernels add their split plan, decode_common.cuh), and the host's
// dispatch from the call's head size and dtypes to a kernel's template
// arguments.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "core/attention/cuda/kv_types.cuh"
#include "core/attention/paged_attention.hpp"

namespace aph::attention::cuda {

inline constexpr float kLog2e = 1.4426950408889634f;

struct AttentionCallParams {
  const void* q;
  void* out;
  const uint8_t* k_cache;
  const uint8_t* v_cache;
  const int32_t* query_start;
  const int32_t* context_lens;
  const int32_t* block_tables;
  int32_t max_blocks_per_seq;
  int32_t num_heads;
  int32_t num_kv_heads;
  int32_t block_size;
  int32_t group;
  float qk_scale;  // softmax_scale * k_scale * log2(e): scores come out in log2 units
  float v_scale;
};

// fp8: the cache's scales apply (stored = value / scale).
inline AttentionCallParams make_call_params(const PagedAttentionArgs& a, bool fp8) {
  AttentionCallParams p{};
  p.q = a.q;
  p.out = a.out;
  p.k_cache = static_cast<const uint8_t*>(a.k_cache);
  p.v_cache = static_cast<const uint8_t*>(a.v_cache);
  p.query_start = a.query_start;
  p.context_lens = a.context_lens;
  p.block_tables = a.block_tables;
  p.max_blocks_per_seq = a.max_blocks_per_seq;
  p.num_heads = a.num_heads;
  p.num_kv_heads = a.layout.num_kv_heads;
  p.block_size = a.layout.block_size;
  p.group = a.num_heads / a.layout.num_kv_heads;
  p.qk_scale = a.softmax_scale * (fp8 ? a.k_scale : 1.0f) * kLog2e;
  p.v_scale = fp8 ? a.v_scale : 1.0f;
  return p;
}

// Calls f(std::integral_constant<int, HD>{}, ActT{}, KvT{}) for the call's
// head size, activation and cache dtypes; cudaErrorInvalidValue for others.
template <typename F>
cudaError_t dispatch_attention_types(const PagedAttentionArgs& a, F&& f) {
  auto by_head = [&](auto act, auto kv) -> cudaError_t {
    switch (a.layout.head_dim) {
      case 64: return f(std::integral_constant<int, 64>{}, act, kv);
      case 80: return f(std::integral_constant<int, 80>{}, act, kv);
      case 96: return f(std::integral_constant<int, 96>{}, act, kv);
      case 128: return f(std::integral_constant<int, 128>{}, act, kv);
      case 256: return f(std::integral_constant<int, 256>{}, act, kv);
      default: return cudaErrorInvalidValue;
    }
  };
  auto by_kv = [&](auto act) -> cudaError_t {
    switch (a.layout.dtype) {
      case APH_DTYPE_F16: return by_head(act, __half{});
      case APH_DTYPE_BF16: return by_head(act, __nv_bfloat16{});
      case APH_DTYPE_F8_E4M3: return by_head(act, Fp8E4M3{});
      case APH_DTYPE_F8_E5M2: return by_head(act, Fp8E5M2{});
      default: return cudaErrorInvalidValue;
    }
  };
  return a.act_dtype == APH_DTYPE_BF16 ? by_kv(__nv_bfloat16{}) : by_kv(__half{});
}

}  // namespace aph::attention::cuda
