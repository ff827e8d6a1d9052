// One logits row spread over a thread block cluster (sm_90): with one block
// per row a 64-row batch keeps only 64 of the H200's 132 multiprocessors busy,
// each with too few loads in flight, so a pass over 128k logits ran at about
// 1 TB/s. Here a row is split over kRowBlocks blocks of one cluster (grid
// (kRowBlocks, rows), blockIdx.y = the row's slot) and the blocks combine
// their partial reductions through distributed shared memory.
//
// Every block of a cluster gets the same reduced value: the partials are
// combined in rank order. Kernels built for older GPUs (or launched without
// a cluster) run one block per row with the same code.
//
// A few rows leave most of the GPU idle, and a pass whose tokens each need a
// double exp is bound by the cluster's FP64 units: up to kWideRows rows get
// clusters of kWideBlocks (a size Hopper allows only on request, so it is
// tried per kernel and dropped where the GPU cannot place it).
#pragma once

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <string>

#include "plugins/samplers/cuda/block_reduce.cuh"

namespace aph::samplers::cuda {

constexpr int kRowBlocks = 8;    // the portable maximum cluster size
constexpr int kWideBlocks = 16;  // Hopper's largest, on request
constexpr int kWideRows = 4;

// This thread's first element of the row, and the stride between its elements.
__device__ inline int64_t split_first() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline int64_t split_step() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// A barrier over the row's cluster that also orders its memory accesses
// (shared, distributed shared and global): a plain block barrier when the
// row has one block.
__device__ inline void cluster_sync() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (gridDim.x > 1) {
    cooperative_groups::this_cluster().sync();
    return;
  }
#endif
  __syncthreads();
}

// Block `rank` of the row's cluster's copy of the shared variable *p.
template <typename T>
__device__ inline T* cluster_peer(T* p, unsigned rank) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (gridDim.x > 1) return cooperative_groups::this_cluster().map_shared_rank(p, rank);
#endif
  (void)rank;
  return p;
}

// out[r] = block r's copy of *p for every block r of the row's cluster,
// thread r loading it: one distributed shared memory round trip (a few
// hundred cycles) for all of them, where a loop that combined each value as
// it arrived waited for up to 16 in turn, in every reduction of every
// sampler kernel. out is this block's shared memory; every thread calls, and
// all may read out after.
template <typename T>
__device__ inline void cluster_gather(const T* p, T* out) {
  if (threadIdx.x < gridDim.x) out[threadIdx.x] = *cluster_peer(p, threadIdx.x);
  __syncthreads();
}

// Sums of column `col` of every block's array p, over the row's cluster in
// rank order: the peers' values are loaded kBatch at a time before any is
// added (an L2-like round trip each).
template <typename T>
__device__ inline T cluster_column_sum(const T* p, int col) {
  constexpr unsigned kBatch = 4;
  T total = 0;
  for (unsigned r0 = 0; r0 < gridDim.x; r0 += kBatch) {
    T v[kBatch];
#pragma unroll
    for (unsigned j = 0; j < kBatch; ++j) v[j] = r0 + j < gridDim.x ? cluster_peer(p, r0 + j)[col] : T{0};
#pragma unroll
    for (unsigned j = 0; j < kBatch; ++j) total += v[j];
  }
  return total;
}

// Combines each block's value v (the same in all of a block's threads) over
// the row's cluster; every thread of every block gets the same result.
//
// Lane r of warp 0 loads block r's value and the lanes combine as a tree
// (rank r with r ^ 8, then ^ 4, ^ 2, ^ 1; lane 0's result). Every block
// builds the same tree from the same values, so all agree bit for bit. The
// H200 profile of dynamic temperature (stop 19) showed why not a loop over
// the ranks in every thread: a statistic's combine is two double exps, the
// kernel was bound by the multiprocessor's FP64 rate, and 512 threads each
// combining 16 values in turn were a quarter of its instructions.
template <typename T, typename Op>
__device__ T cluster_combine(T v, Op op, T identity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (gridDim.x > 1) {
    static_assert(kWideBlocks <= 32, "one lane a block");
    __shared__ T slot;
    __shared__ T result;
    if (threadIdx.x == 0) slot = v;
    cluster_sync();
    if (threadIdx.x < 32) {
      T w = threadIdx.x < gridDim.x ? *cluster_peer(&slot, threadIdx.x) : identity;
      for (int o = kWideBlocks / 2; o > 0; o >>= 1) w = op(w, shfl_xor(w, o));
      if (threadIdx.x == 0) result = w;
    }
    // No block may leave, or rewrite its slot, while another still reads
    // it; and result is this block's once warp 0 has passed here. The next
    // call rewrites result only after its own first barrier, which every
    // thread reaches after reading this one.
    cluster_sync();
    v = result;
  }
#endif
  return v;
}

// Reduces v over every thread of the row's cluster; all of them get the result.
template <typename T, typename Op>
__device__ T split_reduce(T v, Op op, T identity) {
  return cluster_combine(block_reduce(v, op, identity), op, identity);
}

// The row's (value, index) argmax; ties go to the lowest index.
__device__ inline ArgMax split_argmax(ArgMax v) {
  return cluster_combine(block_argmax(v), ArgMaxOp{}, ArgMax{0.0, -1});
}

// Blocks per row for `rows` rows of `kernel` on `device`: 1 without
// clusters (before sm_90), else kRowBlocks, or kWideBlocks for up to
// kWideRows rows where the GPU can place such clusters of this kernel.
// APH_ROW_BLOCKS=1|2|4|8|16 fixes it instead (for measurements).
int split_blocks(const void* kernel, int device, int32_t rows);

// Launches kernel over grid (blocks, rows) as clusters of `blocks`; the
// kernel starts with dependent_start() (block_reduce.cuh).
template <typename... Params, typename... Args>
std::string launch_split(void (*kernel)(Params...), int32_t rows, void* stream, const char* name, Args... args) {
  if (rows == 0) return "";
  int device = 0;
  cudaGetDevice(&device);
  const int blocks = split_blocks(reinterpret_cast<const void*>(kernel), device, rows);
  // A cluster of `blocks`, and a programmatic dependent of the kernel before
  // (block_reduce.cuh's dependent_start).
  const cudaError_t e = cuda_pdl::launch_dependent_clustered(
      kernel, dim3(static_cast<unsigned>(blocks), static_cast<unsigned>(rows)), dim3(kThreads), 0,
      static_cast<cudaStream_t>(stream), static_cast<unsigned>(blocks), args...);
  if (e != cudaSuccess) return std::string(name) + ": " + cudaGetErrorString(e);
  return launch_error(name);
}

}  // namespace aph::samplers::cuda
