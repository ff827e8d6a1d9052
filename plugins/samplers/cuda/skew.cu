// Skew on sorted rows (block 0 of the row's cluster), with
// SkewStage::apply_cpu's definition: walking the sorted probabilities with
// their running sum C (clamped at 1), each live token's new log-probability
// is log(C^e - C_before^e), from skew_log_prob like the CPU's. Tied tokens get
// different values by their place in the order, which is the CPU's (ties by
// ascending id); only the rounding of the running sum differs.
#include "plugins/samplers/cuda/sorted_stage.cuh"
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

struct Skew {
  __device__ static void row(float* x, const float* sx, const int32_t* sid, int64_t live, double value) {
    skew_row(x, sx, sid, live, value);
  }
};

}  // namespace

std::string launch_skew(LogitsView logits, int32_t n, const Rows<Indexed<double>>& exponent, FullSortScratch full,
                        void* stream) {
  return launch_sorted_stage<Skew>(logits, n, exponent, full, stream, "skew_kernel");
}

}  // namespace aph::samplers::cuda
