// top-k for a small k on a row that has no live list, in three cluster
// barriers. The radix select of radix_select.cuh combines the blocks'
// histograms through distributed shared memory once per 8-bit pass, two
// cluster barriers each, after open_row's scan and its two: on the H200 a
// dense top-k took about 49 us of a batch-1 step (ncu), the largest kernel
// of the sampler chain.
//
// Here each block finds the boundary of its own slice's top k with block
// barriers only (its keys stay in registers), and sends block 0 the keys at
// or above it: at most k per block unless ties cross the boundary. Block 0
// selects among those candidates and tells every block the row's boundary.
// That is the same boundary: K, the largest key with count(key >= K) >= k
// over the row, is at least every block's own boundary K_b (a block with k
// keys >= K_b gives the row k of them), so every key >= K is a candidate,
// and counts at or above K are the same among the candidates as in the row.
//
// Removed tokens (-inf) take no part: they rank below every live token, so
// leaving them out moves no boundary (a row with fewer than k live tokens
// keeps them all, as on the CPU, which counts them).
//
// The kept tokens are exactly the candidates at or above K, which block 0
// holds in id order, so it writes them as the row's live list (kernels.hpp)
// at no extra barrier: top-p and the stages after it then read the kept
// tokens instead of scanning the row.
#pragma once

#include "plugins/samplers/cuda/radix_select.cuh"
#include "plugins/samplers/cuda/row_split.cuh"
#include "plugins/samplers/cuda/row_view.cuh"

namespace aph::samplers::cuda {

constexpr int kBlockTopKMax = 128;  // the largest k this path takes
constexpr int kTopKCandidates = kWideBlocks * kBlockTopKMax;
constexpr int kTopKPerThread = 40;  // a block's slice, in registers: 8 blocks x 512 x 40 = 160k tokens
constexpr int kCandidatesPerThread = kTopKCandidates / kThreads;
static_assert(kTopKCandidates % kThreads == 0, "block 0's candidates spread evenly over its threads");

struct TopKSmem {
  unsigned long long candidates[kTopKCandidates];  // block 0's: (key << 32 | id), in id order
  int32_t hist[256];
  int32_t gathered;                // this block's candidates
  int32_t start[kWideBlocks + 1];  // block b's candidates go to [start[b], start[b + 1])
  uint32_t prefix;
  int32_t above;
  uint32_t boundary;  // written by block 0 into every block's copy
};

// Among the first n of this thread's keys, leaving out those equal to
// `removed` (every thread of the block calls it): the largest K with
// count(key >= K) >= k over the block, or 0 when the block holds fewer than
// k keys. Block barriers only.
template <int N>
__device__ uint32_t block_top_k_boundary(const uint32_t (&key)[N], int n, uint32_t removed, int32_t k,
                                         TopKSmem& s) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  uint32_t prefix = 0;
  int32_t above = 0;  // keys above the current prefix's range
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int b = threadIdx.x; b < 256; b += blockDim.x) s.hist[b] = 0;
    __syncthreads();
    const uint32_t high = shift == 24 ? 0u : (~0u << (shift + 8));
    // n is the same for a whole warp but its last thread's, so whole warps
    // go round together; lanes sharing a digit add once.
    const int rounds = __reduce_max_sync(0xffffffffu, n);
#pragma unroll
    for (int j = 0; j < N; ++j) {
      if (j >= rounds) break;
      const bool in = j < n && key[j] != removed && (key[j] & high) == prefix;
      const int bin = in ? static_cast<int>((key[j] >> shift) & 0xFFu) : 256;
      const unsigned peers = __match_any_sync(0xffffffffu, bin);
      if (in && lane == __ffs(peers) - 1) atomicAdd(&s.hist[bin], __popc(peers));
    }
    __syncthreads();
    if (warp == 0) {
      int bin = 0;
      int32_t above_bin = 0;
      if (radix_detail::find_bin(s.hist, above, k, &bin, &above_bin)) {
        s.prefix = prefix | (static_cast<uint32_t>(bin) << shift);
        s.above = above_bin;
      }
    }
    __syncthreads();
    prefix = s.prefix;
    above = s.above;
  }
  return prefix;
}

// The row's top-k boundary on this path, and the kept tokens as the row's
// live list. key_of(v) is the order key; k <= kBlockTopKMax. Every block of
// the row's cluster calls it. Returns false (having written nothing) when
// the row does not suit this path: a slice longer than the registers hold,
// or ties that make more than kTopKCandidates candidates. Then the caller
// goes the general way.
template <typename KeyOf>
__device__ bool top_k_by_blocks(const LogitsView& logits, int32_t row, int32_t k, KeyOf key_of, TopKSmem& s) {
  float* x = logits.data + static_cast<int64_t>(row) * logits.stride;
  const int64_t vocab = logits.vocab;
  const int64_t slice = (vocab + gridDim.x - 1) / gridDim.x;
  const int64_t per = (slice + blockDim.x - 1) / blockDim.x;  // the same for every block
  if (per > kTopKPerThread) return false;
  const int64_t lo = min(vocab, static_cast<int64_t>(blockIdx.x) * slice), hi = min(vocab, lo + slice);
  const int64_t i0 = lo + static_cast<int64_t>(threadIdx.x) * per;
  const int64_t left = hi - i0;  // may be <= 0 for the last threads
  const int n = left <= 0 ? 0 : static_cast<int>(left < per ? left : per);
  const uint32_t removed = key_of(-INFINITY);
  uint32_t key[kTopKPerThread];
#pragma unroll
  for (int j = 0; j < kTopKPerThread; ++j) key[j] = j < n ? key_of(x[i0 + j]) : removed;
  const uint32_t mine_boundary = block_top_k_boundary(key, n, removed, k, s);
  auto candidate = [&](int j) { return j < n && key[j] != removed && key[j] >= mine_boundary; };

  int32_t mine = 0;
#pragma unroll
  for (int j = 0; j < kTopKPerThread; ++j) mine += candidate(j) ? 1 : 0;
  int32_t in_block = 0;
  const int32_t at = block_exclusive_add(mine, &in_block);
  cluster_offsets(&s.gathered, in_block, s.start);
  const int32_t total = s.start[gridDim.x];
  if (total > kTopKCandidates) return false;  // the same in every block; nothing written
  unsigned long long* to = cluster_peer(s.candidates, 0) + s.start[blockIdx.x] + at;
  int32_t put = 0;
#pragma unroll
  for (int j = 0; j < kTopKPerThread; ++j) {
    if (candidate(j)) {
      to[put++] = (static_cast<unsigned long long>(key[j]) << 32) | static_cast<uint32_t>(i0 + j);
    }
  }
  cluster_sync();  // block 0 holds every candidate

  if (blockIdx.x == 0) {
    // Thread t takes candidates [t * P, t * P + P): id order is thread order.
    constexpr int P = kCandidatesPerThread;
    uint32_t ck[P];
    int32_t cid[P];
    const int32_t c0 = static_cast<int32_t>(threadIdx.x) * P;
    const int cn = max(0, min(P, total - c0));
    for (int j = 0; j < P; ++j) {
      const unsigned long long c = j < cn ? s.candidates[c0 + j] : 0ull;
      ck[j] = static_cast<uint32_t>(c >> 32);
      cid[j] = static_cast<int32_t>(static_cast<uint32_t>(c));
    }
    const uint32_t boundary = block_top_k_boundary(ck, cn, removed, k, s);
    if (threadIdx.x < gridDim.x) *cluster_peer(&s.boundary, threadIdx.x) = boundary;
    // The kept tokens, for the stages after this one.
    int32_t keep = 0;
    for (int j = 0; j < cn; ++j) keep += ck[j] >= boundary ? 1 : 0;
    int32_t kept = 0;
    int32_t w = block_exclusive_add(keep, &kept);
    if (logits.live != nullptr && logits.run_id != 0 && kept <= kSparseCap) {
      LiveList* list = logits.live + row;
      for (int j = 0; j < cn; ++j) {
        if (ck[j] >= boundary) list->ids[w++] = cid[j];
      }
      if (threadIdx.x == 0) {
        list->n = kept;
        list->run_id = logits.run_id;
      }
    }
  }
  cluster_sync();  // every block has the boundary
  const uint32_t boundary = s.boundary;
#pragma unroll
  for (int j = 0; j < kTopKPerThread; ++j) {
    if (j < n && key[j] < boundary && key[j] != removed) x[i0 + j] = -INFINITY;
  }
  return true;
}

}  // namespace aph::samplers::cuda
