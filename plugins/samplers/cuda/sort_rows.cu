// Whole rows sorted by descending logit, for the stages whose definition
// walks the sorted distribution (tail-free, skew, mirostat). cub's radix sort
// is stable and treats -0.0 and +0.0 as equal, so with ids laid out in
// ascending order it yields exactly the CPU's std::stable_sort by value:
// ties by ascending id. Ties decide which tokens a cut splits off and what
// skew gives each, so a selection that only keeps tie groups together (like
// select.cu's) would not do here.
#include <cub/device/device_segmented_radix_sort.cuh>

#include <climits>

#include "plugins/samplers/cuda/block_reduce.cuh"
#include "plugins/samplers/cuda/kernels.hpp"

namespace aph::samplers::cuda {
namespace {

constexpr int kGatherBlocks = 16;  // per row: enough loads in flight to stream a row

struct Layout {
  float* keys[2];
  int32_t* ids[2];
  int32_t* offsets;  // n + 1 segment bounds
  void* temp;
  size_t temp_bytes;
  size_t total;
};

size_t align_up(size_t bytes) { return (bytes + 255) & ~size_t{255}; }

// Carves the scratch (base may be null: sizes only).
Layout layout(void* base, int32_t n, int64_t vocab, cudaError_t* error) {
  Layout l{};
  const size_t items = static_cast<size_t>(n) * static_cast<size_t>(vocab);
  cub::DoubleBuffer<float> keys(nullptr, nullptr);
  cub::DoubleBuffer<int32_t> ids(nullptr, nullptr);
  if (items <= static_cast<size_t>(INT_MAX)) {  // else sort_rows refuses
    *error = cub::DeviceSegmentedRadixSort::SortPairsDescending(
        nullptr, l.temp_bytes, keys, ids, static_cast<int>(items), n, static_cast<const int32_t*>(nullptr),
        static_cast<const int32_t*>(nullptr), 0, static_cast<int>(sizeof(float) * 8));
  }
  auto* p = static_cast<char*>(base);
  size_t at = 0;
  auto take = [&](size_t bytes) {
    void* out = p == nullptr ? nullptr : p + at;
    at += align_up(bytes);
    return out;
  };
  for (int b = 0; b < 2; ++b) {
    l.keys[b] = static_cast<float*>(take(items * sizeof(float)));
    l.ids[b] = static_cast<int32_t*>(take(items * sizeof(int32_t)));
  }
  l.offsets = static_cast<int32_t*>(take((static_cast<size_t>(n) + 1) * sizeof(int32_t)));
  l.temp = take(l.temp_bytes);
  l.total = at;
  return l;
}

// Copies each active row with its ids 0..vocab-1 and writes the segment bounds.
__global__ void gather_kernel(LogitsView logits, const int32_t* row_index, float* keys, int32_t* ids,
                              int32_t* offsets) {
  const int64_t vocab = logits.vocab;
  const int64_t r = blockIdx.y;
  const float* x = logits.data + static_cast<int64_t>(row_index[r]) * logits.stride;
  float* k = keys + r * vocab;
  int32_t* id = ids + r * vocab;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < vocab;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    k[i] = x[i];
    id[i] = static_cast<int32_t>(i);
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    offsets[r] = static_cast<int32_t>(r * vocab);
    if (r + 1 == static_cast<int64_t>(gridDim.y)) offsets[r + 1] = static_cast<int32_t>((r + 1) * vocab);
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
  // cub counts items in int.
  if (logits.vocab <= 0 || static_cast<int64_t>(n) * logits.vocab > INT_MAX) {
    return "sort_rows: " + std::to_string(n) + " rows of " + std::to_string(logits.vocab) + " are too many to sort at once";
  }
  cudaError_t error = cudaSuccess;
  const Layout l = layout(scratch, n, logits.vocab, &error);
  if (error != cudaSuccess) return std::string("sort_rows: ") + cudaGetErrorString(error);
  if (l.total > scratch_bytes) return "sort_rows: scratch too small";
  auto s = static_cast<cudaStream_t>(stream);
  gather_kernel<<<dim3(kGatherBlocks, static_cast<unsigned>(n)), kThreads, 0, s>>>(logits, row_index, l.keys[0],
                                                                                    l.ids[0], l.offsets);
  std::string launched = launch_error("sort_rows gather_kernel");
  if (!launched.empty()) return launched;
  cub::DoubleBuffer<float> keys(l.keys[0], l.keys[1]);
  cub::DoubleBuffer<int32_t> ids(l.ids[0], l.ids[1]);
  size_t temp_bytes = l.temp_bytes;
  error = cub::DeviceSegmentedRadixSort::SortPairsDescending(l.temp, temp_bytes, keys, ids,
                                                             static_cast<int>(n * logits.vocab), n,
                                                             static_cast<const int32_t*>(l.offsets),
                                                             static_cast<const int32_t*>(l.offsets + 1), 0,
                                                             static_cast<int>(sizeof(float) * 8), s);
  if (error != cudaSuccess) return std::string("sort_rows: cub radix sort: ") + cudaGetErrorString(error);
  // The pass count is fixed by the key bits, so cub settles which buffer
  // holds the result on the host, before the sort runs.
  sorted->logits = keys.Current();
  sorted->ids = ids.Current();
  return launch_error("sort_rows radix sort");
}

}  // namespace aph::samplers::cuda
