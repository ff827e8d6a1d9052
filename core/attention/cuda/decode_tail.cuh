// The end both streaming-style decode kernels share (decode_stream.cu, and
// decode_mma.cu's tensor-core one): each warp has left its partial softmax
// (max, sum and unnormalized output of every query head over its tokens) in
// shared memory, and the CTA weighs them into its split's output. A lone
// split writes the output; a split in a cluster pushes its partial into the
// leader's mailbox (decode_cluster.cuh), and the leader merges its members;
// otherwise the partial goes to the workspace, where the last split to arrive
// merges them all (publish_and_merge).
#pragma once

#include <cooperative_groups.h>
#include <cuda/ptx>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/attention/cuda/decode_cluster.cuh"
#include "core/attention/cuda/decode_common.cuh"
#include "core/attention/cuda/kv_types.cuh"
#include "core/common/cuda_pdl.cuh"

namespace aph::attention::cuda {

// A clustered CTA's first act: the leader readies the barrier its members'
// stores count down, and every member says it has started (its shared
// memory may take the others' stores only once it runs); each waits on that
// only before its first remote store, in finish_decode_cta.
__device__ __forceinline__ void start_cluster_merge([[maybe_unused]] uint64_t* mail_arrived,
                                                    [[maybe_unused]] bool clustered) {
#if APH_DECODE_CLUSTERS
  if (clustered && threadIdx.x == 0 && cooperative_groups::this_cluster().block_rank() == 0) {
    ::cuda::ptx::mbarrier_init(mail_arrived, 1);
    ::cuda::ptx::fence_mbarrier_init(::cuda::ptx::sem_release, ::cuda::ptx::scope_cluster);
  }
  if (clustered) __cluster_barrier_arrive_relaxed();
#endif
}

// red: [kWarps][kG][HD] the warps' outputs (free scratch afterwards);
// warp_m, warp_l: their maxima and sums (log2 units); mailbox: the leader's
// mail slots, after the kernel's own dynamic shared memory. Every thread of
// the CTA calls it, after a barrier that published red, warp_m and warp_l.
template <int HD, typename ActT, int kG, int kWarps>
__device__ __forceinline__ void finish_decode_cta(const DecodeParams& p, const DecodeCta& cta, float* red,
                                                  const float (&warp_m)[kWarps][kG],
                                                  const float (&warp_l)[kWarps][kG], [[maybe_unused]] float* mailbox,
                                                  [[maybe_unused]] uint64_t* mail_arrived,
                                                  [[maybe_unused]] bool clustered) {
  constexpr int kThreads = kWarps * 32;
  __shared__ float m_s[kG], l_s[kG], inv_s[kDecodeHeadsPerCta];
  const int tid = threadIdx.x;
  const int G = cta.G, h0 = cta.h0;
  const bool direct = cta.eff == 1;  // the lone split writes the output
  // The CTA's max and sum of each head over its warps.
  if (tid < G) {
    float mx = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) mx = fmaxf(mx, warp_m[w][tid]);
    float sum = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) sum = fmaf(warp_l[w][tid], mx == -INFINITY ? 0.0f : exp2f(warp_m[w][tid] - mx), sum);
    m_s[tid] = mx;
    l_s[tid] = sum;
  }
  __syncthreads();

  ActT* out = static_cast<ActT*>(p.out);
  // Clustered: the normalized output goes into the leader's mailbox (after
  // the kernel's own dynamic shared memory), slot `rank`: [mail_group][HD]
  // outputs, then mail_group maxima and sums.
  [[maybe_unused]] float* part = nullptr;
#if APH_DECODE_CLUSTERS
  namespace cg = cooperative_groups;
  namespace ptx = ::cuda::ptx;
  const int mail_stride = p.mail_group * (HD + 2);  // floats a member
  MailboxSlot mail;  // not clustered: stores stay local
  if (clustered) {
    mail = join_mailbox<HD>(mailbox, mail_arrived, p.mail_group, G, m_s, l_s);
    part = mail.part;
  }
  auto send = [&](float* dst, float v) { mail.send(dst, v); };
#else
  auto send = [](float* dst, float v) { *dst = v; };
#endif
  for (int i = tid; i < G * HD; i += kThreads) {
    const int g = i / HD, d = i % HD;
    const float mx = m_s[g], sum = l_s[g];
    float o = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const float wt = mx == -INFINITY ? 0.0f : exp2f(warp_m[w][g] - mx);
      o = fmaf(red[(w * kG + g) * HD + d], wt, o);
    }
    o = sum > 0.0f ? o / sum * p.v_scale : 0.0f;
    const int h = h0 + g;
    if (direct) {
      out[(static_cast<size_t>(cta.q_tok) * p.num_heads + h) * HD + d] = from_float<ActT>(o);
    } else if (clustered) {
      send(part + i, o);
    } else {  // the workspace stride stays p.splits: its layout is the host's plan
      p.ws_out[((static_cast<size_t>(cta.seq) * p.num_heads + h) * p.splits + cta.split) * HD + d] = o;
    }
  }
  if (direct) return;
  // The workspace slot of this CTA's partial (or its cluster's), and how
  // many slots the last arrival merges.
  int slot = cta.split, n_slots = cta.eff;
#if APH_DECODE_CLUSTERS
  if (clustered) {
    cg::cluster_group cluster = cg::this_cluster();
    const int rank = static_cast<int>(cluster.block_rank());
    // A member may leave at once: st.async carries its values from
    // registers, and the leader, whose memory they land in, stays until its
    // barrier has counted every byte.
    if (rank != 0) return;
    const int first = cta.split;  // the leader is its cluster's first split
    const int members = min(p.cluster, cta.eff - first);
    const int n_clusters = (cta.eff + p.cluster - 1) / p.cluster;
    slot = first / p.cluster;
    n_slots = n_clusters;
    __syncthreads();  // the leader's own slot
    if (tid == 0)
      ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, mail_arrived,
                                     static_cast<uint32_t>((members - 1) * (G * HD + 2 * G) * sizeof(float)));
    while (!ptx::mbarrier_try_wait_parity(ptx::sem_acquire, ptx::scope_cluster, mail_arrived, 0u)) {
    }
    __shared__ float w_s[kDecodeHeadsPerCta * kDecodeMaxCluster];
    // The cluster's (max, sum) replace m_s, l_s for a merge across clusters.
    member_weights<kThreads>(G, members, w_s, m_s, l_s, [&](int j, int g, float& m, float& l) {
      m = mailbox[j * mail_stride + p.mail_group * HD + g];
      l = mailbox[j * mail_stride + p.mail_group * HD + p.mail_group + g];
    });
    __syncthreads();
    for (int i = tid; i < G * HD; i += kThreads) {
      const int g = i / HD, h = h0 + g;
      float o = 0.0f;
      for (int j = 0; j < members; ++j) o = fmaf(w_s[g * kDecodeMaxCluster + j], mailbox[j * mail_stride + i], o);
      if (n_clusters == 1)
        out[(static_cast<size_t>(cta.q_tok) * p.num_heads + h) * HD + i % HD] = from_float<ActT>(o);
      else
        p.ws_out[((static_cast<size_t>(cta.seq) * p.num_heads + h) * p.splits + slot) * HD + i % HD] = o;
    }
    if (n_clusters == 1) return;
  }
#endif
  __syncthreads();  // m_s and l_s; red is free for the merge's weights
  publish_and_merge<HD, ActT, kThreads>(p, cta.seq, cta.q_tok, h0, G, slot, n_slots, m_s, l_s, red, inv_s);
}

// Launches a kernel that ends in finish_decode_cta (its one argument p, its
// split plan filled in) over the decode grid as a programmatic dependent,
// with `smem` bytes of dynamic shared memory; with `clusters`, its splits
// run as thread block clusters where the GPU places them, each member then
// with room for the leader's mailbox.
template <int HD>
cudaError_t launch_tail_kernel(void (*kernel)(DecodeParams), DecodeParams p, int n_seqs, int threads, int smem,
                               bool clusters, cudaStream_t stream) {
  const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (e != cudaSuccess) return e;
  p.push_merge = true;  // the only cluster merge finish_decode_cta has
  p.mail_group = std::min(kDecodeHeadsPerCta, p.group);
  const int mail_bytes = p.mail_group * (HD + 2) * static_cast<int>(sizeof(float));
  int launch_smem = smem;
  p.cluster = clusters ? cluster_size_for(reinterpret_cast<const void*>(kernel), p.splits, threads, smem, mail_bytes,
                                          &launch_smem)
                       : 1;
  const dim3 grid(p.splits, p.num_kv_heads * p.head_chunks, n_seqs);
  return cuda_pdl::launch_dependent_clustered(kernel, grid, dim3(threads), launch_smem, stream,
                                              static_cast<unsigned>(p.cluster), p);
}

}  // namespace aph::attention::cuda
