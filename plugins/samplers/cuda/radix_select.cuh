// Weighted radix select over a row split across a cluster (row_split.cuh):
// the boundary key of top-k, top-p and typical-p in 4 (32-bit keys) or 8
// (64-bit keys) passes over the row instead of a sort or a bisection.
//
// radix_boundary returns the largest key K with weight(key >= K) >= target,
// where weight(i) is what live token i adds (1 for top-k, exp(x - m) for the
// mass stages). Each pass builds a 256-bin histogram of the next 8 bits of
// the keys that match the prefix found so far; scanning it from the top, the
// bin where the running weight first reaches the target holds K. When the
// whole row weighs less than the target, K is the smallest key (0): all stay.
//
// Every block of a cluster adds up the blocks' histograms in rank order, so
// all of them settle on the same K. On a sparse row (row_view.cuh) block 0
// does it alone.
#pragma once

#include <cooperative_groups.h>

#include <type_traits>

#include "plugins/samplers/cuda/row_view.cuh"

namespace aph::samplers::cuda {

namespace radix_detail {

constexpr int kBins = 256;
constexpr int kWarps = kThreads / 32;

// The histogram of this pass (weights and token counts), summed over the
// cluster's blocks in rank order, into total / total_count. `mine` and
// `mine_count` are this block's.
__device__ inline void cluster_histogram(double* mine, int32_t* mine_count, double* total, int32_t* total_count) {
  cluster_sync();
  for (int b = threadIdx.x; b < kBins; b += blockDim.x) {
    total[b] = cluster_column_sum(mine, b);
    total_count[b] = cluster_column_sum(mine_count, b);
  }
  // No block may clear its histogram while another still reads it.
  cluster_sync();
}

// Warp 0 scans the bins from the top: the bin where above + running weight
// first reaches target (bin 0 if none does), and the weight above that bin.
// Lane l holds bins 255 - 8l down to 248 - 8l; the one lane that owns the
// bin returns true.
// T: double weights, or int32_t token counts (top_k_blocks.cuh).
template <typename T>
__device__ bool find_bin(const T* hist, T above, T target, int* bin, T* above_bin) {
  const int lane = threadIdx.x & 31;
  T local[8];
  T chunk = 0;
  for (int j = 0; j < 8; ++j) {
    local[j] = hist[255 - 8 * lane - j];
    chunk += local[j];
  }
  T upto = chunk;  // inclusive scan over the lanes
  for (int o = 1; o < 32; o <<= 1) {
    const T v = __shfl_up_sync(0xffffffffu, upto, o);
    if (lane >= o) upto += v;
  }
  T before = __shfl_up_sync(0xffffffffu, upto, 1);
  if (lane == 0) before = 0;
  const unsigned reached = __ballot_sync(0xffffffffu, above + before + chunk >= target);
  const int owner = reached != 0 ? __ffs(reached) - 1 : 31;
  if (lane == owner) {
    T cum = above + before;
    int b = 255 - 8 * lane;
    for (int j = 0; j < 7; ++j, --b) {  // bin 0 (j == 7 of lane 31) takes what is left
      if (cum + local[j] >= target) break;
      cum += local[j];
    }
    *bin = b;
    *above_bin = cum;
  }
  return lane == owner;
}

}  // namespace radix_detail

// The weight of top-k, where every token counts 1: the histogram is then the
// token counts alone, one warp-aggregated integer atomic per distinct bin
// (no double sums).
struct UnitWeight {
  __device__ double operator()(int64_t) const { return 1.0; }
};

// key_of(j, &key) -> whether the token at index j of the row's view takes
// part (its key is then set); weight(j) -> double, or UnitWeight. Key:
// uint32_t or unsigned long long. Every thread of the view must call it; all
// get the same K.
template <typename Key, typename KeyOf, typename Weight>
__device__ Key radix_boundary(const RowView& row, KeyOf key_of, Weight weight, double target) {
  using namespace radix_detail;
  constexpr bool kUnit = std::is_same_v<Weight, UnitWeight>;
  // Unit weights need no per-warp sums: only row 0 (the pooled histogram)
  // is used, and top-k's kernel has other uses for the 30 KiB.
  __shared__ double hist[kUnit ? 1 : kWarps][kBins];
  __shared__ double total[kBins];
  __shared__ int32_t count[kBins];
  __shared__ int32_t total_count[kBins];
  __shared__ Key s_prefix;
  __shared__ double s_above;
  __shared__ bool s_alone;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  constexpr int kBits = 8 * static_cast<int>(sizeof(Key));
  Key prefix = 0;
  double above = 0;  // weight of the keys above the current prefix's range
  for (int shift = kBits - 8; shift >= 0; shift -= 8) {
    if constexpr (!kUnit) {
      for (int i = threadIdx.x; i < kWarps * kBins; i += blockDim.x) (&hist[0][0])[i] = 0;
    }
    for (int i = threadIdx.x; i < kBins; i += blockDim.x) count[i] = 0;
    __syncthreads();
    const Key high = shift == kBits - 8 ? Key{0} : (~Key{0} << (shift + 8));
    // Logits crowd into a handful of top digits, so atomics on one histogram
    // would serialize (and double atomics are CAS loops). Each warp keeps its
    // own and pools the lanes that share a bin: a warp sum and one plain
    // store per distinct bin per 32 tokens. Whole warps go round together.
    const int64_t first = row.first() - lane, step = row.step(), size = row.size();
    for (int64_t base = first; base < size; base += step) {
      const int64_t i = base + lane;
      bool pending = false;
      int bin = 0;
      double w = 0;
      Key key = 0;
      if (i < size && key_of(i, &key) && (key & high) == prefix) {
        pending = true;
        bin = static_cast<int>((key >> shift) & 0xFFu);
        if constexpr (!kUnit) w = weight(i);
      }
      if constexpr (kUnit) {
        const unsigned peers = __match_any_sync(0xffffffffu, pending ? bin : kBins);
        if (pending && lane == __ffs(peers) - 1) atomicAdd(&count[bin], __popc(peers));
      } else {
        for (unsigned mask = __ballot_sync(0xffffffffu, pending); mask != 0;
             mask = __ballot_sync(0xffffffffu, pending)) {
          const int b = __shfl_sync(0xffffffffu, bin, __ffs(mask) - 1);
          const bool mine = pending && bin == b;
          const double sum = warp_reduce(mine ? w : 0.0, SumOp{});
          const unsigned mine_mask = __ballot_sync(0xffffffffu, mine);
          if (lane == 0) {
            hist[warp][b] += sum;
            atomicAdd(&count[b], __popc(mine_mask));
          }
          pending = pending && !mine;
        }
      }
    }
    __syncthreads();
    for (int b = threadIdx.x; b < kBins; b += blockDim.x) {
      double t = 0;
      if constexpr (kUnit) {
        t = count[b];
      } else {
        for (int w = 0; w < kWarps; ++w) t += hist[w][b];
      }
      hist[0][b] = t;  // each thread writes only the column it read
    }
    if (row.sparse()) {
      for (int b = threadIdx.x; b < kBins; b += blockDim.x) {
        total[b] = hist[0][b];
        total_count[b] = count[b];
      }
      __syncthreads();
    } else {
      cluster_histogram(hist[0], count, total, total_count);
    }
    if (warp == 0) {
      int bin = 0;
      double above_bin = 0;
      if (find_bin(total, above, target, &bin, &above_bin)) {
        s_prefix = prefix | (static_cast<Key>(bin) << shift);
        s_above = above_bin;
        s_alone = total_count[bin] == 1;
      }
    }
    __syncthreads();
    prefix = s_prefix;
    above = s_above;
    if (s_alone && shift > 0) {
      // One token in the bin: the passes left would walk down to its key
      // (the running weight reaches the target at it, or at none, and then
      // the lowest key in range keeps the same tokens), so one pass finds it.
      const Key known = ~Key{0} << shift;
      Key found = 0;
      for (int64_t j = row.first(); j < row.size(); j += row.step()) {
        Key key = 0;
        if (key_of(j, &key) && (key & known) == prefix) found = key;
      }
      return row.reduce(found, MaxOp{}, Key{0});
    }
  }
  return prefix;
}

}  // namespace aph::samplers::cuda
