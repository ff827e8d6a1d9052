// Attention over a paged KV cache (PagedAttention), CPU and CUDA.
// Cache layout per layer: K and V each [num_blocks, block_size, num_kv_heads, head_dim].
#pragma once

#include <cstdint>

#include "aphrodite/plugin.h"

namespace aph::attention {

struct KvLayout {
  int32_t num_blocks = 0;
  int32_t block_size = 16;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  aph_dtype dtype = APH_DTYPE_F16;  // F32 (CPU), F16, BF16, F8_E4M3, F8_E5M2
};

// All pointers live on `device` (host memory when APH_DEVICE_CPU).
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
  float softmax_scale = 0;                // usually 1/sqrt(head_dim)
  void* stream = nullptr;                 // cudaStream_t
  // Scratch for split-K decode on CUDA (bytes from paged_attention_workspace_bytes).
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

// Writes this step's k/v into their cache slots, then computes causal
// attention: query token i of sequence s sits at position
// context_lens[s] - q_len(s) + i and sees cache positions [0, that position].
// Throws aph::Error on unsupported head sizes or dtypes.
void paged_attention(const PagedAttentionArgs& args);
size_t paged_attention_workspace_bytes(int32_t max_seqs, int32_t num_heads, int32_t head_dim,
                                       int32_t max_context_len);

}  // namespace aph::attention
