// The sorted-row stages' two paths (see kernels.hpp). compact_kernel gathers
// each row's live logits as (value, id) keys, up to kCompactCap of them, and
// counts them all; the stage's compact kernel sorts a row that fits in shared
// memory and marks the rest full. Those are sorted here whole by cub's stable
// segmented radix sort over (value code) keys with ids ascending alongside,
// which gives ties by ascending id like the CPU's std::stable_sort; rows not
// marked have empty segments and cost the sort nothing, so a step where every
// row fits pays no full sort but its (empty) launches. Ties decide which tokens
// a cut splits off and what skew gives each, so a selection that only keeps
// tie groups together (like select.cu's) would not do here.
#include <cub/device/device_segmented_radix_sort.cuh>

#include <algorithm>
#include <climits>

#include "plugins/samplers/cuda/compact_row.cuh"

namespace aph::samplers::cuda {
namespace {

constexpr int kCompactThreads = 256;
constexpr int kGatherBlocks = 16;   // per full row: enough loads in flight to stream it
constexpr int kCompactBlocks = 512;  // over all rows of a chunk, to stream the logits

struct Layout {
  uint64_t* compact;
  int32_t* full;
  int32_t* begin;
  int32_t* end;
  uint32_t* keys[2];
  int32_t* ids[2];
  void* temp;
  size_t temp_bytes;
  size_t total;
};

size_t align_up(size_t bytes) { return (bytes + 255) & ~size_t{255}; }

// Carves the scratch (base may be null: sizes only). The full sort's part is
// there only when a row can hold more than kCompactCap live tokens.
Layout layout(void* base, int32_t n, int64_t vocab, cudaError_t* error) {
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
  l.begin = static_cast<int32_t*>(take(rows * sizeof(int32_t)));
  l.end = static_cast<int32_t*>(take(rows * sizeof(int32_t)));
  const size_t items = rows * static_cast<size_t>(vocab);
  if (full_sort_possible(vocab) && items <= static_cast<size_t>(INT_MAX)) {  // else the sort refuses
    cub::DoubleBuffer<uint32_t> keys(nullptr, nullptr);
    cub::DoubleBuffer<int32_t> ids(nullptr, nullptr);
    *error = cub::DeviceSegmentedRadixSort::SortPairs(nullptr, l.temp_bytes, keys, ids, static_cast<int>(items), n,
                                                      l.begin, l.end, 0, 32);
    for (int b = 0; b < 2; ++b) {
      l.keys[b] = static_cast<uint32_t*>(take(items * sizeof(uint32_t)));
      l.ids[b] = static_cast<int32_t*>(take(items * sizeof(int32_t)));
    }
    l.temp = take(l.temp_bytes);
  }
  l.total = at;
  return l;
}

std::string too_many(int32_t n, int64_t vocab) {
  return "sort_rows: " + std::to_string(n) + " rows of " + std::to_string(vocab) + " are too many to sort at once";
}

// Live logits of row blockIdx.y appended (warp by warp, in no particular
// order) to its compact keys while they fit; the count covers them all.
__global__ void compact_kernel(LogitsView logits, const __grid_constant__ RowIndex row_index, CompactRows c) {
  const int64_t vocab = logits.vocab;
  const int32_t r = blockIdx.y;
  const float* x = logits.data + static_cast<int64_t>(row_index[r]) * logits.stride;
  int32_t* count = c.counts + r;
  uint64_t* out = c.keys + static_cast<int64_t>(r) * kCompactCap;
  const int lane = threadIdx.x & 31;
  // The bounds are the block's, so whole warps go round together.
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * blockDim.x; base < vocab;
       base += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = base + threadIdx.x;
    const float v = i < vocab ? x[i] : -INFINITY;
    const bool live = v != -INFINITY;
    const unsigned ballot = __ballot_sync(0xffffffffu, live);
    if (ballot == 0) continue;
    int32_t first = 0;
    if (lane == 0) first = atomicAdd(count, __popc(ballot));
    first = __shfl_sync(0xffffffffu, first, 0);
    const int32_t at = first + __popc(ballot & ((1u << lane) - 1u));
    if (live && at < kCompactCap) out[at] = compact_key(v, i);
  }
}

// Keys (~code, so ascending is values descending) and ascending ids of the
// rows marked full; the sort is stable, so ties come out by id.
__global__ void gather_kernel(LogitsView logits, const __grid_constant__ RowIndex row_index, const int32_t* full,
                              uint32_t* keys,
                              int32_t* ids) {
  const int64_t r = blockIdx.y;
  if (!full[r]) return;
  const int64_t vocab = logits.vocab;
  const float* x = logits.data + static_cast<int64_t>(row_index[r]) * logits.stride;
  uint32_t* k = keys + r * vocab;
  int32_t* id = ids + r * vocab;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < vocab;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    k[i] = ~ascending_code(x[i]);
    id[i] = static_cast<int32_t>(i);
  }
}

// The sorted values of the full rows back as floats, for the stage kernels.
__global__ void unpack_kernel(const uint32_t* keys, const int32_t* full, float* values, int64_t vocab) {
  const int64_t r = blockIdx.y;
  if (!full[r]) return;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < vocab;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    values[r * vocab + i] = from_code(~keys[r * vocab + i]);
  }
}

}  // namespace

size_t sort_rows_scratch(int32_t n, int64_t vocab) {
  cudaError_t error = cudaSuccess;
  return layout(nullptr, n, vocab, &error).total;
}

std::string compact_rows(LogitsView logits, int32_t n, const RowIndex& row_index, void* scratch,
                         size_t scratch_bytes, int32_t* counts, CompactRows* rows, void* stream) {
  if (n <= 0) return "";
  // The grid holds a row per y; segment offsets are int.
  if (logits.vocab <= 0 || n > 65535 || static_cast<int64_t>(n) * logits.vocab > INT_MAX) {
    return too_many(n, logits.vocab);
  }
  cudaError_t error = cudaSuccess;
  const Layout l = layout(scratch, n, logits.vocab, &error);
  if (error != cudaSuccess) return std::string("sort_rows: ") + cudaGetErrorString(error);
  if (l.total > scratch_bytes) return "sort_rows: scratch too small";
  *rows = CompactRows{l.compact, counts, l.full, l.begin, l.end};
  const int64_t tiles = (logits.vocab + kCompactThreads - 1) / kCompactThreads;
  const int64_t per_row = std::clamp<int64_t>(kCompactBlocks / n, 1, tiles);
  compact_kernel<<<dim3(static_cast<unsigned>(per_row), static_cast<unsigned>(n)), kCompactThreads, 0,
                   static_cast<cudaStream_t>(stream)>>>(logits, row_index, *rows);
  return launch_error("sort_rows compact_kernel");
}

std::string sort_full_rows(LogitsView logits, int32_t n, const RowIndex& row_index, void* scratch,
                           size_t scratch_bytes, const CompactRows& rows, SortedRows* sorted, void* stream) {
  if (n <= 0) return "";
  if (!full_sort_possible(logits.vocab)) return "sort_rows: no row of " + std::to_string(logits.vocab) + " needs it";
  if (logits.vocab <= 0 || n > 65535 || static_cast<int64_t>(n) * logits.vocab > INT_MAX) {
    return too_many(n, logits.vocab);
  }
  cudaError_t error = cudaSuccess;
  const Layout l = layout(scratch, n, logits.vocab, &error);
  if (error != cudaSuccess) return std::string("sort_rows: ") + cudaGetErrorString(error);
  if (l.total > scratch_bytes) return "sort_rows: scratch too small";
  auto s = static_cast<cudaStream_t>(stream);
  gather_kernel<<<dim3(kGatherBlocks, static_cast<unsigned>(n)), kThreads, 0, s>>>(logits, row_index, rows.full,
                                                                                    l.keys[0], l.ids[0]);
  std::string launched = launch_error("sort_rows gather_kernel");
  if (!launched.empty()) return launched;
  const int items = static_cast<int>(n * logits.vocab);
  cub::DoubleBuffer<uint32_t> keys(l.keys[0], l.keys[1]);
  cub::DoubleBuffer<int32_t> ids(l.ids[0], l.ids[1]);
  size_t temp_bytes = l.temp_bytes;
  error = cub::DeviceSegmentedRadixSort::SortPairs(l.temp, temp_bytes, keys, ids, items, n, rows.begin, rows.end,
                                                   0, 32, s);
  if (error != cudaSuccess) return std::string("sort_rows: cub segmented radix sort: ") + cudaGetErrorString(error);
  // The pass count is fixed by the key bits, so cub settles on the host,
  // before the sort runs, which buffer holds the result; the other one is
  // free for the unpacked values.
  auto* values = reinterpret_cast<float*>(keys.Alternate());
  unpack_kernel<<<dim3(kGatherBlocks, static_cast<unsigned>(n)), kThreads, 0, s>>>(keys.Current(), rows.full, values,
                                                                                    logits.vocab);
  *sorted = SortedRows{values, ids.Current(), rows.full};
  return launch_error("sort_rows segmented radix sort");
}

}  // namespace aph::samplers::cuda
