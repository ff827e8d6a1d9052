// Skew on sorted rows (one block per row), with
// SkewStage::apply_cpu's definition: walking the sorted probabilities with
// their running sum C (clamped at 1), each live token's new log-probability
// is log(C^e - C_before^e), from skew_log_prob like the CPU's. Tied tokens get
// different values by their place in the order, which is the CPU's (ties by
// ascending id); only the rounding of the running sum differs.
#include "plugins/samplers/cuda/compact_row.cuh"
#include "plugins/samplers/cuda/sorted_scan.cuh"
#include "plugins/samplers/sorted_math.hpp"

namespace aph::samplers::cuda {
namespace {

// One row: x the logits, (sx, sid) its `live` live tokens sorted.
__device__ void skew_row(float* x, const float* sx, const int32_t* sid, int64_t live, double e) {
  if (live == 0) return;
  const SortedProbs prob{sx, sx[0], sorted_partition(sx, live)};
  const int64_t tile = static_cast<int64_t>(blockDim.x) * kSortedItems;
  double carry = 0;  // the running sum before this tile
  for (int64_t base = 0; base < live; base += tile) {
    const int64_t j0 = base + static_cast<int64_t>(threadIdx.x) * kSortedItems;
    double p[kSortedItems], run[kSortedItems];
    double mine = 0;
    for (int k = 0; k < kSortedItems; ++k) {
      p[k] = j0 + k < live ? prob(j0 + k) : 0.0;
      mine += p[k];
      run[k] = mine;
    }
    double tile_sum = 0;
    const double before = carry + block_exclusive_sum(mine, &tile_sum);
    for (int k = 0; k < kSortedItems; ++k) {
      if (j0 + k >= live) break;
      const double cum = fmin(1.0, before + run[k]);
      x[sid[j0 + k]] = static_cast<float>(skew_log_prob(cum, p[k], e));
    }
    carry += tile_sum;
  }
}

__global__ void skew_compact_kernel(LogitsView logits, const int32_t* row_index, const double* exponents,
                                    CompactRows rows) {
  __shared__ CompactSmem s;
  const int64_t live = take_compact_row(rows, blockIdx.x, logits.vocab, true, s);
  if (live < 0) return;  // the full kernel's
  skew_row(logits.data + static_cast<int64_t>(row_index[blockIdx.x]) * logits.stride, s.row.x, s.row.id, live,
           exponents[blockIdx.x]);
}

__global__ void skew_kernel(LogitsView logits, const int32_t* row_index, const double* exponents, SortedRows sorted) {
  if (!sorted.full[blockIdx.x]) return;  // done by the compact kernel
  const int64_t vocab = logits.vocab;
  const float* sx = sorted.logits + static_cast<int64_t>(blockIdx.x) * vocab;
  skew_row(logits.data + static_cast<int64_t>(row_index[blockIdx.x]) * logits.stride, sx,
           sorted.ids + static_cast<int64_t>(blockIdx.x) * vocab, sorted_live(sx, vocab), exponents[blockIdx.x]);
}

}  // namespace

std::string launch_skew_compact(LogitsView logits, int32_t n, const int32_t* row_index, const double* exponent,
                                CompactRows rows, void* stream) {
  if (n == 0) return "";
  skew_compact_kernel<<<n, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(logits, row_index, exponent, rows);
  return launch_error("skew_compact_kernel");
}

std::string launch_skew(LogitsView logits, int32_t n, const int32_t* row_index, const double* exponent,
                        SortedRows sorted, void* stream) {
  if (n == 0) return "";
  skew_kernel<<<n, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(logits, row_index, exponent, sorted);
  return launch_error("skew_kernel");
}

}  // namespace aph::samplers::cuda
