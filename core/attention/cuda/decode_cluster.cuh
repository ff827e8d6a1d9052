// What both decode kernels (decode.cu, decode_stream.cu) use to merge a
// short sequence's splits inside a thread block cluster instead of through
// the workspace: the cluster size a launch gets, and the leader's weights
// for its members' partials.
#pragma once

#include <cooperative_groups.h>
#include <cuda/ptx>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "core/attention/cuda/decode_common.cuh"
#include "core/attention/split_plan.hpp"
#include "core/common/cuda_cluster.hpp"
#include "core/common/cuda_device_limits.hpp"
#include "core/common/env_flag.hpp"

// Thread block clusters, st.async and transaction-counted mbarriers exist
// from sm_90. On an older GPU the host never launches a cluster
// (cluster_size_for finds none), and the kernels compile without those
// paths, so that APH_RELEASE_ARCHS builds (sm_80-89) compile.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define APH_DECODE_CLUSTERS 0
#else
#define APH_DECODE_CLUSTERS 1
#endif

namespace aph::attention::cuda {

// A cluster leader's weight for each member and head, sum_j * 2^(max_j - max)
// normalized (as the workspace merge weighs splits), into
// w_s[g * kDecodeMaxCluster + j]; the cluster's own (max, sum) replace m_s,
// l_s, its partial for a merge across clusters. One warp a head, lanes are
// members; stats(j, g, m, l) reads member j's max and sum of head g.
template <int kThreads, typename Stats>
__device__ __forceinline__ void member_weights(int G, int members, float* w_s, float* m_s, float* l_s,
                                               Stats stats) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int g = warp; g < G; g += kThreads / 32) {
    float m = -INFINITY, l = 0.0f;
    if (lane < members) stats(lane, g, m, l);
    const float mx = warp_max(l > 0.0f ? m : -INFINITY);
    const float w = l > 0.0f ? l * exp2f(m - mx) : 0.0f;
    const float total = warp_sum(w);
    if (lane < members) w_s[g * kDecodeMaxCluster + lane] = total > 0.0f ? w / total : 0.0f;
    __syncwarp();
    if (lane == 0) {
      m_s[g] = mx;
      l_s[g] = total;
    }
  }
}

#if APH_DECODE_CLUSTERS
// A cluster member's side of the push merge: its slot in the leader's
// mailbox, mail_stride floats ([mail_group][HD] outputs, then mail_group
// maxima and sums), and its stores there. A member's stores are st.async,
// counted in bytes by the leader's transaction barrier: no release fence (a
// cluster barrier's release arrive compiles to MEMBAR.ALL.GPU) and no second
// barrier phase. The leader's own slot is local.
struct MailboxSlot {
  float* part = nullptr;
  uint64_t* leader_arrived = nullptr;
  bool remote = false;
  __device__ __forceinline__ void send(float* dst, float v) const {
    if (remote)
      ::cuda::ptx::st_async(dst, v, leader_arrived);
    else
      *dst = v;
  }
};

// Joins the push merge of a CTA launched in a cluster whose every active
// member arrived on the cluster barrier at its start: waits for every member
// (the leader too) to have started, sends the CTA's max and sum of its G
// heads (m_s, l_s: shared) and returns its slot, into which the CTA then
// sends its [G][HD] output.
template <int HD>
__device__ __forceinline__ MailboxSlot join_mailbox(float* mailbox, uint64_t* mail_arrived, int mail_group, int G,
                                                    const float* m_s, const float* l_s) {
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  MailboxSlot s;
  const int rank = static_cast<int>(cluster.block_rank());
  s.remote = rank != 0;
  s.part = cluster.map_shared_rank(mailbox, 0) + rank * mail_group * (HD + 2);
  s.leader_arrived = cluster.map_shared_rank(mail_arrived, 0);
  __cluster_barrier_wait();
  const int tid = threadIdx.x;
  if (tid < G) {
    s.send(s.part + mail_group * HD + tid, m_s[tid]);
    s.send(s.part + mail_group * HD + mail_group + tid, l_s[tid]);
  }
  return s;
}
#endif

// APH_DECODE_CLUSTER: the largest cluster (default kDecodeMaxCluster; 0 or 1
// merges every split through the workspace).
inline int max_cluster() {
  static const int n =
      static_cast<int>(std::clamp<long>(env_int("APH_DECODE_CLUSTER", kDecodeMaxCluster), 1, kDecodeMaxCluster));
  return n;
}

// The largest cluster size up to kDecodeMaxCluster that divides the split
// count and that the device places (1: none), with the shared memory it then
// needs: smem plus, when pushing, mail_bytes a member.
inline int cluster_size_for(const void* kernel, int splits, int threads, int smem, int mail_bytes,
                            int* cluster_smem) {
  *cluster_smem = smem;
  if (splits <= 1) return 1;
  cuda_device::Limits limits;
  if (cuda_device::current_limits(&limits) != cudaSuccess) return 1;
  const int max_smem = limits.max_smem_optin;
  for (int c = std::min(splits, max_cluster()); c > 1; --c) {
    const int need = smem + c * mail_bytes;
    if (splits % c != 0 || need > max_smem) continue;
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, need) != cudaSuccess) continue;
    if (cuda_cluster::fits(kernel, c, threads, need)) {
      *cluster_smem = need;
      return c;
    }
  }
  cudaGetLastError();
  return 1;
}

}  // namespace aph::attention::cuda
