// Split-K decode in which every warp streams its own tokens.
//
// The tiled kernel (decode.cu) has the whole CTA walk 64-token tiles with
// four CTA barriers a tile; at batch 1 that chain of barriers and dependent
// shared-memory loads, not the bytes, set its time: at 8k context a Llama-3-8B
// layer's attention took 27.5 us for 33.5 MB of KV (1.2 TB/s, stop 20's
// trace). Here a warp takes every kWarps-th group of kTokens consecutive
// tokens of its CTA's split; lane (lane group, chunk) owns 8 dimensions of
// kPerLane tokens' K and V rows. The lane copies its own chunks into its own
// slots of a per-warp ring of kStages steps with cp.async, so kStages - 1
// steps stay in flight while it computes, and since no lane reads another's
// slot (with fp8, its pair's: a warp barrier) the loop has no CTA barrier: a
// step is a partial q.k over 8 dims per token, a shuffle sum over the
// token's lanes, and one online softmax update of the lane's 8 output dims
// per query head for its kPerLane tokens. The warps'
// (max, sum, output) meet once, in shared memory, at the end; with several
// splits the last one to arrive merges the workspace as the tiled kernel
// does (decode_common.cuh).
//
// Launched as a programmatic dependent of the KV write (core/common/
// cuda_pdl.cuh): the block table and every cached row but this step's
// (ctx - 1) were complete before the step began, so the first kStages - 1
// steps are issued before the wait, less the newest row, which its lane
// copies after the wait.
//
// A short sequence at small batch (decode_uses_clusters) runs its splits as
// a thread block cluster where the GPU places one, and they merge there as
// decode.cu's push merge does: each member st.async-stores its normalized
// output, max and sum into a mailbox in the leader's shared memory, counted
// by the leader's transaction barrier, and leaves; the leader weighs and
// adds them. (The workspace merge costs a global round trip and a second
// arrival; stop 21's clock stamps put decode.cu's cluster merge, before the
// push form, at a third of its CTA's time.)

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "core/attention/cuda/attention_kernels.h"
#include "core/attention/cuda/decode_cluster.cuh"
#include "core/attention/cuda/decode_common.cuh"
#include "core/attention/cuda/decode_tail.cuh"
#include "core/attention/cuda/kv_types.cuh"
#include "core/attention/decode_partition.hpp"
#include "core/attention/split_plan.hpp"
#include "core/common/cuda_async_copy.cuh"
#include "core/common/cuda_pdl.cuh"
#include "core/common/env_flag.hpp"

namespace aph::attention::cuda {
namespace {

using cuda_async::cp_async_16;
using cuda_async::cp_async_commit;
using cuda_async::cp_async_wait;

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kStages = 4;  // a warp's ring: steps of KV in flight, plus the one in use

template <int HD, typename KvT, int kG>
struct StreamShape {
  static constexpr int kChunks = HD / 8;  // lanes holding a token's row, 8 dims each
  static constexpr int kLanes = kChunks <= 8 ? 8 : kChunks <= 16 ? 16 : 32;  // lanes a token
  static constexpr int kGroups = 32 / kLanes;                                // lane groups a warp
  // Tokens a lane group takes a step: one softmax rescale of the lane's
  // accumulators for both (the rescale and its exp2 were a third of a step's
  // instructions with one; sm_90 SASS).
  static constexpr int kPerLane = 2;
  static constexpr int kTokens = kGroups * kPerLane;  // tokens a warp step
  static constexpr int kChunkBytes = 8 * KvTraits<KvT>::kBytes;
  // Every copy is 16 bytes, cp.async.cg or ld.global.cg: L2 only, so no copy
  // made before the producer wait can leave a stale L1 line for one after
  // it. With fp8 (8-byte chunks) an even lane copies its odd neighbour's
  // chunk too.
  static constexpr int kLanesPerCopy = 16 / kChunkBytes;
  static constexpr int kRowBytes = HD * KvTraits<KvT>::kBytes;
  static constexpr int kTokenBytes = 2 * 32 * kChunkBytes;  // a token of each group: K then V, a slot a lane
  static constexpr int kStepBytes = kPerLane * kTokenBytes;
  static constexpr int kRingBytes = kWarps * kStages * kStepBytes;
  static constexpr int kRedBytes = kWarps * kG * HD * 4;  // the warps' outputs at the end
  static constexpr int kMergeBytes = kDecodeHeadsPerCta * kDecodeMaxSplits * 4;  // publish_and_merge's weights
  static constexpr int kSmemBytes = std::max({kRingBytes, kRedBytes, kMergeBytes});
};


// kG: query heads a CTA holds in registers (4 for groups of up to 4, else
// kDecodeHeadsPerCta); the grid's head chunks are always kDecodeHeadsPerCta.
// With 4, two CTAs an SM (at most 128 registers: ptxas gave some head sizes
// 134-146 unbounded); with 8 (about 220 registers) one.
template <int HD, typename ActT, typename KvT, int kG>
__global__ void __launch_bounds__(kThreads, kG <= 4 ? 2 : 1) decode_stream_kernel(DecodeParams p) {
  cuda_pdl::allow_dependents();  // the output projection can launch
  using S = StreamShape<HD, KvT, kG>;
  extern __shared__ __align__(16) uint8_t smem[];
  __shared__ float warp_m[kWarps][kG], warp_l[kWarps][kG];

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int grp = lane / S::kLanes, c = lane % S::kLanes;
  const bool has_chunk = c < S::kChunks;  // head sizes 80 and 96 leave lanes idle
  const bool copies = has_chunk && c % S::kLanesPerCopy == 0;
  const DecodeCta cta = locate_decode_cta<kG>(p);
  if (!cta.active) return;
  const int G = cta.G, h0 = cta.h0, ctx = cta.ctx;
  const bool direct = cta.eff == 1;  // the lone split writes the output
  const bool clustered = APH_DECODE_CLUSTERS && p.cluster > 1 && !direct;
  __shared__ uint64_t mail_arrived;  // a cluster leader's: its members' stores count it down
  uint64_t* const mail_arrived_ptr = &mail_arrived;
  start_cluster_merge(mail_arrived_ptr, clustered);
  WarpDeal deal;
  deal.range = decode_split_range(ctx, cta.eff, cta.split);
  deal.tokens = S::kTokens;
  deal.warps = kWarps;
  const int begin = deal.range.begin, end = deal.range.end;
  const int steps = deal.steps(warp);
  // Token t (< kPerLane) of this lane's group in a step: the deal's lane
  // group t * kGroups + grp.
  auto token_of = [&](int step, int t) { return deal.token(warp, step, t * S::kGroups + grp); };

  const int32_t* table = p.block_tables + static_cast<size_t>(cta.seq) * p.max_blocks_per_seq;
  const size_t slot_stride = static_cast<size_t>(p.num_kv_heads) * S::kRowBytes;
  const size_t lane_off = static_cast<size_t>(cta.kvh) * S::kRowBytes + c * S::kChunkBytes;
  auto row_offset = [&](int32_t block_index, int32_t in_block) {
    const int64_t blk = table[block_index];
    return (static_cast<size_t>(blk) * p.block_size + in_block) * slot_stride + lane_off;
  };
  uint8_t* ring = smem + warp * kStages * S::kStepBytes + lane * S::kChunkBytes;
  auto k_slot = [&](int step, int t) { return ring + (step % kStages) * S::kStepBytes + t * S::kTokenBytes; };
  constexpr int kVOffset = 32 * S::kChunkBytes;
  const int fresh = ctx - 1;
  // Where the next step to issue finds each of this lane's tokens in the
  // block table, advanced by a step's stride: the steps are issued in order,
  // and a division by the block size for every token was a sixth of a
  // step's instructions (sm_90 SASS).
  constexpr int kStride = kWarps * S::kTokens;
  const int stride_blocks = kStride / p.block_size, stride_rest = kStride % p.block_size;
  BlockCursor cursor[S::kPerLane];
#pragma unroll
  for (int t = 0; t < S::kPerLane; ++t) cursor[t] = block_cursor(token_of(0, t), p.block_size);
  // Copies step `step`'s chunks into their slots (zeros past the range);
  // before the wait, not the newest row. Always one commit group a call, so
  // the group count stays the step count.
  auto issue = [&](int step, bool before_wait) {
#pragma unroll
    for (int t = 0; t < S::kPerLane; ++t) {
      const int tok = token_of(step, t);
      if (step < steps && copies && !(before_wait && tok == fresh)) {
        const bool valid = tok < end;
        const size_t off = valid ? row_offset(cursor[t].index, cursor[t].offset) : 0;
        cp_async_16(k_slot(step, t), p.k_cache + off, valid ? 16 : 0);
        cp_async_16(k_slot(step, t) + kVOffset, p.v_cache + off, valid ? 16 : 0);
      }
      cursor[t].advance(stride_blocks, stride_rest, p.block_size);
    }
    cp_async_commit();
  };

#pragma unroll
  for (int j = 0; j < kStages - 1; ++j) issue(j, true);
  cuda_pdl::wait_for_producer();
  if (copies && fresh >= begin && fresh < end) {  // the newest row, if this lane took it early
    int owner_warp = 0, step = 0, owner_group = 0;
    deal.owner(fresh, owner_warp, step, owner_group);
    if (owner_warp == warp && owner_group % S::kGroups == grp && step < kStages - 1) {
      const BlockCursor at = block_cursor(fresh, p.block_size);
      const size_t off = row_offset(at.index, at.offset);
      uint8_t* dst = k_slot(step, owner_group / S::kGroups);
      *reinterpret_cast<uint4*>(dst) = __ldcg(reinterpret_cast<const uint4*>(p.k_cache + off));
      *reinterpret_cast<uint4*>(dst + kVOffset) = __ldcg(reinterpret_cast<const uint4*>(p.v_cache + off));
    }
  }

  float q[kG][8];
  {
    const ActT* qp = static_cast<const ActT*>(p.q) + (static_cast<size_t>(cta.q_tok) * p.num_heads + h0) * HD + c * 8;
#pragma unroll
    for (int g = 0; g < kG; ++g) {
      if (g < G && has_chunk) {  // element loads: q's rows need not be 16-byte aligned
#pragma unroll
        for (int e = 0; e < 8; ++e) q[g][e] = to_float<ActT>(qp[g * HD + e]) * p.qk_scale;
      } else {
#pragma unroll
        for (int e = 0; e < 8; ++e) q[g][e] = 0.0f;
      }
    }
  }
  float acc[kG][8], m[kG], l[kG];
#pragma unroll
  for (int g = 0; g < kG; ++g) {
    m[g] = -INFINITY;
    l[g] = 0.0f;
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[g][e] = 0.0f;
  }

  for (int j = 0; j < steps; ++j) {
    cp_async_wait<kStages - 2>();  // step j's group is complete
    // fp8: a neighbour's copy landed in this lane's slot (and this lane's
    // reads of step j - 1, whose slot is refilled below, are done).
    if constexpr (S::kLanesPerCopy > 1) __syncwarp();
    float kf[S::kPerLane][8], vf[S::kPerLane][8];
#pragma unroll
    for (int t = 0; t < S::kPerLane; ++t) {
      kv8_to_float<KvT>(k_slot(j, t), kf[t]);
      kv8_to_float<KvT>(k_slot(j, t) + kVOffset, vf[t]);
      if (S::kChunks < S::kLanes && !has_chunk) {
        // An idle lane's slots were never written: whatever bits they hold
        // (a NaN, say) must not reach the token's shuffle sum.
#pragma unroll
        for (int e = 0; e < 8; ++e) kf[t][e] = vf[t][e] = 0.0f;
      }
    }
    issue(j + kStages - 1, false);  // into the slot step j - 1 used
    float sc[S::kPerLane][kG];
#pragma unroll
    for (int t = 0; t < S::kPerLane; ++t) {
#pragma unroll
      for (int g = 0; g < kG; ++g) {
        sc[t][g] = 0.0f;
#pragma unroll
        for (int e = 0; e < 8; ++e) sc[t][g] = fmaf(q[g][e], kf[t][e], sc[t][g]);
      }
    }
#pragma unroll
    for (int o = S::kLanes / 2; o > 0; o >>= 1) {
#pragma unroll
      for (int t = 0; t < S::kPerLane; ++t) {
#pragma unroll
        for (int g = 0; g < kG; ++g) sc[t][g] += __shfl_xor_sync(0xffffffffu, sc[t][g], o);
      }
    }
    // A later token of the group is past the range whenever an earlier one
    // is; the copies zeroed those tokens' V.
    bool valid[S::kPerLane];
#pragma unroll
    for (int t = 0; t < S::kPerLane; ++t) valid[t] = token_of(j, t) < end;
    if (valid[0]) {
#pragma unroll
      for (int g = 0; g < kG; ++g) {
        if (g < G) {
          float m_new = m[g];
#pragma unroll
          for (int t = 0; t < S::kPerLane; ++t) m_new = valid[t] ? fmaxf(m_new, sc[t][g]) : m_new;
          const float scale = exp2_weight(m[g] - m_new);  // 0 for the first token
          float pr[S::kPerLane];
          float sum = 0.0f;
#pragma unroll
          for (int t = 0; t < S::kPerLane; ++t) {
            pr[t] = valid[t] ? exp2_weight(sc[t][g] - m_new) : 0.0f;
            sum += pr[t];
          }
          l[g] = fmaf(l[g], scale, sum);
#pragma unroll
          for (int e = 0; e < 8; ++e) {
            float a = acc[g][e] * scale;
#pragma unroll
            for (int t = 0; t < S::kPerLane; ++t) a = fmaf(pr[t], vf[t][e], a);
            acc[g][e] = a;
          }
          m[g] = m_new;
        }
      }
    }
  }
  cp_async_wait<0>();

  // The warp's token groups into lanes 0 .. kLanes - 1.
#pragma unroll
  for (int o = S::kLanes; o < 32; o <<= 1) {
#pragma unroll
    for (int g = 0; g < kG; ++g) {
      const float m_o = __shfl_xor_sync(0xffffffffu, m[g], o);
      const float l_o = __shfl_xor_sync(0xffffffffu, l[g], o);
      const float m_new = fmaxf(m[g], m_o);
      const float a = m_new == -INFINITY ? 0.0f : exp2f(m[g] - m_new);
      const float b = m_new == -INFINITY ? 0.0f : exp2f(m_o - m_new);
      l[g] = l[g] * a + l_o * b;
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[g][e] = acc[g][e] * a + __shfl_xor_sync(0xffffffffu, acc[g][e], o) * b;
      m[g] = m_new;
    }
  }
  __syncthreads();  // every warp is done with its ring, which red overlays
  float* red = reinterpret_cast<float*>(smem);  // [warp][g][HD]
  if (grp == 0) {
#pragma unroll
    for (int g = 0; g < kG; ++g) {
      if (g < G && has_chunk) {
#pragma unroll
        for (int e = 0; e < 8; ++e) red[(warp * kG + g) * HD + c * 8 + e] = acc[g][e];
      }
      if (lane == 0) {
        warp_m[warp][g] = m[g];
        warp_l[warp][g] = l[g];
      }
    }
  }
  __syncthreads();
  finish_decode_cta<HD, ActT, kG, kWarps>(p, cta, red, warp_m, warp_l, reinterpret_cast<float*>(smem + S::kSmemBytes),
                                         mail_arrived_ptr, clustered);
}

template <int HD, typename ActT, typename KvT, int kG>
cudaError_t launch_grouped(const PagedAttentionArgs& a, int splits, int32_t* counters, bool clusters,
                           cudaStream_t stream) {
  constexpr int smem = StreamShape<HD, KvT, kG>::kSmemBytes;
  auto kernel = decode_stream_kernel<HD, ActT, KvT, kG>;
  DecodeParams p = make_decode_params(a, splits, counters, kIsFp8<KvT>);
  return launch_tail_kernel<HD>(kernel, p, a.n_seqs, kThreads, smem, clusters, stream);
}

}  // namespace

cudaError_t launch_decode_stream(const PagedAttentionArgs& a, int splits, int32_t* counters, bool clusters,
                                 cudaStream_t stream) {
  const bool small_group = a.num_heads / a.layout.num_kv_heads <= 4;
  return dispatch_attention_types(a, [&](auto hd, auto act, auto kv) {
    constexpr int HD = decltype(hd)::value;
    using ActT = decltype(act);
    using KvT = decltype(kv);
    return small_group ? launch_grouped<HD, ActT, KvT, 4>(a, splits, counters, clusters, stream)
                       : launch_grouped<HD, ActT, KvT, kDecodeHeadsPerCta>(a, splits, counters, clusters, stream);
  });
}

}  // namespace aph::attention::cuda
