// Tail-free sampling on sorted rows (block 0 of the row's cluster), with
// TfsStage::apply_cpu's definition: the curvatures d_i = |p_i - 2 p_i+1 +
// p_i+2| of the sorted probabilities, normalized by their sum, accumulate
// from the top; once the running sum passes z at d_q, sorted positions q+1
// onwards go (the last live one always goes). The CPU's running sum only
// grows, so "every position after the first crossing" is its kept set too.
// The sorted order is the CPU's, so the two differ only in the rounding of
// the sums, never in how ties are split.
#include "plugins/samplers/cuda/sorted_stage.cuh"
#include "plugins/samplers/sorted_math.hpp"

namespace aph::samplers::cuda {
namespace {

// d_j for j = j0 .. j0 + kSortedItems - 1; 0 at and past n2 = live - 2.
__device__ void curvatures(const SortedProbs& prob, int64_t j0, int64_t n2, double (&d)[kSortedItems]) {
  double p[kSortedItems + 2];
  for (int k = 0; k < kSortedItems + 2; ++k) p[k] = j0 + k < n2 + 2 ? prob(j0 + k) : 0.0;
  for (int k = 0; k < kSortedItems; ++k) d[k] = j0 + k < n2 ? second_difference(p[k], p[k + 1], p[k + 2]) : 0.0;
}

// One row: x the logits, (sx, sid) its `live` live tokens sorted.
__device__ void tail_free_row(float* x, const float* sx, const int32_t* sid, int64_t live, double z) {
  if (live < 3) return;
  const SortedProbs prob{sx, sx[0], sorted_partition(sx, live)};
  const int64_t n2 = live - 2;
  const int64_t tile = static_cast<int64_t>(blockDim.x) * kSortedItems;

  double total = 0;
  for (int64_t base = 0; base < n2; base += tile) {
    double d[kSortedItems];
    curvatures(prob, base + static_cast<int64_t>(threadIdx.x) * kSortedItems, n2, d);
    for (int k = 0; k < kSortedItems; ++k) total += d[k];
  }
  total = block_sum(total);
  if (total <= 0) return;  // flat: no tail to cut (as the CPU)

  // The first q whose running sum of d / total passes z, tile by tile.
  int64_t cut = live - 1;  // sorted positions [cut, live) go
  double carry = 0;        // the running sum before this tile
  for (int64_t base = 0; base < n2; base += tile) {
    const int64_t j0 = base + static_cast<int64_t>(threadIdx.x) * kSortedItems;
    double d[kSortedItems], run[kSortedItems];
    curvatures(prob, j0, n2, d);
    double mine = 0;
    for (int k = 0; k < kSortedItems; ++k) {
      mine += d[k] / total;
      run[k] = mine;
    }
    double tile_sum = 0;
    const double before = carry + block_exclusive_sum(mine, &tile_sum);
    long long hit = LLONG_MAX;
    for (int k = 0; k < kSortedItems; ++k) {
      if (j0 + k < n2 && before + run[k] > z) {
        hit = j0 + k;
        break;
      }
    }
    hit = block_reduce(hit, MinOp{}, LLONG_MAX);
    if (hit != LLONG_MAX) {  // the same for every thread: the loop ends uniformly
      cut = hit + 1;
      break;
    }
    carry += tile_sum;
  }
  for (int64_t j = cut + threadIdx.x; j < live; j += blockDim.x) x[sid[j]] = -INFINITY;
}

struct TailFree {
  __device__ static void row(float* x, const float* sx, const int32_t* sid, int64_t live, float value) {
    tail_free_row(x, sx, sid, live, value);
  }
};

}  // namespace

std::string launch_tail_free(LogitsView logits, int32_t n, const Rows<Indexed<float>>& z, FullSortScratch full,
                             void* stream) {
  return launch_sorted_stage<TailFree>(logits, n, z, full, stream, "tail_free_kernel");
}

}  // namespace aph::samplers::cuda
