// A row sorted for a stage that walks it in sorted order (tail-free, skew,
// mirostat), inside the stage's own kernel: sort_row_then() gathers the
// row's live tokens, sorts them and hands them to the stage in block 0.
//
// Each of those stages used to be four kernels (gather the live tokens, sort
// the rows too long for shared memory, the stage on the short rows, the
// stage on the long ones); after a truncation every row is short, so three
// of the four were a launch, a flag read and an exit (plugins/samplers/
// README.md has the measurements). Now the row's cluster (row_split.cuh)
// decides on the device which path the row takes:
// - a row with a live list of this run (kernels.hpp's LiveList) is gathered
//   from its list by block 0 alone, and the other blocks leave at once;
// - otherwise each block gathers the live tokens of its slice; when the row
//   has at most kCompactCap of them, block 0 pulls its peers' keys through
//   distributed shared memory and sorts them in its own shared memory;
// - else the cluster sorts the whole row by a stable LSD radix sort over
//   (value code) keys with ids alongside, in device scratch, and block 0
//   walks that.
// All three give the CPU's order (std::stable_sort: values descending, ties
// by ascending id, -0.0 equal to +0.0), since ties decide which tokens a cut
// splits off and what skew gives each.
#pragma once

#include "plugins/samplers/cuda/compact_row.cuh"
#include "plugins/samplers/cuda/row_split.cuh"
#include "plugins/samplers/cuda/row_view.cuh"

namespace aph::samplers::cuda {

constexpr int kSortBins = 256;  // 8 bits a radix pass, 4 passes
constexpr int kSortWarps = kThreads / 32;

struct RadixSmem {
  int32_t hist[kSortBins];                // this slice's count of each digit
  int32_t next[kSortBins];                // where this slice's next element of a digit goes
  int32_t warp_count[kSortWarps][kSortBins];
  int32_t tile_total[kSortBins];
  int32_t warp_total[kSortBins / 32];     // the digit scan's
};

// A block's shared memory for its row: the compacted row or the radix
// sort's counters (never both at once), and the gather's bookkeeping, which
// the peers read.
struct SortedRowSmem {
  union {
    CompactSmem compact;
    RadixSmem radix;
  };
  int32_t gathered;                // this block's live tokens
  int32_t start[kWideBlocks + 1];  // block b's keys go to [start[b], start[b + 1]) of block 0's
};

// Exclusive scan of v over threads 0..255 (the digits); all threads call it.
__device__ inline int32_t digits_exclusive_scan(int32_t v, RadixSmem& s) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int32_t inclusive = v;
  for (int o = 1; o < 32; o <<= 1) {
    const int32_t up = __shfl_up_sync(0xffffffffu, inclusive, o);
    if (lane >= o) inclusive += up;
  }
  if (lane == 31 && warp < kSortBins / 32) s.warp_total[warp] = inclusive;
  __syncthreads();
  int32_t before = 0;
  for (int w = 0; w < warp && w < kSortBins / 32; ++w) before += s.warp_total[w];
  __syncthreads();
  return before + inclusive - v;
}

// The sorted values of slot r: written over keys[1] as floats.
__device__ inline const float* sorted_values(const FullSortScratch& f, int64_t r, int64_t vocab) {
  return reinterpret_cast<const float*>(f.keys[1]) + r * vocab;
}

// Sorts the row x (slot r of the scratch) on its cluster: block b owns the
// b-th slice of the row, in order. Each pass counts the slices' digits, the
// blocks read one another's counts through distributed shared memory to
// place their digits, and each block scatters its slice tile by tile,
// ranking a tile's equal digits in thread order, so every pass is stable.
// The first pass reads the logits (ids = positions, ascending); the last
// writes the sorted values (sorted_values) and ids (ids[1]). Ends with a
// cluster barrier, so block 0 may read all of it.
__device__ inline void cluster_radix_sort(const float* x, int64_t vocab, const FullSortScratch& f, int64_t r,
                                          RadixSmem& s) {
  const int64_t row0 = r * vocab;
  const int64_t slice = (vocab + gridDim.x - 1) / gridDim.x;
  const int64_t lo = min(vocab, static_cast<int64_t>(blockIdx.x) * slice), hi = min(vocab, lo + slice);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const unsigned lanes_below = (1u << lane) - 1u;
  for (int pass = 0; pass < 4; ++pass) {
    const int shift = 8 * pass;
    const uint32_t* src_k = f.keys[(pass + 1) % 2];
    const int32_t* src_i = f.ids[(pass + 1) % 2];
    uint32_t* dst_k = f.keys[pass % 2];
    int32_t* dst_i = f.ids[pass % 2];
    auto key_at = [&](int64_t i) { return pass == 0 ? ~ascending_code(x[i]) : src_k[row0 + i]; };

    for (int d = threadIdx.x; d < kSortBins; d += blockDim.x) s.hist[d] = 0;
    __syncthreads();
    // Whole warps go round together (the bounds are the block's), so lanes
    // with the same digit add their count once.
    for (int64_t t = lo + warp * 32; t < hi; t += blockDim.x) {
      const int64_t i = t + lane;
      const int d = i < hi ? static_cast<int>((key_at(i) >> shift) & 0xFFu) : kSortBins;
      const unsigned peers = __match_any_sync(0xffffffffu, d);
      if (d < kSortBins && lane == __ffs(peers) - 1) atomicAdd(&s.hist[d], __popc(peers));
    }
    cluster_sync();
    {
      const int d = threadIdx.x;
      int32_t total = 0, before_me = 0;
      if (d < kSortBins) {
        total = cluster_column_sum(s.hist, d);
        for (unsigned b = 0; b < blockIdx.x; ++b) before_me += cluster_peer(s.hist, b)[d];
      }
      const int32_t digit_start = digits_exclusive_scan(d < kSortBins ? total : 0, s);
      if (d < kSortBins) s.next[d] = digit_start + before_me;
    }
    cluster_sync();  // no block may clear its counts while another reads them

    for (int64_t t0 = lo; t0 < hi; t0 += blockDim.x) {
      for (int k = threadIdx.x; k < kSortWarps * kSortBins; k += blockDim.x) (&s.warp_count[0][0])[k] = 0;
      __syncthreads();
      const int64_t i = t0 + threadIdx.x;
      const bool valid = i < hi;
      const uint32_t key = valid ? key_at(i) : 0u;
      const int32_t id = valid ? (pass == 0 ? static_cast<int32_t>(i) : src_i[row0 + i]) : 0;
      const int d = valid ? static_cast<int>((key >> shift) & 0xFFu) : kSortBins;
      const unsigned peers = __match_any_sync(0xffffffffu, d);
      if (valid && lane == __ffs(peers) - 1) s.warp_count[warp][d] = __popc(peers);
      __syncthreads();
      if (threadIdx.x < kSortBins) {  // per digit: the warps' counts become their starts in the tile
        int32_t run = 0;
        for (int w = 0; w < kSortWarps; ++w) {
          const int32_t c = s.warp_count[w][threadIdx.x];
          s.warp_count[w][threadIdx.x] = run;
          run += c;
        }
        s.tile_total[threadIdx.x] = run;
      }
      __syncthreads();
      if (valid) {
        const int64_t at = row0 + s.next[d] + s.warp_count[warp][d] + __popc(peers & lanes_below);
        if (pass == 3) {
          reinterpret_cast<float*>(f.keys[1])[at] = from_code(~key);
        } else {
          dst_k[at] = key;
        }
        dst_i[at] = id;
      }
      __syncthreads();
      if (threadIdx.x < kSortBins) s.next[threadIdx.x] += s.tile_total[threadIdx.x];
    }
    cluster_sync();  // this pass's writes reach the whole cluster before the next reads them
  }
}

// Block 0 alone: the listed tokens still live, as keys into s (a list holds
// at most kSparseCap <= kCompactCap ids). Returns their count.
__device__ inline int32_t gather_listed_keys(const float* x, const LiveList* list, CompactSmem& s) {
  static_assert(kSparseCap <= kCompactCap, "a live list fits the compacted row");
  const int32_t n = min(list->n, kSparseCap);
  int32_t count = 0;
  for (int32_t base = 0; base < n; base += blockDim.x) {
    const int32_t j = base + threadIdx.x;
    const int32_t id = j < n ? list->ids[j] : -1;
    const float v = id >= 0 ? x[id] : -INFINITY;
    int round = 0;
    const int32_t at = count + block_exclusive_count(v != -INFINITY, &round);
    if (v != -INFINITY) s.keys[at] = compact_key(v, id);
    count += round;
  }
  return count;
}

// Each block's live tokens of its slice of x, as keys into its s.compact
// while they fit; s.start gets every block's range in block 0's keys and
// s.start[gridDim.x] the row's live count. Ends after a cluster barrier.
__device__ inline void gather_slice_keys(const float* x, int64_t vocab, SortedRowSmem& s) {
  // 16 consecutive tokens a thread per round: a 128k row over 16 blocks is
  // one round, so one block scan places every live token.
  const int32_t count = scan_live_slice<16>(x, vocab, [&](int32_t at, float v, int64_t id) {
    if (at < kCompactCap) s.compact.keys[at] = compact_key(v, id);
  });
  cluster_offsets(&s.gathered, count, s.start);
}

// Every block of the row's cluster calls it, after dependent_start(). x is
// the row's logits (batch row `row`), r its slot in the full sort's scratch.
// visit(sx, sid, live) then runs in block 0 only, on the row's `live` live
// tokens sorted (values sx, ids sid); every thread of block 0 calls it, and
// it may write the row's logits.
template <typename Visit>
__device__ void sort_row_then(const LogitsView& logits, int32_t row, int64_t r, const FullSortScratch& full,
                              SortedRowSmem& s, Visit visit) {
  const float* x = logits.data + static_cast<int64_t>(row) * logits.stride;
  if (const LiveList* list = listed_row(logits, row)) {
    if (blockIdx.x != 0) return;  // no cluster barrier follows for this row
    const int32_t live = gather_listed_keys(x, list, s.compact);
    sort_compacted(s.compact, live);
    visit(s.compact.row.x, s.compact.row.id, static_cast<int64_t>(live));
    return;
  }
  const int64_t vocab = logits.vocab;
  gather_slice_keys(x, vocab, s);
  const int32_t live = s.start[gridDim.x];
  if (live <= kCompactCap) {
    if (blockIdx.x == 0) {
      // Each thread copies its slots straight from their peer, so all the
      // peers' loads are in flight together.
      for (int32_t j = s.start[1] + threadIdx.x; j < live; j += blockDim.x) {
        unsigned from = 1;
        while (from + 1 < gridDim.x && j >= s.start[from + 1]) ++from;  // an empty block's range is empty
        s.compact.keys[j] = cluster_peer(s.compact.keys, from)[j - s.start[from]];
      }
    }
    cluster_sync();  // block 0 has its peers' keys: they may leave
    if (blockIdx.x != 0) return;
    sort_compacted(s.compact, live);
    visit(s.compact.row.x, s.compact.row.id, static_cast<int64_t>(live));
    return;
  }
  // Nobody reads a peer's keys on this path, so the sort may reuse them at once.
  cluster_radix_sort(x, vocab, full, r, s.radix);
  if (blockIdx.x != 0) return;
  visit(sorted_values(full, r, vocab), full.ids[1] + r * vocab, static_cast<int64_t>(live));
}

}  // namespace aph::samplers::cuda
