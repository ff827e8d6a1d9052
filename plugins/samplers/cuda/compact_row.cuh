// Sort keys of the sorted-row stages, and a compacted row (at most
// kCompactCap live tokens, gathered in any order) sorted in shared memory by
// one block. Keys are (~order code of the value) << 32 | id, so ascending
// keys are the CPU's order whatever order they were gathered in: values
// descending, ties by ascending id, -0.0 coded as +0.0.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "plugins/samplers/cuda/block_reduce.cuh"
#include "plugins/samplers/cuda/kernels.hpp"

namespace aph::samplers::cuda {

// Larger float, larger code; -0.0 codes as +0.0 (the CPU's comparison finds
// them equal, so their ids must decide).
__device__ inline uint32_t ascending_code(float f) {
  const uint32_t u = __float_as_uint(f == 0.0f ? 0.0f : f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
__device__ inline float from_code(uint32_t c) {
  return __uint_as_float((c & 0x80000000u) ? (c & 0x7FFFFFFFu) : ~c);
}
__device__ inline uint64_t compact_key(float value, int64_t id) {
  return (static_cast<uint64_t>(~ascending_code(value)) << 32) | static_cast<uint32_t>(id);
}

constexpr int kCompactPerThread = kCompactCap / kThreads;
static_assert(kCompactCap % kThreads == 0, "a compacted row spreads evenly over the block");

// A compacted row in shared memory: first its keys, then (decoded in place)
// the sorted values and ids.
union CompactSmem {
  uint64_t keys[kCompactCap];
  struct {
    float x[kCompactCap];
    int32_t id[kCompactCap];
  } row;
};

// Rows this short are sorted by rank: each key's place is the number of
// keys below it (keys are distinct: the id is in them). That is two block
// barriers where the bitonic sort takes one per stage (28 for 128 keys, the
// usual row after top-k); each thread's scan of the keys is a shared memory
// broadcast per key.
constexpr int32_t kRankSortMax = 256;

// Sorts s.keys[0, count) (count <= kCompactCap, block-uniform) and decodes
// them into s.row. Every thread of the block (kThreads of them) must call it.
__device__ inline void sort_compacted(CompactSmem& s, int32_t count) {
  if (count == 0) return;
  if (count <= kRankSortMax) {
    __syncthreads();  // the keys are in place
    const int32_t t = threadIdx.x;
    const uint64_t mine = t < count ? s.keys[t] : 0;
    int32_t rank = 0;
    if (t < count) {
      for (int32_t i = 0; i < count; ++i) rank += s.keys[i] < mine ? 1 : 0;
    }
    __syncthreads();  // every key is read before s.row overwrites them
    if (t < count) {
      s.row.x[rank] = from_code(~static_cast<uint32_t>(mine >> 32));
      s.row.id[rank] = static_cast<int32_t>(static_cast<uint32_t>(mine));
    }
    __syncthreads();
    return;
  }
  // Bitonic sort of the keys padded to a power of two with keys past any real one.
  int32_t padded = 1;
  while (padded < count) padded <<= 1;
  for (int32_t j = count + threadIdx.x; j < padded; j += blockDim.x) s.keys[j] = ~uint64_t{0};
  __syncthreads();
  for (int32_t k = 2; k <= padded; k <<= 1) {
    for (int32_t j = k >> 1; j > 0; j >>= 1) {
      for (int32_t t = threadIdx.x; t < padded / 2; t += blockDim.x) {
        const int32_t lo = (t / j) * 2 * j + t % j, hi = lo + j;
        const uint64_t a = s.keys[lo], b = s.keys[hi];
        if ((a > b) == ((lo & k) == 0)) {
          s.keys[lo] = b;
          s.keys[hi] = a;
        }
      }
      __syncthreads();
    }
  }

  // Decoded in place: every key is read before any value overwrites one.
  uint64_t mine[kCompactPerThread];
  for (int k = 0; k < kCompactPerThread; ++k) {
    const int32_t j = threadIdx.x + k * kThreads;
    mine[k] = j < count ? s.keys[j] : 0;
  }
  __syncthreads();
  for (int k = 0; k < kCompactPerThread; ++k) {
    const int32_t j = threadIdx.x + k * kThreads;
    if (j < count) {
      s.row.x[j] = from_code(~static_cast<uint32_t>(mine[k] >> 32));
      s.row.id[j] = static_cast<int32_t>(static_cast<uint32_t>(mine[k]));
    }
  }
  __syncthreads();
}

}  // namespace aph::samplers::cuda
