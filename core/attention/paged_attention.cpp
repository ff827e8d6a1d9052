// Argument checks shared by both devices, then dispatch: CPU reference or the
// CUDA kernels (cache write, prefill for q_len > 1, split-K decode for q_len == 1).
#include "core/attention/paged_attention.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/attention/attention_cpu.hpp"
#include "core/attention/split_plan.hpp"
#include "core/common/error.hpp"
#include "core/common/tensor.hpp"

#ifdef APH_HAVE_CUDA
#include "core/attention/cuda/attention_kernels.h"
#endif

namespace aph::attention {
namespace {

bool supported_head_dim(int32_t d) {
  return d == 64 || d == 80 || d == 96 || d == 128 || d == 256;
}

bool is_fp8(aph_dtype d) { return d == APH_DTYPE_F8_E4M3 || d == APH_DTYPE_F8_E5M2; }

void require(bool ok, const std::string& what) {
  if (!ok) throw invalid_argument("paged_attention: " + what);
}

void check_args(const PagedAttentionArgs& a) {
  const KvLayout& L = a.layout;
  if (!supported_head_dim(L.head_dim)) {
    throw Error(APH_ERR_UNSUPPORTED, "paged_attention: layout.head_dim " + std::to_string(L.head_dim) +
                                         " is not supported (64, 80, 96, 128, 256)");
  }
  const bool cpu = a.device == APH_DEVICE_CPU;
  if (cpu && a.act_dtype != APH_DTYPE_F32) {
    throw Error(APH_ERR_UNSUPPORTED, std::string("paged_attention: act_dtype ") +
                                         dtype_name(a.act_dtype) + " is not supported on the CPU (f32)");
  }
  if (!cpu && a.act_dtype != APH_DTYPE_F16 && a.act_dtype != APH_DTYPE_BF16) {
    throw Error(APH_ERR_UNSUPPORTED, std::string("paged_attention: act_dtype ") +
                                         dtype_name(a.act_dtype) + " is not supported on CUDA (f16, bf16)");
  }
  const bool kv_ok = L.dtype == APH_DTYPE_F16 || L.dtype == APH_DTYPE_BF16 || is_fp8(L.dtype) ||
                     (cpu && L.dtype == APH_DTYPE_F32);
  if (!kv_ok) {
    throw Error(APH_ERR_UNSUPPORTED, std::string("paged_attention: layout.dtype ") + dtype_name(L.dtype) +
                                         " is not a supported KV cache dtype on this device");
  }
  require(L.num_kv_heads > 0, "layout.num_kv_heads must be positive");
  require(a.num_heads > 0 && a.num_heads % L.num_kv_heads == 0,
          "num_heads must be a positive multiple of layout.num_kv_heads");
  require(L.block_size > 0, "layout.block_size must be positive");
  require(L.num_blocks >= 0, "layout.num_blocks must not be negative");
  require(a.n_tokens >= 0, "n_tokens must not be negative");
  require(a.n_seqs >= 0, "n_seqs must not be negative");
  require(std::isfinite(a.softmax_scale) && a.softmax_scale > 0, "softmax_scale must be positive");
  if (is_fp8(L.dtype)) {
    require(std::isfinite(a.k_scale) && a.k_scale > 0, "k_scale must be positive");
    require(std::isfinite(a.v_scale) && a.v_scale > 0, "v_scale must be positive");
  }
  if (a.kv_written) {
    require(!cpu, "kv_written (k and v stored by the projection) is CUDA-only");
    require(a.rope.inv_freq == nullptr, "kv_written and rope exclude each other: q is already rotated");
  }
  if (a.n_tokens > 0 && !a.kv_written) {
    require(a.k != nullptr && a.v != nullptr, "k and v are required");
    require(a.slot_mapping != nullptr, "slot_mapping is required");
    require(a.k_cache != nullptr && a.v_cache != nullptr, "k_cache and v_cache are required");
  }
  if (a.rope.inv_freq != nullptr) {
    require(!cpu, "rope (the KV write's rotation) is CUDA-only");
    const FusedRope& r = a.rope;
    require(r.positions != nullptr && r.q_rot != nullptr && a.q != nullptr, "rope needs positions, q and q_rot");
    require(r.rotary_dim > 0 && r.rotary_dim % 2 == 0 && r.rotary_dim <= L.head_dim,
            "rope.rotary_dim must be even and at most head_dim");
    require(r.q_stride >= static_cast<int64_t>(a.num_heads) * L.head_dim &&
                r.k_stride >= static_cast<int64_t>(L.num_kv_heads) * L.head_dim &&
                r.v_stride >= static_cast<int64_t>(L.num_kv_heads) * L.head_dim,
            "rope row strides must cover the heads");
  }
  if (a.n_seqs > 0) {
    require(a.q != nullptr && a.out != nullptr, "q and out are required");
    require(a.query_start != nullptr && a.context_lens != nullptr, "query_start and context_lens are required");
    require(a.block_tables != nullptr && a.max_blocks_per_seq > 0, "block_tables and max_blocks_per_seq are required");
    require(a.k_cache != nullptr && a.v_cache != nullptr, "k_cache and v_cache are required");
  }
}

#ifdef APH_HAVE_CUDA
void check_launch(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    throw Error(APH_ERR_DEVICE, std::string("paged_attention: ") + what + ": " + cudaGetErrorString(e));
  }
}

void run_cuda(const PagedAttentionArgs& a) {
  auto stream = static_cast<cudaStream_t>(a.stream);
  if (a.n_seqs > 0) require(a.max_query_len >= 1, "max_query_len must be at least 1");
  int32_t splits = 1;
  if (a.n_seqs > 0 && a.n_tokens > 0) {
    const int32_t head_ctas = decode_head_ctas(a.num_heads, a.layout.num_kv_heads);
    splits = decode_splits(a.n_seqs, head_ctas, a.max_context_len,
                           decode_target_ctas(cuda::decode_on_tensor_cores(a)));
    // A smaller workspace than the plan wants only costs parallelism.
    const size_t have = a.workspace == nullptr ? 0 : a.workspace_bytes;
    splits = std::min(splits, decode_splits_that_fit(a.n_seqs, a.num_heads, a.layout.head_dim, have));
  }
  // Split counters: the caller's, which every decode leaves at zero, or
  // else after the partials in the workspace, where another shape's partials
  // may have been: the KV write zeroes those (n_zero).
  int32_t* counters = nullptr;
  int64_t n_zero = 0;
  if (splits > 1) {
    const int64_t n_counters = static_cast<int64_t>(a.n_seqs) * a.num_heads;
    if (a.split_counters != nullptr && a.split_counter_slots >= n_counters) {
      counters = a.split_counters;
    } else {
      require(!a.kv_written, "kv_written with a split decode needs split_counters for " +
                                 std::to_string(n_counters) + " heads");
      n_zero = n_counters;
      const size_t partials = decode_workspace_bytes(a.n_seqs, a.num_heads, a.layout.head_dim, splits) -
                              static_cast<size_t>(n_counters) * sizeof(int32_t);
      counters = reinterpret_cast<int32_t*>(static_cast<uint8_t*>(a.workspace) + partials);
    }
  }
  const bool rope = a.rope.inv_freq != nullptr;
  if (a.n_tokens > 0 && !a.kv_written) {
    check_launch(cuda::launch_write_kv_cache(a, counters, n_zero, stream), "KV cache write");
  }
  if (a.n_seqs == 0 || a.n_tokens == 0) return;  // no token, nothing to attend for
  PagedAttentionArgs b = a;
  if (rope) b.q = a.rope.q_rot;  // the write left the rotated q there
  // Decode CTAs of sequences with q_len != 1 exit at once, and prefill CTAs
  // skip q_len == 1, so a mixed batch takes both paths in two launches.
  check_launch(cuda::launch_decode(b, splits, counters, stream), "decode attention");
  if (b.max_query_len > 1) check_launch(cuda::launch_prefill(b, stream), "prefill attention");
}
#endif

}  // namespace

void paged_attention(const PagedAttentionArgs& args) {
  check_args(args);
  if (args.device == APH_DEVICE_CPU) {
    if (args.n_tokens > 0) write_kv_cache_cpu(args);
    if (args.n_seqs > 0) attention_cpu(args);
    return;
  }
#ifdef APH_HAVE_CUDA
  run_cuda(args);
#else
  throw Error(APH_ERR_UNSUPPORTED, "paged_attention: device " + std::to_string(args.device) +
                                       " needs CUDA, and this build has none");
#endif
}

size_t paged_attention_workspace_bytes(int32_t max_seqs, int32_t num_heads, int32_t head_dim,
                                       int32_t max_context_len) {
  // The plan's largest need over every batch size, with the fewest CTAs per
  // sequence (one KV head), so any real model's plan fits.
  size_t most = 0;
  for (int32_t n = 1; n <= max_seqs; ++n) {
    int32_t splits = decode_splits(n, 1, max_context_len, decode_most_target_ctas());
    most = std::max(most, decode_workspace_bytes(n, num_heads, head_dim, splits));
  }
  return most;
}

}  // namespace aph::attention
