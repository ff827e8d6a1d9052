// Attention over a paged KV cache (PagedAttention), CPU and CUDA.
// Cache layout per layer: K and V each [num_blocks, block_size, num_kv_heads, head_dim].
#pragma once

#include <cstdint>

#include "aphrodite/plugin.h"

namespace aph {
class ThreadPool;
}

namespace aph::attention {

struct KvLayout {
  int32_t num_blocks = 0;
  int32_t block_size = 16;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  aph_dtype dtype = APH_DTYPE_F16;  // F32 (CPU), F16, BF16, F8_E4M3, F8_E5M2
};

// All pointers live on `device` (host memory when APH_DEVICE_CPU).
// CUDA only: RoPE done by the KV write (one kernel a layer fewer than a
// separate rope). When inv_freq is set, q, k and v are this step's
// projections before rotation, rows of q_stride / k_stride / v_stride
// elements; the write stores rotated k (and v) into the cache and rotated q
// into q_rot [n_tokens, num_heads, head_dim], which the attention reads. The
// rotation is the ops rope_qkv's (core/ops/ops.hpp), rounded to the act
// dtype before the cache conversion, so the cache holds what rope_qkv + the
// plain write would store.
struct FusedRope {
  const float* inv_freq = nullptr;      // [rotary_dim / 2], scaling applied
  const int32_t* positions = nullptr;   // [n_tokens]
  int32_t rotary_dim = 0;               // even, <= head_dim; the rest passes through
  bool interleaved = false;             // adjacent pairs (GGUF) or NEOX halves (HF)
  float mscale = 1.0f;
  int64_t q_stride = 0, k_stride = 0, v_stride = 0;
  void* q_rot = nullptr;
};

struct PagedAttentionArgs {
  int32_t device = APH_DEVICE_CPU;
  aph_dtype act_dtype = APH_DTYPE_F32;  // q, k, v, out
  const void* q = nullptr;    // [n_tokens, num_heads, head_dim]
  const void* k = nullptr;    // [n_tokens, num_kv_heads, head_dim] new keys (already RoPE'd)
  const void* v = nullptr;    // [n_tokens, num_kv_heads, head_dim]
  void* out = nullptr;        // [n_tokens, num_heads, head_dim]
  void* k_cache = nullptr;
  void* v_cache = nullptr;
  KvLayout layout;
  float k_scale = 1.0f;       // fp8 KV: stored = value / scale
  float v_scale = 1.0f;
  int32_t num_heads = 0;
  int32_t n_tokens = 0;
  int32_t n_seqs = 0;
  const int32_t* query_start = nullptr;   // [n_seqs + 1]
  const int32_t* context_lens = nullptr;  // [n_seqs], KV length including this step's tokens
  const int32_t* block_tables = nullptr;  // [n_seqs, max_blocks_per_seq]
  int32_t max_blocks_per_seq = 0;
  const int64_t* slot_mapping = nullptr;  // [n_tokens]
  int32_t max_query_len = 0;
  int32_t max_context_len = 0;
  // Every sequence's context is at most kDecodeClusterContext tokens
  // (split_plan.hpp), and stays so for as long as these arguments are used
  // (a graph captured with it is replayed only for such batches): CUDA decode
  // of a lone sequence then merges its splits through thread block clusters
  // (split_plan.hpp's decode_uses_clusters).
  bool short_contexts = false;
  float softmax_scale = 0;                // usually 1/sqrt(head_dim)
  void* stream = nullptr;                 // cudaStream_t
  // Scratch for split-K decode on CUDA (bytes from paged_attention_workspace_bytes).
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  FusedRope rope;  // CUDA: optional (rope.inv_freq set)
  // CUDA: this step's k and v are already in their cache slots and q is
  // already rotated (a quant plugin's q/k/v matvec stored them: see
  // aph_rope_kv_store in aphrodite/quant.h), so no KV write runs. k, v and
  // slot_mapping are then not read; rope must be unset. A split decode then
  // needs split_counters (nothing else would zero its counters).
  bool kv_written = false;
  // CUDA, optional: the split decode's arrival counters, at least n_seqs x
  // num_heads of them, zero before the first call (cudaMemset) and kept so:
  // each head's last split resets its own. Without them the counters sit in
  // the workspace, where another shape's partials may have been, and the
  // KV write zeroes them every call.
  int32_t* split_counters = nullptr;
  int64_t split_counter_slots = 0;
  // CPU: the threads to run on (the runner's, sized by engine.cpu_threads);
  // nullptr = ThreadPool::shared().
  ThreadPool* cpu_pool = nullptr;
};

// Writes this step's k/v into their cache slots, then computes causal
// attention: query token i of sequence s sits at position
// context_lens[s] - q_len(s) + i and sees cache positions [0, that position].
// Throws aph::Error on unsupported head sizes or dtypes.
//
// Supported: head_dim 64, 80, 96, 128, 256; num_heads a multiple of
// num_kv_heads (GQA/MQA). CPU: act F32, KV F32/F16/BF16/F8. CUDA (sm_80+):
// act F16/BF16, KV F16/BF16/F8 in any combination. fp8 scales apply only to
// fp8 caches (stored = fp8(value / scale), saturating to the largest finite).
// A slot_mapping entry < 0 is a padding token: nothing is stored. On the CPU,
// slots and block tables are range-checked (aph::Error naming the entry); on
// CUDA they live on the device, where out-of-range slots are skipped.
// max_query_len must be at least every sequence's q_len (it sizes the CUDA
// prefill grid); sequences with q_len == 1 take the split-K decode kernel,
// the others the tensor-core prefill kernel, within one call.
//
// CUDA graphs: the call makes no allocation and no host synchronization. The
// decode split count is planned from max_context_len on the host, but each
// split's range comes from context_lens on the device, so a graph captured at
// one max_context_len stays correct as contexts grow. A workspace smaller
// than paged_attention_workspace_bytes only reduces the number of splits;
// calls that may run concurrently (other streams) need their own workspace.
void paged_attention(const PagedAttentionArgs& args);
// Workspace that covers the decode plan of any batch up to max_seqs sequences
// at contexts up to max_context_len (0 when no split would ever be needed).
size_t paged_attention_workspace_bytes(int32_t max_seqs, int32_t num_heads, int32_t head_dim,
                                       int32_t max_context_len);

}  // namespace aph::attention
