// The sorted-row stages' two paths (see kernels.hpp). compact_kernel gathers
// each row's live logits as (value, id) keys, up to kCompactCap of them, and
// counts them all; the stage's compact kernel sorts a row that fits in shared
// memory and marks the rest full. Those are sorted here whole, each on a
// cluster of blocks (row_split.cuh), by a stable LSD radix sort over (value
// code) keys with ids alongside, which gives ties by ascending id like the
// CPU's std::stable_sort. A row not marked full costs its cluster one read of
// the flag, so a step where every row fits pays one near-empty launch. (cub's
// segmented sort, used before, sorted each row on one block: 1.1 ms a
// 128k-token row on the H200, and several launches even when no row was full.)
// Ties decide which tokens a cut splits off and what skew gives each, so a
// selection that only keeps tie groups together (like select.cu's) would not
// do here.
#include <algorithm>
#include <climits>

#include "plugins/samplers/cuda/compact_row.cuh"
#include "plugins/samplers/cuda/row_split.cuh"
#include "plugins/samplers/cuda/row_view.cuh"

namespace aph::samplers::cuda {
namespace {

constexpr int kCompactThreads = 256;
constexpr int kCompactBlocks = 512;  // over all rows of a chunk, to stream the logits
constexpr int kSortBins = 256;       // 8 bits a pass, 4 passes
constexpr int kSortWarps = kThreads / 32;

struct Layout {
  uint64_t* compact;
  int32_t* full;
  uint32_t* keys[2];
  int32_t* ids[2];
  size_t total;
};

size_t align_up(size_t bytes) { return (bytes + 255) & ~size_t{255}; }

// Carves the scratch (base may be null: sizes only). The full sort's part is
// there only when a row can hold more than kCompactCap live tokens.
Layout layout(void* base, int32_t n, int64_t vocab) {
  Layout l{};
  auto* p = static_cast<char*>(base);
  size_t at = 0;
  auto take = [&](size_t bytes) {
    void* out = p == nullptr ? nullptr : p + at;
    at += align_up(bytes);
    return out;
  };
  const size_t rows = static_cast<size_t>(n);
  l.compact = static_cast<uint64_t*>(take(rows * kCompactCap * sizeof(uint64_t)));
  l.full = static_cast<int32_t*>(take(rows * sizeof(int32_t)));
  if (full_sort_possible(vocab)) {
    const size_t items = rows * static_cast<size_t>(vocab);
    for (int b = 0; b < 2; ++b) {
      l.keys[b] = static_cast<uint32_t*>(take(items * sizeof(uint32_t)));
      l.ids[b] = static_cast<int32_t*>(take(items * sizeof(int32_t)));
    }
  }
  l.total = at;
  return l;
}

std::string too_many(int32_t n, int64_t vocab) {
  return "sort_rows: " + std::to_string(n) + " rows of " + std::to_string(vocab) + " are too many to sort at once";
}

// Live logits of row blockIdx.y appended (warp by warp, in no particular
// order) to its compact keys while they fit; the count covers them all. A
// row with a live list of this run (kernels.hpp's LiveList) is read at the
// listed ids only, by block 0.
__global__ void __launch_bounds__(kThreads) compact_kernel(LogitsView logits, const __grid_constant__ RowIndex row_index, CompactRows c) {
  dependent_start();
  const int64_t vocab = logits.vocab;
  const int32_t r = blockIdx.y;
  const float* x = logits.data + static_cast<int64_t>(row_index[r]) * logits.stride;
  int32_t* count = c.counts + r;
  uint64_t* out = c.keys + static_cast<int64_t>(r) * kCompactCap;
  const int lane = threadIdx.x & 31;
  // Every lane of a warp calls it (i < 0: no token).
  auto append = [&](int64_t i) {
    const float v = i >= 0 ? x[i] : -INFINITY;
    const bool live = v != -INFINITY;
    const unsigned ballot = __ballot_sync(0xffffffffu, live);
    if (ballot == 0) return;
    int32_t first = 0;
    if (lane == 0) first = atomicAdd(count, __popc(ballot));
    first = __shfl_sync(0xffffffffu, first, 0);
    const int32_t at = first + __popc(ballot & ((1u << lane) - 1u));
    if (live && at < kCompactCap) out[at] = compact_key(v, i);
  };
  if (const LiveList* list = listed_row(logits, row_index[r])) {
    if (blockIdx.x != 0) return;
    const int32_t n = min(list->n, kSparseCap);
    for (int32_t base = 0; base < n; base += blockDim.x) {  // whole warps go round together
      const int32_t j = base + threadIdx.x;
      append(j < n ? list->ids[j] : -1);
    }
    return;
  }
  // The bounds are the block's, so whole warps go round together.
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * blockDim.x; base < vocab;
       base += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = base + threadIdx.x;
    append(i < vocab ? i : -1);
  }
}

// Exclusive scan of v over threads 0..255 (the digits); all threads call it.
__device__ int32_t digits_exclusive_scan(int32_t v) {
  __shared__ int32_t warp_total[kSortBins / 32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int32_t inclusive = v;
  for (int o = 1; o < 32; o <<= 1) {
    const int32_t up = __shfl_up_sync(0xffffffffu, inclusive, o);
    if (lane >= o) inclusive += up;
  }
  if (lane == 31 && warp < kSortBins / 32) warp_total[warp] = inclusive;
  __syncthreads();
  int32_t before = 0;
  for (int w = 0; w < warp && w < kSortBins / 32; ++w) before += warp_total[w];
  __syncthreads();
  return before + inclusive - v;
}

// Sorts row slot blockIdx.y (when marked full) on its cluster: block b owns
// the b-th slice of the row, in order. Each pass counts the slices' digits,
// the blocks read one another's counts through distributed shared memory to
// place their digits, and each block scatters its slice tile by tile, ranking
// a tile's equal digits in thread order, so every pass is stable. The first
// pass reads the logits (ids = positions, ascending); the last writes the
// sorted values as floats over keys[1], ids in ids[1].
__global__ void __launch_bounds__(kThreads) cluster_sort_kernel(LogitsView logits, const __grid_constant__ RowIndex row_index,
                                    const int32_t* full, uint32_t* keys0, int32_t* ids0, uint32_t* keys1,
                                    int32_t* ids1) {
  dependent_start();
  const int64_t r = blockIdx.y;
  if (!full[r]) return;  // the same for the whole cluster
  __shared__ int32_t hist[kSortBins];                // this slice's count of each digit
  __shared__ int32_t next[kSortBins];                // where this slice's next element of a digit goes
  __shared__ int32_t warp_count[kSortWarps][kSortBins];
  __shared__ int32_t tile_total[kSortBins];
  const int64_t vocab = logits.vocab;
  const float* x = logits.data + static_cast<int64_t>(row_index[r]) * logits.stride;
  const int64_t row0 = r * vocab;
  const int64_t slice = (vocab + gridDim.x - 1) / gridDim.x;
  const int64_t lo = min(vocab, static_cast<int64_t>(blockIdx.x) * slice), hi = min(vocab, lo + slice);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const unsigned lanes_below = (1u << lane) - 1u;
  for (int pass = 0; pass < 4; ++pass) {
    const int shift = 8 * pass;
    const uint32_t* src_k = pass % 2 == 1 ? keys0 : keys1;
    const int32_t* src_i = pass % 2 == 1 ? ids0 : ids1;
    uint32_t* dst_k = pass % 2 == 0 ? keys0 : keys1;
    int32_t* dst_i = pass % 2 == 0 ? ids0 : ids1;
    auto key_at = [&](int64_t i) { return pass == 0 ? ~ascending_code(x[i]) : src_k[row0 + i]; };

    for (int d = threadIdx.x; d < kSortBins; d += blockDim.x) hist[d] = 0;
    __syncthreads();
    // Whole warps go round together (the bounds are the block's), so lanes
    // with the same digit add their count once.
    for (int64_t t = lo + warp * 32; t < hi; t += blockDim.x) {
      const int64_t i = t + lane;
      const int d = i < hi ? static_cast<int>((key_at(i) >> shift) & 0xFFu) : kSortBins;
      const unsigned peers = __match_any_sync(0xffffffffu, d);
      if (d < kSortBins && lane == __ffs(peers) - 1) atomicAdd(&hist[d], __popc(peers));
    }
    cluster_sync();
    {
      const int d = threadIdx.x;
      int32_t total = 0, before_me = 0;
      if (d < kSortBins) {
        total = cluster_column_sum(hist, d);
        for (unsigned b = 0; b < blockIdx.x; ++b) before_me += cluster_peer(hist, b)[d];
      }
      const int32_t digit_start = digits_exclusive_scan(d < kSortBins ? total : 0);
      if (d < kSortBins) next[d] = digit_start + before_me;
    }
    cluster_sync();  // no block may clear its counts while another reads them

    for (int64_t t0 = lo; t0 < hi; t0 += blockDim.x) {
      for (int k = threadIdx.x; k < kSortWarps * kSortBins; k += blockDim.x) (&warp_count[0][0])[k] = 0;
      __syncthreads();
      const int64_t i = t0 + threadIdx.x;
      const bool valid = i < hi;
      const uint32_t key = valid ? key_at(i) : 0u;
      const int32_t id = valid ? (pass == 0 ? static_cast<int32_t>(i) : src_i[row0 + i]) : 0;
      const int d = valid ? static_cast<int>((key >> shift) & 0xFFu) : kSortBins;
      const unsigned peers = __match_any_sync(0xffffffffu, d);
      if (valid && lane == __ffs(peers) - 1) warp_count[warp][d] = __popc(peers);
      __syncthreads();
      if (threadIdx.x < kSortBins) {  // per digit: the warps' counts become their starts in the tile
        int32_t run = 0;
        for (int w = 0; w < kSortWarps; ++w) {
          const int32_t c = warp_count[w][threadIdx.x];
          warp_count[w][threadIdx.x] = run;
          run += c;
        }
        tile_total[threadIdx.x] = run;
      }
      __syncthreads();
      if (valid) {
        const int64_t at = row0 + next[d] + warp_count[warp][d] + __popc(peers & lanes_below);
        if (pass == 3) {
          reinterpret_cast<float*>(keys1)[at] = from_code(~key);
        } else {
          dst_k[at] = key;
        }
        dst_i[at] = id;
      }
      __syncthreads();
      if (threadIdx.x < kSortBins) next[threadIdx.x] += tile_total[threadIdx.x];
    }
    cluster_sync();  // this pass's writes reach the whole cluster before the next reads them
  }
}

}  // namespace

size_t sort_rows_scratch(int32_t n, int64_t vocab) { return layout(nullptr, n, vocab).total; }

std::string compact_rows(LogitsView logits, int32_t n, const RowIndex& row_index, void* scratch,
                         size_t scratch_bytes, int32_t* counts, CompactRows* rows, void* stream) {
  if (n <= 0) return "";
  // The grid holds a row per y; segment offsets are int.
  if (logits.vocab <= 0 || n > 65535 || static_cast<int64_t>(n) * logits.vocab > INT_MAX) {
    return too_many(n, logits.vocab);
  }
  const Layout l = layout(scratch, n, logits.vocab);
  if (l.total > scratch_bytes) return "sort_rows: scratch too small";
  *rows = CompactRows{l.compact, counts, l.full};
  const int64_t tiles = (logits.vocab + kCompactThreads - 1) / kCompactThreads;
  const int64_t per_row = std::clamp<int64_t>(kCompactBlocks / n, 1, tiles);
  return launch_chained("sort_rows compact_kernel", compact_kernel,
                        dim3(static_cast<unsigned>(per_row), static_cast<unsigned>(n)), dim3(kCompactThreads), stream,
                        logits, row_index, *rows);
}

std::string sort_full_rows(LogitsView logits, int32_t n, const RowIndex& row_index, void* scratch,
                           size_t scratch_bytes, const CompactRows& rows, SortedRows* sorted, void* stream) {
  if (n <= 0) return "";
  if (!full_sort_possible(logits.vocab)) return "sort_rows: no row of " + std::to_string(logits.vocab) + " needs it";
  if (logits.vocab <= 0 || n > 65535 || static_cast<int64_t>(n) * logits.vocab > INT_MAX) {
    return too_many(n, logits.vocab);
  }
  const Layout l = layout(scratch, n, logits.vocab);
  if (l.total > scratch_bytes) return "sort_rows: scratch too small";
  std::string launched = launch_split(cluster_sort_kernel, n, stream, "sort_rows cluster_sort_kernel", logits,
                                      row_index, rows.full, l.keys[0], l.ids[0], l.keys[1], l.ids[1]);
  if (!launched.empty()) return launched;
  *sorted = SortedRows{reinterpret_cast<const float*>(l.keys[1]), l.ids[1], rows.full};
  return "";
}

}  // namespace aph::samplers::cuda
