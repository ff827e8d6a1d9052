// Whole rows sorted by descending logit, for the stages whose definition
// walks the sorted distribution (tail-free, skew, mirostat). cub's radix sort
// is stable, so with ids laid out in ascending order (and -0.0 keyed as
// +0.0) it yields exactly the CPU's std::stable_sort by value: ties by
// ascending id. Ties decide which tokens a cut splits off and what
// skew gives each, so a selection that only keeps tie groups together (like
// select.cu's) would not do here.
#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <climits>

#include "plugins/samplers/cuda/block_reduce.cuh"
#include "plugins/samplers/cuda/kernels.hpp"

namespace aph::samplers::cuda {
namespace {

// One device-wide sort over all rows of a chunk: the key is (row slot, value
// descending), 32 + log2(rows) bits, which keeps the whole GPU busy where a
// segmented sort gives each row a single block (4x slower at 64 x 128k).
constexpr int kGatherBlocks = 16;  // per row: enough loads in flight to stream a row

struct Layout {
  uint64_t* keys[2];
  int32_t* ids[2];
  void* temp;
  size_t temp_bytes;
  size_t total;
};

size_t align_up(size_t bytes) { return (bytes + 255) & ~size_t{255}; }

int row_bits(int32_t n) {
  int bits = 0;
  while ((int64_t{1} << bits) < n) ++bits;
  return bits;
}

// Carves the scratch (base may be null: sizes only).
Layout layout(void* base, int32_t n, int64_t vocab, cudaError_t* error) {
  Layout l{};
  const size_t items = static_cast<size_t>(n) * static_cast<size_t>(vocab);
  cub::DoubleBuffer<uint64_t> keys(nullptr, nullptr);
  cub::DoubleBuffer<int32_t> ids(nullptr, nullptr);
  if (items <= static_cast<size_t>(INT_MAX)) {  // else sort_rows refuses
    *error = cub::DeviceRadixSort::SortPairs(nullptr, l.temp_bytes, keys, ids, static_cast<int>(items), 0,
                                             32 + row_bits(n));
  }
  auto* p = static_cast<char*>(base);
  size_t at = 0;
  auto take = [&](size_t bytes) {
    void* out = p == nullptr ? nullptr : p + at;
    at += align_up(bytes);
    return out;
  };
  for (int b = 0; b < 2; ++b) {
    l.keys[b] = static_cast<uint64_t*>(take(items * sizeof(uint64_t)));
    l.ids[b] = static_cast<int32_t*>(take(items * sizeof(int32_t)));
  }
  l.temp = take(l.temp_bytes);
  l.total = at;
  return l;
}

// Larger float, larger code; -0.0 codes as +0.0 (the CPU's comparison finds
// them equal, so their ids must decide).
__device__ uint32_t ascending_code(float f) {
  const uint32_t u = __float_as_uint(f == 0.0f ? 0.0f : f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
__device__ float from_code(uint32_t c) { return __uint_as_float((c & 0x80000000u) ? (c & 0x7FFFFFFFu) : ~c); }

// Keys (slot, ~code): ascending order is row by row, values descending; the
// sort is stable and ids ascend within a row, so ties come out by id.
__global__ void gather_kernel(LogitsView logits, const int32_t* row_index, uint64_t* keys, int32_t* ids) {
  const int64_t vocab = logits.vocab;
  const int64_t r = blockIdx.y;
  const float* x = logits.data + static_cast<int64_t>(row_index[r]) * logits.stride;
  uint64_t* k = keys + r * vocab;
  int32_t* id = ids + r * vocab;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < vocab;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    k[i] = (static_cast<uint64_t>(r) << 32) | (~ascending_code(x[i]));
    id[i] = static_cast<int32_t>(i);
  }
}

// The sorted values back as floats, for the stage kernels.
__global__ void unpack_kernel(const uint64_t* keys, float* values, int64_t items) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < items;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    values[i] = from_code(~static_cast<uint32_t>(keys[i]));
  }
}

}  // namespace

size_t sort_rows_scratch(int32_t n, int64_t vocab) {
  cudaError_t error = cudaSuccess;
  return layout(nullptr, n, vocab, &error).total;
}

std::string sort_rows(LogitsView logits, int32_t n, const int32_t* row_index, void* scratch, size_t scratch_bytes,
                      SortedRows* sorted, void* stream) {
  if (n <= 0) return "";
  // cub counts items in int here; the grid holds a row per y.
  if (logits.vocab <= 0 || n > 65535 || static_cast<int64_t>(n) * logits.vocab > INT_MAX) {
    return "sort_rows: " + std::to_string(n) + " rows of " + std::to_string(logits.vocab) +
           " are too many to sort at once";
  }
  cudaError_t error = cudaSuccess;
  const Layout l = layout(scratch, n, logits.vocab, &error);
  if (error != cudaSuccess) return std::string("sort_rows: ") + cudaGetErrorString(error);
  if (l.total > scratch_bytes) return "sort_rows: scratch too small";
  auto s = static_cast<cudaStream_t>(stream);
  gather_kernel<<<dim3(kGatherBlocks, static_cast<unsigned>(n)), kThreads, 0, s>>>(logits, row_index, l.keys[0],
                                                                                    l.ids[0]);
  std::string launched = launch_error("sort_rows gather_kernel");
  if (!launched.empty()) return launched;
  const int items = static_cast<int>(n * logits.vocab);
  cub::DoubleBuffer<uint64_t> keys(l.keys[0], l.keys[1]);
  cub::DoubleBuffer<int32_t> ids(l.ids[0], l.ids[1]);
  size_t temp_bytes = l.temp_bytes;
  error = cub::DeviceRadixSort::SortPairs(l.temp, temp_bytes, keys, ids, items, 0, 32 + row_bits(n), s);
  if (error != cudaSuccess) return std::string("sort_rows: cub radix sort: ") + cudaGetErrorString(error);
  // The pass count is fixed by the key bits, so cub settles on the host,
  // before the sort runs, which buffer holds the result; the other one is
  // free for the unpacked values.
  auto* values = reinterpret_cast<float*>(keys.Alternate());
  const int blocks = static_cast<int>(std::min<int64_t>((items + kThreads - 1) / kThreads, 1024));
  unpack_kernel<<<blocks, kThreads, 0, s>>>(keys.Current(), values, items);
  sorted->logits = values;
  sorted->ids = ids.Current();
  return launch_error("sort_rows radix sort");
}

}  // namespace aph::samplers::cuda
