// How a decode step is partitioned (flash-decoding). Shared by the dispatcher
// and paged_attention_workspace_bytes so the workspace always fits the plan.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "core/common/env_flag.hpp"

namespace aph::attention {

// One decode CTA covers one (sequence, KV head, up to kDecodeHeadsPerCta query heads).
inline constexpr int32_t kDecodeHeadsPerCta = 8;
// The tensor-core decode (decode_mma.cu) holds 2 CTAs an SM, and fewer,
// longer splits measured faster for it: about one CTA per SM of an
// H100/H200-class part (132 SMs) against ~4 (H100, stop 35, 512 against 128:
// 8B Q4_K_M at 8k 334.9 / 343.9 tok/s, bf16 159.9 / 164.1; after 512 tokens
// and the 135M unchanged). The streaming kernel, which keeps head size 256,
// went the other way (H100, stop 36, 8B Q4_K_M at 8k, fp16 KV: 331.4 with
// 512, 313.4 with 128), so it keeps ~4 an SM. Fixed, so a plan never depends
// on which device is asked.
inline constexpr int32_t kDecodeTargetCtasTensorCores = 128;
inline constexpr int32_t kDecodeTargetCtasOther = 512;
// APH_DECODE_TARGET_CTAS overrides both (docs/CONFIG.md), for measuring.
inline int32_t decode_target_ctas(bool tensor_cores) {
  static const long forced = env_positive("APH_DECODE_TARGET_CTAS", 0, 1L << 16);
  if (forced > 0) return static_cast<int32_t>(forced);
  return tensor_cores ? kDecodeTargetCtasTensorCores : kDecodeTargetCtasOther;
}
// The most any plan asks for (workspace sizing).
inline int32_t decode_most_target_ctas() { return std::max(decode_target_ctas(true), decode_target_ctas(false)); }
// The grid's split count (a host decision at capture time, from the longest
// context) gives each split at least this many tokens: at 8k context on the
// H200 (8B Q4_K_M), 64 splits of 128 tokens gave 249.5 tok/s, 32 of 256 276.0.
inline constexpr int32_t kDecodeMinPartition = 256;
// APH_DECODE_MIN_PARTITION overrides it (docs/CONFIG.md), for measuring.
inline int32_t decode_min_partition() {
  static const auto tokens =
      static_cast<int32_t>(env_positive("APH_DECODE_MIN_PARTITION", kDecodeMinPartition, 1L << 20));
  return tokens;
}
// On the device a sequence uses only as many of the grid's splits as keep
// each at most this many tokens (one KV tile), so none is a sliver
// (decode_partition.hpp). A CTA's time is mostly
// latency (the block table, the tile copies, the arrival), not bytes: at
// ~600 tokens of context a layer's decode kernel took 17-27 us as 3 splits of
// 256 tokens and 13-19 us as splits of 64 (ncu, 8B shape).
inline constexpr int32_t kDecodeMinSplitTokens = 64;
// APH_DECODE_SPLIT_TOKENS overrides it for every decode kernel (docs/CONFIG.md),
// for measuring: a larger value means fewer, longer splits (fewer partials to
// merge, less parallelism), a smaller one more CTAs on a short context.
inline int32_t decode_split_tokens() {
  static const auto tokens = static_cast<int32_t>(
      env_positive("APH_DECODE_SPLIT_TOKENS", kDecodeMinSplitTokens, 1L << 20));
  return tokens;
}
inline constexpr int32_t kDecodeMaxSplits = 64;
// Split CTAs of one (sequence, head chunk) may run as a thread block cluster
// of up to kDecodeMaxCluster and merge through distributed shared memory.
// That pays only while a sequence's active splits fit one cluster: with long
// contexts the cluster launch measured up to 1.8x slower on the H200 (8B
// shape, ctx 8192: 46 us a layer against 26), so callers say when every
// context is short (PagedAttentionArgs::short_contexts).
inline constexpr int32_t kDecodeMaxCluster = 16;
inline constexpr int32_t kDecodeClusterContext = kDecodeMinSplitTokens * kDecodeMaxCluster;

// Whether a decode launch of n_seqs sequences of head_dim merges through
// clusters. Only a lone sequence gains: on the H200 (8B shape, ctx 576,
// graph planned for 8192, the tiled kernel) one sequence took 9.2 us with
// clusters and 10.2 without, four took 27.8 us with them and 18.1 without
// (their 32 clusters of 16 wait for room in the GPCs). With the tensor-core
// kernel (APH_DECODE_MMA=2, stop 28) only the small heads still gain: H200,
// stop 29, decode after 512, medians of 2 interleaved runs, with / without
// clusters: SmolLM2-135M (head size 64) 1807.1 / 1710.2 tok/s, Llama-3-8B
// Q4_K_M (128) 435.4 / 450.3. So clusters take head sizes up to
// kDecodeClusterMaxHeadDim (the rule itself, H100, stop 30: 8B 384.6 against
// 374.2 with clusters for every head size, the 135M unchanged).
// APH_DECODE_SHORT_CLUSTERS (docs/CONFIG.md): 1
// that rule, 0 no clusters, 2 clusters for every head size (the rule before
// stop 29; its GPU tests keep the large heads' cluster merge tested).
inline constexpr int32_t kDecodeClusterMaxHeadDim = 64;
inline int decode_short_clusters_mode() {
  static const int mode =
      static_cast<int>(std::clamp<long>(env_int("APH_DECODE_SHORT_CLUSTERS", 1), 0, 2));
  return mode;
}
inline bool decode_uses_clusters(int32_t n_seqs, bool short_contexts, int32_t head_dim) {
  if (!short_contexts || n_seqs != 1) return false;
  const int mode = decode_short_clusters_mode();
  return mode == 2 || (mode == 1 && head_dim <= kDecodeClusterMaxHeadDim);
}

inline int32_t ceil_div(int64_t a, int64_t b) { return static_cast<int32_t>((a + b - 1) / b); }

// CTAs per (sequence, split): KV heads times head chunks.
inline int32_t decode_head_ctas(int32_t num_heads, int32_t num_kv_heads) {
  int32_t group = num_heads / std::max(num_kv_heads, 1);
  return num_kv_heads * ceil_div(group, kDecodeHeadsPerCta);
}

// The split count is a host decision; each split's token range is computed on
// the device from context_lens, so a graph captured at one max_context_len
// stays correct when contexts grow (it only splits less finely).
inline int32_t decode_splits(int32_t n_seqs, int32_t head_ctas, int32_t max_context_len, int32_t target_ctas) {
  int64_t ctas = std::max<int64_t>(1, static_cast<int64_t>(n_seqs) * head_ctas);
  int32_t s = ceil_div(std::max(target_ctas, 1), ctas);
  // Past one cluster's worth, a multiple of 8, so a lone short sequence can
  // still merge its splits in a cluster (cluster_size_for needs a divisor
  // from 2 to 16): the 135M's 3 KV heads would otherwise ask for 43.
  if (s > kDecodeMaxCluster) s -= s % 8;
  s = std::min(s, ceil_div(std::max(max_context_len, 1), decode_min_partition()));
  return std::clamp(s, 1, kDecodeMaxSplits);
}

// Per (sequence, head): each split's partial out[head_dim], running max and
// sum, plus one arrival counter so the last split to finish merges the others
// (no second kernel). The counters are zeroed by the KV write of the same call.
inline size_t decode_workspace_bytes(int32_t n_seqs, int32_t num_heads, int32_t head_dim,
                                     int32_t splits) {
  if (splits <= 1) return 0;
  const size_t per_head =
      static_cast<size_t>(splits) * (head_dim + 2) * sizeof(float) + sizeof(int32_t);
  return static_cast<size_t>(n_seqs) * num_heads * per_head;
}

// The most splits a workspace of `bytes` holds (1 means no split).
inline int32_t decode_splits_that_fit(int32_t n_seqs, int32_t num_heads, int32_t head_dim,
                                      size_t bytes) {
  const size_t heads = static_cast<size_t>(std::max(n_seqs, 1)) * std::max(num_heads, 1);
  const size_t per_head = bytes / heads;
  if (per_head <= sizeof(int32_t)) return 1;
  const size_t fit = (per_head - sizeof(int32_t)) / ((head_dim + 2) * sizeof(float));
  return fit < 2 ? 1 : static_cast<int32_t>(std::min<size_t>(fit, kDecodeMaxSplits));
}

}  // namespace aph::attention
