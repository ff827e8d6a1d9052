// What the kernels over sorted rows (tail-free, skew, mirostat) share: the
// probability of a sorted position, and a block-wide prefix sum for walking
// a row in sorted order, tile by tile. One block walks a row; every thread of the
// block must call the block-wide functions (blockDim.x a multiple of 32).
#pragma once

#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

#include "plugins/samplers/cuda/block_reduce.cuh"
#include "plugins/samplers/cuda/kernels.hpp"

namespace aph::samplers::cuda {

// Consecutive sorted positions per thread in a tile: thread order is sorted
// order, so one exclusive sum over the threads orders a whole tile.
constexpr int kSortedItems = 4;

// softmax of the sorted logits, as the CPU's softmax(): exp(x - max) / z in
// double, z the sum over the live tokens.
struct SortedProbs {
  const float* x;  // sorted descending: x[0] is the max
  float m;
  double z;
  __device__ double operator()(int64_t j) const { return exp(static_cast<double>(x[j]) - m) / z; }
};

// The sum of v over the threads before this one; *total gets the block's sum.
__device__ inline double block_exclusive_sum(double v, double* total) {
  __shared__ double warp_sums[32];
  __shared__ double block_total;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  double inclusive = v;
  for (int o = 1; o < 32; o <<= 1) {
    const double up = __shfl_up_sync(0xffffffffu, inclusive, o);
    if (lane >= o) inclusive += up;
  }
  double exclusive = __shfl_up_sync(0xffffffffu, inclusive, 1);
  if (lane == 0) exclusive = 0;
  if (lane == 31) warp_sums[warp] = inclusive;
  __syncthreads();
  if (threadIdx.x == 0) {
    double run = 0;
    for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w) {
      const double c = warp_sums[w];
      warp_sums[w] = run;
      run += c;
    }
    block_total = run;
  }
  __syncthreads();
  const double out = warp_sums[warp] + exclusive;
  *total = block_total;
  __syncthreads();  // the next call rewrites warp_sums
  return out;
}

// The softmax partition of a sorted row's first `live` logits, m = x[0].
__device__ inline double sorted_partition(const float* x, int64_t live) {
  double z = 0;
  for (int64_t j = threadIdx.x; j < live; j += blockDim.x) z += exp(static_cast<double>(x[j]) - x[0]);
  return block_sum(z);
}

}  // namespace aph::samplers::cuda
