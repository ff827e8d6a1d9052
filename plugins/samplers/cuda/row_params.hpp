// Per-row parameters of one sampler launch, carried inside the launch.
//
// Each stage used to copy its few bytes of per-row parameters to the device
// before its kernel; every such cudaMemcpyAsync cost a batch-1 step about
// 5 us of GPU time on the H200, about as much as the kernel. Kernel
// parameters travel with the launch itself, so a batch of up to kInline rows
// carries its table there; a larger batch reads it from device memory.
// Kernels take it as `const __grid_constant__ Rows<T>`: indexing then reads
// the parameter bank instead of copying the whole table per thread.
#pragma once

#include <algorithm>
#include <cstdint>

#if defined(__CUDACC__)
#define APH_ROWS_HD __host__ __device__
#else
#define APH_ROWS_HD
#endif

namespace aph::samplers::cuda {

// kBytes bounds the inline table: a launch's parameters stay under the
// 4 KiB every CUDA version accepts, with two tables.
template <typename T, int kBytes = 2048>
struct Rows {
  static constexpr int kInline = static_cast<int>(kBytes / sizeof(T)) > 0 ? static_cast<int>(kBytes / sizeof(T)) : 1;
  const T* device = nullptr;  // set: the table is there, not in `local`
  T local[kInline];
  APH_ROWS_HD const T& operator[](int64_t r) const { return device != nullptr ? device[r] : local[r]; }
};

// A batch row and one value for it.
template <typename V>
struct Indexed {
  int32_t row;
  V value;
};

// Rows [first, n) of a table of n rows, as a table of their own.
template <typename T, int kBytes>
Rows<T, kBytes> rows_from(const Rows<T, kBytes>& all, int32_t first, int32_t n) {
  Rows<T, kBytes> out;
  if (all.device != nullptr) {
    out.device = all.device + first;
  } else {
    std::copy(all.local + first, all.local + std::min<int32_t>(n, Rows<T, kBytes>::kInline), out.local);
  }
  return out;
}

}  // namespace aph::samplers::cuda
