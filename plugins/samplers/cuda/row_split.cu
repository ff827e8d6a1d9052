#include "plugins/samplers/cuda/row_split.cuh"

#include <atomic>

namespace aph::samplers::cuda {

int row_blocks(int device) {
  // Cached per device: the attribute query costs more than a launch.
  static std::atomic<int> cached[64] = {};
  if (device < 0 || device >= 64) return 1;
  int v = cached[device].load(std::memory_order_relaxed);
  if (v == 0) {
    int major = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) major = 0;
    v = major >= 9 ? kRowBlocks : 1;
    cached[device].store(v, std::memory_order_relaxed);
  }
  return v;
}

}  // namespace aph::samplers::cuda
