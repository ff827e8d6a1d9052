// Split-K decode (flash-decoding) for sequences with one query token.
//
// One CTA = (split, KV head x head chunk, sequence). It reads its slice of the
// context once for every query head of the KV group (GQA), with cp.async
// double buffering: 16-byte copies of KV tiles land in shared memory while the
// previous tile is being used. Scores and the weighted V sum stay in fp32 with
// an online softmax in the log2 domain; with more than one split, each CTA
// writes (out, max, sum) to the workspace and the last CTA of the group to
// finish (an atomic arrival counter) merges them, so decode is one kernel.
//
// A split's token range is derived from context_lens on the device, so a CUDA
// graph captured once stays correct as contexts grow. The grid has p.splits
// split CTAs (chosen on the host from max_context_len, often the model's max),
// but each sequence only uses eff = clamp(ceil(ctx / kDecodeMinSplitTokens), 1,
// p.splits) of them: the rest exit at once, so a short context is not cut into
// slivers of a few tokens and the merge reads only eff partials. With eff == 1
// the lone CTA writes the output directly (no workspace, no counter). The
// merge batches its L2 loads (8 splits in flight per output element) instead
// of one dependent round trip per split.
//
// For a lone sequence whose context the caller says is short
// (PagedAttentionArgs::short_contexts; split_plan.hpp's
// decode_uses_clusters) and where the GPU allows it, the split CTAs of a (sequence, head
// chunk) run as thread block clusters of p.cluster CTAs (up to 16): the
// members send their partials (output, max, sum) into a mailbox in the
// leader's shared memory with st.async, which a transaction barrier in the
// leader counts in bytes, and exit; only the leader waits, and only a
// sequence that needs more than one cluster has its cluster leaders go
// through the workspace and the arrival counter. H200, SmolLM2-135M decode
// after 512 tokens, runs interleaved on one machine (medians of 4): the real
// Q4_1 1481.0 tok/s, a random Q4_0 1503.8; with plain remote stores and a
// cluster barrier phase (its release arrive is a MEMBAR.ALL.GPU) 1469.2 and
// 1486.0; with the leader reading the partials from the members' shared
// memory between two cluster barriers (APH_DECODE_PUSH_MERGE=0, kept) 1444.2
// and 1462.8. (clock64 stamps of that last form showed about 4000 of the
// leader's ~10800 cycles after the producer wait in its barriers and remote
// reads, the one tile of 64 tokens 3800, the slices' reduction 1700, q's
// load 900: docs/PERFORMANCE.md.)
// At batch 1 and a few hundred tokens every active split sits in one cluster,
// and the workspace round trips (the partials' stores, a fence, the counter,
// the merge's loads) were most of what the kernel cost after its inputs
// arrived: SmolLM2-135M Q4_0 decoded 1408-1435 tok/s with clusters, 1288-1321
// without (H200). With long contexts or several sequences the cluster launch
// is slower (split_plan.hpp), so those keep the plain grid.
//
// The step's RoPE and K/V store stay in their own kernel before this one
// (write_kv_cache.cu). Folding them in was measured on the H200: each CTA
// rotated its q heads, and the CTA holding the newest token rotated its k
// into the tile and stored the row. The cache bytes and outputs were the
// same, but the random SmolLM2-135M Q4_0 decoded 1371 tok/s that way
// against 1420-1427 with the separate kernel, on one machine. The 8B
// Q4_K_M went from 428.4-428.8 to 430.0-430.7.
#include <cooperative_groups.h>
#include <cuda/ptx>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdlib>

#include "core/attention/cuda/attention_kernels.h"
#include "core/attention/cuda/decode_cluster.cuh"
#include "core/attention/cuda/decode_common.cuh"
#include "core/attention/cuda/kv_types.cuh"
#include "core/attention/decode_partition.hpp"
#include "core/attention/split_plan.hpp"
#include "core/common/env_flag.hpp"
#include "core/common/cuda_async_copy.cuh"
#include "core/common/cuda_device_limits.hpp"
#include "core/common/cuda_pdl.cuh"

namespace aph::attention::cuda {
namespace {

using cuda_async::cp_async_16;
using cuda_async::cp_async_commit;
using cuda_async::cp_async_wait;

namespace ptx = ::cuda::ptx;  // libcu++'s PTX wrappers (st.async, mbarrier)

// CTA size, chosen per launch (launch_typed). At batch 1 a decode grid is a
// few dozen CTAs, one per SM: each thread's chain of dependent shared-memory
// loads and FMAs is the time, not bytes, and 256 threads split a tile's
// scores and weighted sums twice as finely as 128 (per thread: one head of a
// Llama group in QK, 4 tokens in PV). With several waves of CTAs (batch 64)
// and an fp8 cache, 128-thread CTAs measured faster: their shared memory
// (half the reduction buffer, 1-byte rows) lets twice as many reside (b=64
// ctx 2048: 208 us against 256 us). An f16/bf16 CTA's double-buffered tiles
// bound residency either way, and there 256 threads stay faster (296 us
// against 431 us).
constexpr int kWideThreads = 256;
constexpr int kNarrowThreads = 128;
// Query heads a CTA covers. (A variant for groups of up to 4, with half the
// accumulators, 80 registers against 124, was slower on the H200: SmolLM2-135M
// decode 1477.7 against 1481.0 tok/s for the real Q4_1, 1498.6 against
// 1503.8 for a random Q4_0, medians of 4 interleaved runs.)
constexpr int kGroup = kDecodeHeadsPerCta;
[[maybe_unused]] constexpr int kMaxCluster = kDecodeMaxCluster;  // the cluster paths are sm_90 only
template <int HD, typename KvT, int kThreads>
struct DecodeShape {
  static constexpr int kTile = HD > 128 ? 32 : 64;  // tokens per KV tile
  static constexpr int kRowBytes = HD * KvTraits<KvT>::kBytes;
  static constexpr int kRowChunks = kRowBytes / 16;
  // 16 bytes of padding make rows of consecutive threads start in different banks.
  static constexpr int kRowStride = kRowBytes + 16;
  static constexpr int kTileBytes = kTile * kRowStride;
  static constexpr int kQkSlices = kThreads / kTile;  // threads per token in QK
  static constexpr int kPvChunks = HD / 8;            // 8 output dims per thread in PV
  static constexpr int kPvSlices = kThreads / kPvChunks;
  static constexpr int kKvBytes = 4 * kTileBytes;     // K and V, double buffered
  static constexpr int kRedBytes = kPvSlices * kGroup * HD * 4;
  static constexpr int kBigBytes = kKvBytes > kRedBytes ? kKvBytes : kRedBytes;
  static constexpr int kSmemBytes = kBigBytes + (kGroup * HD + kGroup * kTile + 3 * kGroup) * 4;
};

template <int HD, typename ActT, typename KvT, int kThreads>
__global__ void __launch_bounds__(kThreads) decode_kernel(DecodeParams p) {
  cuda_pdl::allow_dependents();  // the output projection can launch
  using S = DecodeShape<HD, KvT, kThreads>;
  constexpr int kWarps = kThreads / 32;
  constexpr int kB = KvTraits<KvT>::kBytes;
  constexpr int kTile = S::kTile;
  extern __shared__ __align__(16) uint8_t smem[];
  uint8_t* kv_smem = smem;
  float* q_s = reinterpret_cast<float*>(smem + S::kBigBytes);
  float* s_s = q_s + kGroup * HD;
  float* m_s = s_s + kGroup * kTile;
  float* l_s = m_s + kGroup;
  float* a_s = l_s + kGroup;

  const int tid = threadIdx.x;
  // The grid is sized for the captured max_context_len, but a split under
  // kDecodeMinSplitTokens tokens costs more (partial write + merge read) than
  // it saves: surplus CTAs leave here (decode_common.cuh's DecodeCta).
  const DecodeCta cta = locate_decode_cta<kGroup>(p);
  if (!cta.active) return;
  const int seq = cta.seq, kvh = cta.kvh, G = cta.G, h0 = cta.h0, split = cta.split;
  const int q_tok = cta.q_tok, ctx = cta.ctx, eff = cta.eff;
  // eff == 1: the single CTA holds the whole context and writes the output
  // itself, like the p.splits == 1 path.
  const bool direct = eff == 1;
  // Push merge: every active member says it has started (a CTA's shared
  // memory may be written by its cluster only once it runs); it waits on
  // that only before its first remote store, long after.
  [[maybe_unused]] const bool pushing = APH_DECODE_CLUSTERS && p.cluster > 1 && !direct && p.push_merge;
#if APH_DECODE_CLUSTERS
  // The leader's transaction barrier, which its members' st.async stores
  // count down; initialized before the leader arrives on the start barrier
  // that the members wait on before their first store.
  __shared__ uint64_t mail_arrived;
  if (pushing && tid == 0 && cooperative_groups::this_cluster().block_rank() == 0) {
    ptx::mbarrier_init(&mail_arrived, 1);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  if (pushing) __cluster_barrier_arrive_relaxed();
#endif
  const TokenRange range = decode_split_range(ctx, eff, split);
  const int begin = range.begin, end = range.end;
  const int n_tiles = (end - begin + kTile - 1) / kTile;

  const int32_t* table = p.block_tables + static_cast<size_t>(seq) * p.max_blocks_per_seq;
  const size_t slot_stride = static_cast<size_t>(p.num_kv_heads) * S::kRowBytes;
  const size_t head_off = static_cast<size_t>(kvh) * S::kRowBytes;
  auto row_offset = [&](int tok, int chunk) {
    const int64_t blk = table[tok / p.block_size];
    return (static_cast<size_t>(blk) * p.block_size + tok % p.block_size) * slot_stride + head_off + chunk * 16;
  };
  // Copies the tile's tokens into buffer buf, all but token `skip`.
  auto issue_tile = [&](int tile, int buf, int skip) {
    uint8_t* ks = kv_smem + 2 * buf * S::kTileBytes;
    uint8_t* vs = ks + S::kTileBytes;
    const int t0 = begin + tile * kTile;
    // Every block-table load of the tile is issued before the first copy:
    // one at a time, each copy waited on its own table lookup.
    constexpr int kChunks = kTile * S::kRowChunks;
    constexpr int kPerThread = (kChunks + kThreads - 1) / kThreads;
    size_t off[kPerThread];
    bool valid[kPerThread];
#pragma unroll
    for (int u = 0; u < kPerThread; ++u) {
      const int i = tid + u * kThreads;
      const int tok = t0 + i / S::kRowChunks;
      valid[u] = i < kChunks && tok < end;
      off[u] = valid[u] ? row_offset(tok, i % S::kRowChunks) : 0;
    }
#pragma unroll
    for (int u = 0; u < kPerThread; ++u) {
      const int i = tid + u * kThreads;
      if (i < kChunks && t0 + i / S::kRowChunks != skip) {
        const int t = i / S::kRowChunks, c = i % S::kRowChunks;
        cp_async_16(ks + t * S::kRowStride + c * 16, p.k_cache + off[u], valid[u] ? 16 : 0);
        cp_async_16(vs + t * S::kRowStride + c * 16, p.v_cache + off[u], valid[u] ? 16 : 0);
      }
    }
    cp_async_commit();
  };

  // Launched as a dependent of the KV write (core/common/cuda_pdl.cuh; the
  // host's kernel, or a quant plugin's q/k/v matvec that stores K/V itself:
  // PagedAttentionArgs::kv_written): the block table and every cached token
  // but this step's (ctx - 1, which that write stores) were complete before
  // this step's first kernel, so the first tile streams in while the write
  // and the rope before it finish.
  // q and the newest row are read only after the wait.
  const int fresh = ctx - 1;
  const bool fresh_in_first = n_tiles > 0 && fresh >= begin && fresh < min(end, begin + kTile);
  if (n_tiles > 0) issue_tile(0, 0, fresh);
  cuda_pdl::wait_for_producer();
  if (fresh_in_first) {
    uint8_t* ks = kv_smem;
    uint8_t* vs = ks + S::kTileBytes;
    const int t = fresh - begin;
    for (int c = tid; c < S::kRowChunks; c += kThreads) {
      const size_t off = row_offset(fresh, c);
      cp_async_16(ks + t * S::kRowStride + c * 16, p.k_cache + off, 16);
      cp_async_16(vs + t * S::kRowStride + c * 16, p.v_cache + off, 16);
    }
    cp_async_commit();
  }

  const ActT* q = static_cast<const ActT*>(p.q);
  for (int i = tid; i < G * HD; i += kThreads) {
    const int g = i / HD, d = i % HD;
    q_s[i] = to_float<ActT>(q[(static_cast<size_t>(q_tok) * p.num_heads + h0 + g) * HD + d]) * p.qk_scale;
  }
  if (tid < kGroup) {
    m_s[tid] = -INFINITY;
    l_s[tid] = 0.0f;
  }

  float acc[kGroup][8];
#pragma unroll
  for (int g = 0; g < kGroup; ++g) {
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[g][e] = 0.0f;
  }
  const int qk_t = tid % kTile, qk_slice = tid / kTile;
  const int pv_c = tid % S::kPvChunks, pv_slice = tid / S::kPvChunks;
  const bool pv_active = pv_slice < S::kPvSlices;
  const int warp = tid / 32, lane = tid % 32;

  __syncthreads();
  for (int it = 0; it < n_tiles; ++it) {
    const int buf = it & 1;
    if (it + 1 < n_tiles) {
      issue_tile(it + 1, buf ^ 1, -1);
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    const uint8_t* ks = kv_smem + 2 * buf * S::kTileBytes;
    const uint8_t* vs = ks + S::kTileBytes;
    const int t0 = begin + it * kTile;

    {  // scores: thread (token, slice) covers heads slice, slice + kQkSlices, ...
      constexpr int kPer = (kGroup + S::kQkSlices - 1) / S::kQkSlices;
      float dots[kPer];
#pragma unroll
      for (int j = 0; j < kPer; ++j) dots[j] = 0.0f;
      const uint8_t* krow = ks + qk_t * S::kRowStride;
#pragma unroll
      for (int c = 0; c < HD / 8; ++c) {
        float kf[8];
        kv8_to_float<KvT>(krow + c * 8 * kB, kf);
#pragma unroll
        for (int j = 0; j < kPer; ++j) {
          const int g = qk_slice + j * S::kQkSlices;
          if (g < G) {
            const float* qv = q_s + g * HD + c * 8;
            float s = 0.0f;
#pragma unroll
            for (int e = 0; e < 8; ++e) s = fmaf(qv[e], kf[e], s);
            dots[j] += s;
          }
        }
      }
      const bool valid = t0 + qk_t < end;
#pragma unroll
      for (int j = 0; j < kPer; ++j) {
        const int g = qk_slice + j * S::kQkSlices;
        if (g < G) s_s[g * kTile + qk_t] = valid ? dots[j] : -INFINITY;
      }
    }
    __syncthreads();

    for (int g = warp; g < G; g += kWarps) {  // online softmax, one warp per head
      float* srow = s_s + g * kTile;
      const float m_old = m_s[g];
      float mx = -INFINITY;
      for (int t = lane; t < kTile; t += 32) mx = fmaxf(mx, srow[t]);
      mx = warp_max(mx);
      const float m_new = fmaxf(m_old, mx);
      const float m_use = m_new == -INFINITY ? 0.0f : m_new;
      float sum = 0.0f;
      for (int t = lane; t < kTile; t += 32) {
        const float e = exp2f(srow[t] - m_use);
        srow[t] = e;
        sum += e;
      }
      sum = warp_sum(sum);
      __syncwarp();
      if (lane == 0) {
        const float alpha = exp2f(m_old - m_use);
        a_s[g] = alpha;
        l_s[g] = l_s[g] * alpha + sum;
        m_s[g] = m_new;
      }
    }
    __syncthreads();

    if (pv_active) {  // thread (8 dims, token slice) accumulates every head of the group
#pragma unroll
      for (int g = 0; g < kGroup; ++g) {
        if (g < G) {
          const float alpha = a_s[g];
#pragma unroll
          for (int e = 0; e < 8; ++e) acc[g][e] *= alpha;
        }
      }
      for (int t = pv_slice; t < kTile; t += S::kPvSlices) {
        float vf[8];
        kv8_to_float<KvT>(vs + t * S::kRowStride + pv_c * 8 * kB, vf);
#pragma unroll
        for (int g = 0; g < kGroup; ++g) {
          if (g < G) {
            const float pr = s_s[g * kTile + t];
#pragma unroll
            for (int e = 0; e < 8; ++e) acc[g][e] = fmaf(pr, vf[e], acc[g][e]);
          }
        }
      }
    }
    __syncthreads();  // the next iteration refills this buffer
  }

  float* red = reinterpret_cast<float*>(kv_smem);  // tiles are dead now
  if (pv_active) {
#pragma unroll
    for (int g = 0; g < kGroup; ++g) {
      if (g < G) {
#pragma unroll
        for (int e = 0; e < 8; ++e) red[(pv_slice * kGroup + g) * HD + pv_c * 8 + e] = acc[g][e];
      }
    }
  }
  __syncthreads();
  ActT* out = static_cast<ActT*>(p.out);
  // A sequence whose active splits span several clusters (only when a
  // caller's short_contexts was wrong) merges in two levels: clusters, then
  // the workspace.
  const bool clustered = APH_DECODE_CLUSTERS && p.cluster > 1 && !direct;
  // Clustered: this CTA's normalized output, [G][HD], which its cluster's
  // leader reads; q_s is dead once the tiles are done. Pushing: it goes
  // straight into the leader's mailbox (after the dynamic shared memory the
  // kernel itself uses), slot `rank`, with this CTA's max and sum.
  float* part = q_s;
#if APH_DECODE_CLUSTERS
  namespace cg = cooperative_groups;
  float* mailbox = reinterpret_cast<float*>(smem + S::kSmemBytes);
  const int mail_stride = p.mail_group * (HD + 2);  // floats a member
  MailboxSlot mail;  // not pushing: stores stay local
  if (pushing) {
    mail = join_mailbox<HD>(mailbox, &mail_arrived, p.mail_group, G, m_s, l_s);
    part = mail.part;
  }
  auto send = [&](float* dst, float v) { mail.send(dst, v); };
#else
  auto send = [](float* dst, float v) { *dst = v; };
#endif
  for (int i = tid; i < G * HD; i += kThreads) {
    const int g = i / HD, d = i % HD;
    float o = 0.0f;
#pragma unroll 4
    for (int sl = 0; sl < S::kPvSlices; ++sl) o += red[(sl * kGroup + g) * HD + d];
    const float l = l_s[g];
    o = l > 0.0f ? o / l * p.v_scale : 0.0f;
    const int h = h0 + g;
    if (direct) {
      out[(static_cast<size_t>(q_tok) * p.num_heads + h) * HD + d] = from_float<ActT>(o);
    } else if (clustered) {
      send(part + i, o);
    } else {  // the workspace stride stays p.splits: its layout is the host's plan
      p.ws_out[((static_cast<size_t>(seq) * p.num_heads + h) * p.splits + split) * HD + d] = o;
    }
  }
  if (direct) return;
  // The workspace slot of this CTA's partial (or its cluster's), and how
  // many slots the last arrival merges.
  int slot = split, n_slots = eff;
#if APH_DECODE_CLUSTERS
  if (clustered) {
    cg::cluster_group cluster = cg::this_cluster();
    const int rank = static_cast<int>(cluster.block_rank());
    const int first = split - rank;  // the cluster's first split
    const int members = min(p.cluster, eff - first);
    const int n_clusters = (eff + p.cluster - 1) / p.cluster;
    slot = first / p.cluster;
    n_slots = n_clusters;
    // The leader's merged value i: the output, or with several clusters this
    // cluster's partial in the workspace.
    auto emit = [&](int i, float o) {
      const int h = h0 + i / HD;
      if (n_clusters == 1) {
        out[(static_cast<size_t>(q_tok) * p.num_heads + h) * HD + i % HD] = from_float<ActT>(o);
      } else {
        p.ws_out[((static_cast<size_t>(seq) * p.num_heads + h) * p.splits + slot) * HD + i % HD] = o;
      }
    };
    float* w_s = s_s;  // kGroup x kMaxCluster floats (s_s holds kGroup x kTile)
    if (pushing) {
      // A member may exit at once: st.async carries its values from
      // registers, and the leader, whose memory the stores land in, stays
      // until its barrier has counted every byte.
      if (rank != 0) return;
      __syncthreads();        // the leader's own slot
      // Every other member's partial and stats, counted in bytes.
      if (tid == 0)
        ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &mail_arrived,
                                       static_cast<uint32_t>((members - 1) * (G * HD + 2 * G) * sizeof(float)));
      while (!ptx::mbarrier_try_wait_parity(ptx::sem_acquire, ptx::scope_cluster, &mail_arrived, 0u)) {
      }
      // Every member's max, sum and partial are in this CTA's own memory.
      member_weights<kThreads>(G, members, w_s, m_s, l_s, [&](int j, int g, float& m, float& l) {
        m = mailbox[j * mail_stride + p.mail_group * HD + g];
        l = mailbox[j * mail_stride + p.mail_group * HD + p.mail_group + g];
      });
      __syncthreads();
      for (int i = tid; i < G * HD; i += kThreads) {
        const int g = i / HD;
        float o = 0.0f;
        for (int j = 0; j < members; ++j) o = fmaf(w_s[g * kMaxCluster + j], mailbox[j * mail_stride + i], o);
        emit(i, o);
      }
    } else {
      cluster.sync();  // every member's partial, max and sum are written
      if (rank == 0) {
        member_weights<kThreads>(G, members, w_s, m_s, l_s, [&](int j, int g, float& m, float& l) {
          m = *cluster.map_shared_rank(m_s + g, j);
          l = *cluster.map_shared_rank(l_s + g, j);
        });
        __syncthreads();
        for (int i = tid; i < G * HD; i += kThreads) {
          const int g = i / HD;
          float v[kMaxCluster];  // every member's load in flight before the sum
#pragma unroll
          for (int j = 0; j < kMaxCluster; ++j) v[j] = j < members ? *cluster.map_shared_rank(part + i, j) : 0.0f;
          float o = 0.0f;
#pragma unroll
          for (int j = 0; j < kMaxCluster; ++j) o = fmaf(j < members ? w_s[g * kMaxCluster + j] : 0.0f, v[j], o);
          emit(i, o);
        }
      }
      cluster.sync();  // the leader is done reading the members' shared memory
    }
    if (rank != 0 || n_clusters == 1) return;
  }
#endif
  // The partials are in the workspace; the last split to arrive merges them
  // (the reduction buffer and the score rows are free scratch again).
  publish_and_merge<HD, ActT, kThreads>(p, seq, q_tok, h0, G, slot, n_slots, m_s, l_s, red, s_s);
}

// APH_DECODE_PUSH_MERGE=0: a cluster's leader reads its members' partials
// from their shared memory (two cluster barriers) instead of the members
// sending them into its mailbox.
bool push_merge() {
  static const bool on = env_flag("APH_DECODE_PUSH_MERGE", true);
  return on;
}

template <int HD, typename ActT, typename KvT, int kThreads>
cudaError_t launch_with_threads(dim3 grid, DecodeParams p, bool clusters, cudaStream_t stream) {
  constexpr int smem = DecodeShape<HD, KvT, kThreads>::kSmemBytes;
  auto kernel = decode_kernel<HD, ActT, KvT, kThreads>;
  cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (e != cudaSuccess) return e;
  p.push_merge = push_merge();
  p.mail_group = std::min(kGroup, p.group);
  const int mail_bytes = p.push_merge ? p.mail_group * (HD + 2) * static_cast<int>(sizeof(float)) : 0;
  int launch_smem = smem;
  p.cluster = clusters ? cluster_size_for(reinterpret_cast<const void*>(kernel), p.splits, kThreads, smem, mail_bytes,
                                          &launch_smem)
                       : 1;
  return cuda_pdl::launch_dependent_clustered(kernel, grid, dim3(kThreads), launch_smem, stream,
                                              static_cast<unsigned>(p.cluster), p);
}

template <int HD, typename ActT, typename KvT>
cudaError_t launch_typed(const PagedAttentionArgs& a, int splits, int32_t* counters, bool clusters,
                         cudaStream_t stream) {
  DecodeParams p = make_decode_params(a, splits, counters, kIsFp8<KvT>);  // launch_with_threads picks the cluster
  dim3 grid(splits, p.num_kv_heads * p.head_chunks, a.n_seqs);
  if constexpr (kIsFp8<KvT>) {  // narrow CTAs once the (sequence, head) CTAs alone fill the SMs
    cuda_device::Limits limits;
    const cudaError_t e = cuda_device::current_limits(&limits);
    if (e != cudaSuccess) return e;
    if (static_cast<int64_t>(grid.y) * grid.z >= limits.sms)
      return launch_with_threads<HD, ActT, KvT, kNarrowThreads>(grid, p, clusters, stream);
  }
  return launch_with_threads<HD, ActT, KvT, kWideThreads>(grid, p, clusters, stream);
}

// APH_DECODE_STREAM: which launches take decode_stream.cu's kernel. 0 none;
// 1 (the default) those without clusters; 2 all, a lone short sequence
// merging its splits in a cluster as this file's kernel does. H200 (stop
// 25, docs/PERFORMANCE.md), engine, random 8B, medians of 2 on one machine,
// 0 / 1 / 2: Q4_K_M at 8k context 343.5 / 369.8 / 369.4 tok/s, after 512
// 432.1 / 432.1 / 435.8; bf16 at 8k 197.8 / 207.1 / 206.9, after 512
// 214.5 / 214.6 / 215.6; Q4_K_M x64 (one run) 4177.0 / 4339.5 with 1; the
// 135M after 512 1717.3 with 0 against 1693.5 with 2.
int streaming_mode() {
  static const int mode = static_cast<int>(std::clamp<long>(env_int("APH_DECODE_STREAM", 1), 0, 2));
  return mode;
}

// APH_DECODE_MMA: which launches try decode_mma.cu's tensor-core kernel
// first (those it does not take keep the others). 0 none; 1 those that
// APH_DECODE_STREAM gives the streaming kernel; 2 (the default) all. H200 (stop
// 26, docs/PERFORMANCE.md), engine, random 8B Q4_K_M, 0 / 1: 8k context
// 371.1 / 378.4 and 376.0 / 381.7 tok/s (two machines), 64 sequences
// 5258.2 / 5423.0, after 512 434.8 / 434.5; mode 2 (its clusters for a lone
// short sequence) 429.4 after 512. P goes into the V product as hi + lo
// (with P rounded to bf16, oracle_model_gpu_test missed its bound, stop 26).
// Mode 2 is the default since stop 28, after the copy addressing
// (decode_tile_copy.hpp): H100 (no H200 was lent), medians of 2, mode 0
// against 2 with tile GEMM form 5 and groups: 135M after 512 1701.7 /
// 1780.4 tok/s, at 8k 1257.7 / 1427.2; 8B Q4_K_M after 512 378.3 / 378.0,
// at 8k 324.0 / 327.2 (docs/PERFORMANCE.md, stop 28).
int mma_mode() {
  static const int mode = static_cast<int>(std::clamp<long>(env_int("APH_DECODE_MMA", 2), 0, 2));
  return mode;
}

// Whether launch_decode gives a launch (with or without clusters) to the
// streaming kernel, and whether it tries the tensor-core kernel first.
bool stream_takes(bool clusters) {
  const int streaming = streaming_mode();
  return streaming == 2 || (streaming == 1 && !clusters);
}
bool mma_takes(bool clusters) {
  const int mma = mma_mode();
  return mma == 2 || (mma == 1 && stream_takes(clusters));
}

}  // namespace

bool decode_on_tensor_cores(const PagedAttentionArgs& a) {
  return mma_takes(decode_uses_clusters(a.n_seqs, a.short_contexts, a.layout.head_dim)) && decode_mma_takes(a);
}

cudaError_t launch_decode(const PagedAttentionArgs& a, int splits, int32_t* counters,
                          cudaStream_t stream) {
  if (a.n_seqs == 0) return cudaSuccess;
  if (splits > 1 && counters == nullptr) return cudaErrorInvalidValue;
  const bool clusters = decode_uses_clusters(a.n_seqs, a.short_contexts, a.layout.head_dim);
  // The same choice the split plan made (paged_attention.cpp).
  if (decode_on_tensor_cores(a)) return launch_decode_mma(a, splits, counters, clusters, stream);
  if (stream_takes(clusters)) return launch_decode_stream(a, splits, counters, clusters, stream);
  return dispatch_attention_types(a, [&](auto hd, auto act, auto kv) {
    return launch_typed<decltype(hd)::value, decltype(act), decltype(kv)>(a, splits, counters, clusters, stream);
  });
}

}  // namespace aph::attention::cuda
