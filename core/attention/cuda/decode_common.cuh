// What the two decode kernels share: their parameters and the device tail
// that publishes a split's partial and lets the last split to arrive merge
// them all. decode.cu holds the tiled kernel (clusters, short contexts),
// decode_stream.cu the per-warp streaming one (long contexts, batches).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/attention/cuda/call_params.cuh"
#include "core/attention/cuda/kv_types.cuh"
#include "core/attention/decode_partition.hpp"
#include "core/attention/paged_attention.hpp"
#include "core/attention/split_plan.hpp"
#include "core/common/env_flag.hpp"

namespace aph::attention::cuda {

// The call's fields (call_params.cuh) and the split plan's.
struct DecodeParams : AttentionCallParams {
  int32_t head_chunks;
  int32_t splits;
  int32_t min_split_tokens;  // decode_active_splits' split length (decode_split_tokens())
  int32_t cluster;  // CTAs of a cluster along x (1: no cluster); divides splits
  int32_t mail_group;  // query heads a cluster's mailbox holds per member (>= any CTA's G)
  bool push_merge;     // members push their partials into the leader's mailbox
  float* ws_out;  // [seq][head][split][HD]
  float* ws_max;  // [seq][head][split]
  float* ws_sum;
  int32_t* counters;  // [seq][head CTA]: zero at the start; each head's last split resets its own
};

// Both kernels' grid: (split, KV head x head chunk of kDecodeHeadsPerCta
// query heads, sequence).
inline DecodeParams make_decode_params(const PagedAttentionArgs& a, int splits, int32_t* counters, bool fp8) {
  DecodeParams p{};
  static_cast<AttentionCallParams&>(p) = make_call_params(a, fp8);
  p.head_chunks = (p.group + kDecodeHeadsPerCta - 1) / kDecodeHeadsPerCta;
  p.splits = splits;
  p.min_split_tokens = decode_split_tokens();
  p.cluster = 1;
  if (splits > 1) {
    const size_t parts = static_cast<size_t>(a.n_seqs) * a.num_heads * splits;
    p.ws_out = static_cast<float*>(a.workspace);
    p.ws_max = p.ws_out + parts * a.layout.head_dim;
    p.ws_sum = p.ws_max + parts;
    p.counters = counters;
  }
  return p;
}

// A decode CTA's place in the grid: its sequence, KV head and first query
// head (h0; G of them, at most kG), its split, the sequence's query row and
// context, and how many of the grid's splits that context uses
// (decode_active_splits: only ctx and the launch decide, so every CTA of the
// sequence agrees). `active` is false for a CTA with nothing to do: a sequence with
// more than one query token (the prefill kernel's), or a split past eff.
// Such a CTA leaves before any barrier and never touches the arrival
// counter (zero at the start of each call) or its workspace slot (the
// merge stops at eff).
struct DecodeCta {
  int seq, kvh, G, h0, split, q_tok, ctx, eff;
  bool active;
};

template <int kG>
__device__ __forceinline__ DecodeCta locate_decode_cta(const DecodeParams& p) {
  DecodeCta c;
  c.seq = blockIdx.z;
  c.kvh = blockIdx.y / p.head_chunks;
  const int g0 = (blockIdx.y % p.head_chunks) * kDecodeHeadsPerCta;
  c.G = min(kG, p.group - g0);
  c.h0 = c.kvh * p.group + g0;
  c.split = blockIdx.x;
  c.q_tok = p.query_start[c.seq];
  const bool decoding = p.query_start[c.seq + 1] - c.q_tok == 1;
  c.ctx = decoding ? p.context_lens[c.seq] : 0;
  c.eff = decode_active_splits(c.ctx, p.splits, p.min_split_tokens);
  c.active = decoding && c.split < c.eff;
  return c;
}

// 2^x for the softmax weights (x <= 0; -inf gives 0), results under 2^-126
// flushed to zero: exp2f's care for denormal results costs a compare and two
// multiplies around every MUFU.EX2.
__device__ __forceinline__ float exp2_weight(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// The tail of a split CTA whose normalized output for its G query heads
// (h0 ...) already sits in workspace slot `slot`: it publishes its max and
// sum (m_s, l_s: shared, G each), counts its arrival, and the last of the
// n_slots arrivals (threadFenceReduction pattern) merges every slot into the
// output. w_s (kDecodeHeadsPerCta x kDecodeMaxSplits floats) and inv_s
// (kDecodeHeadsPerCta) are free shared scratch. Every thread of the CTA
// calls it.
template <int HD, typename ActT, int kThreads>
__device__ __forceinline__ void publish_and_merge(const DecodeParams& p, int seq, int q_tok, int h0, int G, int slot,
                                                  int n_slots, const float* m_s, const float* l_s, float* w_s,
                                                  float* inv_s) {
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  constexpr int kWarps = kThreads / 32;
  if (tid < G) {
    const size_t idx = (static_cast<size_t>(seq) * p.num_heads + h0 + tid) * p.splits + slot;
    p.ws_max[idx] = m_s[tid];
    p.ws_sum[idx] = l_s[tid];
  }
  __shared__ int is_last;
  __threadfence();
  __syncthreads();
  if (tid == 0) {
    int32_t* const counter = p.counters + static_cast<size_t>(seq) * gridDim.y + blockIdx.y;
    const int prev = atomicAdd(counter, 1);
    is_last = prev == n_slots - 1;
    // Every split of this head has arrived: the counter is free for the
    // next call, which may find it in a buffer nobody zeroes
    // (PagedAttentionArgs::split_counters).
    if (is_last) *counter = 0;
  }
  __syncthreads();
  if (!is_last) return;
  __threadfence();

  // Weights sum_i * 2^(max_i - max) per (head, split) over the active slots
  // only (slots >= n_slots hold stale data from earlier calls); __ldcg reads
  // L2, where the other CTAs' partials are, never a stale L1 line. A lane
  // loads its slots' (max, sum) once: kDecodeMaxSplits is two a lane.
  static_assert(kDecodeMaxSplits <= 64, "two slots a lane");
  for (int g = warp; g < G; g += kWarps) {
    const size_t base = (static_cast<size_t>(seq) * p.num_heads + h0 + g) * p.splits;
    float ms[2], ls[2];
    float mx = -INFINITY;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int i = lane + 32 * r;
      ls[r] = i < n_slots ? __ldcg(p.ws_sum + base + i) : 0.0f;
      ms[r] = i < n_slots ? __ldcg(p.ws_max + base + i) : -INFINITY;
      if (ls[r] > 0.0f) mx = fmaxf(mx, ms[r]);
    }
    mx = warp_max(mx);
    float total = 0.0f;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int i = lane + 32 * r;
      const float w = ls[r] > 0.0f ? ls[r] * exp2f(ms[r] - mx) : 0.0f;
      if (i < n_slots) w_s[g * kDecodeMaxSplits + i] = w;
      total += w;
    }
    total = warp_sum(total);
    if (lane == 0) inv_s[g] = total > 0.0f ? 1.0f / total : 0.0f;
  }
  __syncthreads();
  // Weighted sum of the partials. Each load is an L2 round trip, so a
  // thread takes 4 consecutive dims of a head as float4 loads and issues
  // kBatch splits of them into registers before any FMA uses them: 128
  // threads cover a Llama group (4 heads x 128 dims) in one pass, and 32
  // splits (8k context) are 2 round trips, not the 32 of scalar loads. Loading
  // unconditionally is safe: every active slot holds finite partials (0 when
  // its range was empty, with weight 0). Only the tail of the last batch is
  // predicated off, so no slot >= n_slots is read.
  constexpr int kBatch = 16;
  constexpr int kQuads = HD / 4;
  ActT* out = static_cast<ActT*>(p.out);
  for (int i = tid; i < G * kQuads; i += kThreads) {
    const int g = i / kQuads, d4 = i % kQuads;
    const size_t base = (static_cast<size_t>(seq) * p.num_heads + h0 + g) * p.splits;
    const float4* src = reinterpret_cast<const float4*>(p.ws_out + base * HD) + d4;
    const float* w_g = w_s + g * kDecodeMaxSplits;
    float4 o = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int sp = 0; sp < n_slots; sp += kBatch) {
      float4 v[kBatch];
#pragma unroll
      for (int j = 0; j < kBatch; ++j)
        v[j] = sp + j < n_slots ? __ldcg(src + static_cast<size_t>(sp + j) * kQuads) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        const float w = sp + j < n_slots ? w_g[sp + j] : 0.0f;
        o.x = fmaf(w, v[j].x, o.x);
        o.y = fmaf(w, v[j].y, o.y);
        o.z = fmaf(w, v[j].z, o.z);
        o.w = fmaf(w, v[j].w, o.w);
      }
    }
    const float inv = inv_s[g];
    ActT* dst = out + (static_cast<size_t>(q_tok) * p.num_heads + h0 + g) * HD + 4 * d4;
    dst[0] = from_float<ActT>(o.x * inv);
    dst[1] = from_float<ActT>(o.y * inv);
    dst[2] = from_float<ActT>(o.z * inv);
    dst[3] = from_float<ActT>(o.w * inv);
  }
}

}  // namespace aph::attention::cuda
