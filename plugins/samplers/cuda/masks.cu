#include "plugins/samplers/cuda/block_reduce.cuh"
#include "plugins/samplers/cuda/kernels.hpp"

namespace aph::samplers::cuda {
namespace {

__global__ void __launch_bounds__(kThreads) scatter_kernel(LogitsView logits, const int32_t* row_index, const int32_t* offsets,
                               const int32_t* ids, const float* values) {
  dependent_start();
  const int r = blockIdx.x;
  float* x = logits.data + static_cast<int64_t>(row_index[r]) * logits.stride;
  for (int32_t k = offsets[r] + threadIdx.x; k < offsets[r + 1]; k += blockDim.x) {
    const int32_t id = ids[k];
    if (id < 0 || id >= logits.vocab) continue;
    if (values == nullptr) x[id] = -INFINITY;
    else x[id] += values[k];  // ids of one row are unique (the host merged them)
  }
}

__global__ void __launch_bounds__(kThreads) keep_only_kernel(LogitsView logits, const int32_t* row_index, const int32_t* offsets,
                                 const int32_t* ids) {
  dependent_start();
  const int r = blockIdx.x;
  float* x = logits.data + static_cast<int64_t>(row_index[r]) * logits.stride;
  const int32_t lo = offsets[r], hi = offsets[r + 1];
  for (int64_t t = threadIdx.x; t < logits.vocab; t += blockDim.x) {
    int32_t a = lo, b = hi;  // binary search in the sorted list
    while (a < b) {
      const int32_t mid = (a + b) / 2;
      if (ids[mid] < t) a = mid + 1;
      else b = mid;
    }
    if (a >= hi || ids[a] != t) x[t] = -INFINITY;
  }
}

}  // namespace

std::string launch_scatter(LogitsView logits, int32_t n, const int32_t* row_index, const int32_t* offsets,
                           const int32_t* ids, const float* values, void* stream) {
  if (n == 0) return "";
  return launch_chained("scatter_kernel", scatter_kernel, dim3(n), dim3(256), stream, logits, row_index, offsets, ids,
                        values);
}

std::string launch_keep_only(LogitsView logits, int32_t n, const int32_t* row_index, const int32_t* offsets,
                             const int32_t* ids, void* stream) {
  if (n == 0) return "";
  return launch_chained("keep_only_kernel", keep_only_kernel, dim3(n), dim3(kThreads), stream, logits, row_index,
                        offsets, ids);
}

}  // namespace aph::samplers::cuda
