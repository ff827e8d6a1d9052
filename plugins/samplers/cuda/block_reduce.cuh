// Block-wide reductions and scans for the sampler kernels (one block per
// row). Every thread of the block must call them.
#pragma once

#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>
#include <string>

#include "core/common/cuda_pdl.cuh"

namespace aph::samplers::cuda {

// Threads a block of every sampler kernel at most; each kernel declares it
// (__launch_bounds__) so the compiler keeps registers within what 512
// threads may hold (a kernel over 128 registers fails to launch).
constexpr int kThreads = 512;

template <typename T>
__device__ T shfl_xor(T v, int lane_mask) {
  return __shfl_xor_sync(0xffffffffu, v, lane_mask);
}

// Two or three sums reduced together (one set of barriers for all, each
// summed in the order a reduction of it alone would use).
struct Sum2 {
  double a, b;
};
__device__ inline Sum2 shfl_xor(Sum2 v, int lane_mask) { return {shfl_xor(v.a, lane_mask), shfl_xor(v.b, lane_mask)}; }
struct Sum3 {
  double a, b, c;
};
__device__ inline Sum3 shfl_xor(Sum3 v, int lane_mask) {
  return {shfl_xor(v.a, lane_mask), shfl_xor(v.b, lane_mask), shfl_xor(v.c, lane_mask)};
}

template <typename T, typename Op>
__device__ T warp_reduce(T v, Op op) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, shfl_xor(v, o));
  return v;
}

// Reduces v over the block; every thread gets the result.
template <typename T, typename Op>
__device__ T block_reduce(T v, Op op, T identity) {
  __shared__ T partial[32];
  __shared__ T result;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warp_reduce(v, op);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    T w = lane < static_cast<int>((blockDim.x + 31) / 32) ? partial[lane] : identity;
    w = warp_reduce(w, op);
    if (lane == 0) result = w;
  }
  __syncthreads();
  T out = result;
  __syncthreads();
  return out;
}

struct MaxOp {
  template <typename T>
  __device__ T operator()(T a, T b) const { return a > b ? a : b; }
};
struct MinOp {
  template <typename T>
  __device__ T operator()(T a, T b) const { return a < b ? a : b; }
};
struct SumOp {
  template <typename T>
  __device__ T operator()(T a, T b) const { return a + b; }
  __device__ Sum2 operator()(Sum2 x, Sum2 y) const { return {x.a + y.a, x.b + y.b}; }
  __device__ Sum3 operator()(Sum3 x, Sum3 y) const { return {x.a + y.a, x.b + y.b, x.c + y.c}; }
};

__device__ inline float block_max(float v) { return block_reduce(v, MaxOp{}, -FLT_MAX); }
__device__ inline double block_sum(double v) { return block_reduce(v, SumOp{}, 0.0); }

// (value, index) argmax; ties go to the lowest index, like the CPU loop.
struct ArgMax {
  double value;
  int32_t index;
};
__device__ inline ArgMax shfl_xor(ArgMax v, int lane_mask) {
  return {shfl_xor(v.value, lane_mask), shfl_xor(v.index, lane_mask)};
}
__device__ inline ArgMax better(ArgMax a, ArgMax b) {
  if (a.index < 0) return b;
  if (b.index < 0) return a;
  if (b.value > a.value || (b.value == a.value && b.index < a.index)) return b;
  return a;
}
struct ArgMaxOp {
  __device__ ArgMax operator()(ArgMax a, ArgMax b) const { return better(a, b); }
};
__device__ inline ArgMax block_argmax(ArgMax v) { return block_reduce(v, ArgMaxOp{}, ArgMax{0.0, -1}); }

// Exclusive prefix sum of v in thread order; *total gets the sum.
__device__ inline int block_exclusive_add(int v, int* total) {
  __shared__ int warp_sums[32];
  __shared__ int sum;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int inclusive = v;
  for (int o = 1; o < 32; o <<= 1) {
    const int up = __shfl_up_sync(0xffffffffu, inclusive, o);
    if (lane >= o) inclusive += up;
  }
  if (lane == 31) warp_sums[warp] = inclusive;
  __syncthreads();
  if (threadIdx.x == 0) {
    int run = 0;
    for (int w = 0; w < static_cast<int>((blockDim.x + 31) / 32); ++w) {
      const int c = warp_sums[w];
      warp_sums[w] = run;
      run += c;
    }
    sum = run;
  }
  __syncthreads();
  const int out = warp_sums[warp] + inclusive - v;
  *total = sum;
  __syncthreads();
  return out;
}

// Exclusive prefix count of `flag` in thread order; *total gets the sum.
__device__ inline int block_exclusive_count(bool flag, int* total) { return block_exclusive_add(flag ? 1 : 0, total); }

inline std::string launch_error(const char* what) {
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return "";
  return std::string(what) + ": " + cudaGetErrorString(e);
}

// The sampler chain is a row of short kernels on one stream. Each is
// launched as a programmatic dependent of the one before (cuda_pdl.cuh): its
// blocks are placed while that one still runs, and its first call,
// dependent_start(), lets the next kernel be placed too and then waits for
// the previous kernel's writes. Every kernel launched with launch_chained (or
// launch_split) calls it before it touches memory.
__device__ inline void dependent_start() {
  cuda_pdl::allow_dependents();
  cuda_pdl::wait_for_producer();
}

template <typename... Params, typename... Args>
std::string launch_chained(const char* name, void (*kernel)(Params...), dim3 grid, dim3 block, void* stream,
                           Args... args) {
  const cudaError_t e =
      cuda_pdl::launch_dependent(kernel, grid, block, 0, static_cast<cudaStream_t>(stream), args...);
  if (e != cudaSuccess) return std::string(name) + ": " + cudaGetErrorString(e);
  return launch_error(name);
}

}  // namespace aph::samplers::cuda
