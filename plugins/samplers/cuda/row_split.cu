#include "plugins/samplers/cuda/row_split.cuh"

#include <atomic>
#include <cstdlib>

#include "core/common/cuda_cluster.hpp"
#include "core/common/env_flag.hpp"

namespace aph::samplers::cuda {

namespace {

// Compute capability major of `device` (cached: the query costs more than a
// launch), and the APH_ROW_BLOCKS override (0: none).
int device_major(int device) {
  static std::atomic<int> cached[64] = {};
  if (device < 0 || device >= 64) return 0;
  int v = cached[device].load(std::memory_order_relaxed);
  if (v == 0) {
    if (cudaDeviceGetAttribute(&v, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) v = -1;
    cached[device].store(v, std::memory_order_relaxed);
  }
  return v;
}
int forced_blocks() {
  static const int forced = [] {
    const long f = env_int("APH_ROW_BLOCKS", 0);
    return f == 1 || f == 2 || f == 4 || f == 8 || f == 16 ? static_cast<int>(f) : 0;
  }();
  return forced;
}

}  // namespace

int split_blocks(const void* kernel, int device, int32_t rows) {
  if (device_major(device) < 9) return 1;
  const int forced = forced_blocks();
  const bool want_wide = forced == kWideBlocks || (forced == 0 && rows <= kWideRows);
  if (want_wide && cuda_cluster::fits(kernel, kWideBlocks, kThreads, 0)) return kWideBlocks;
  return forced != 0 && forced < kRowBlocks ? forced : kRowBlocks;
}

}  // namespace aph::samplers::cuda
