// Whether the current device can place thread block clusters of a kernel
// (sm_90): cluster sizes above 8 exist only on request, and a cluster's CTAs
// must fit one GPC at once, so a size a kernel can use depends on its
// threads and shared memory. The answer is cached per (kernel, size,
// threads, shared memory, device): the occupancy query costs more than a
// launch. Header-only, host code: core kernels and plugins both ask.
#pragma once

#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <tuple>

namespace aph::cuda_cluster {

inline bool fits(const void* kernel, int size, int threads, size_t smem) {
  static std::mutex mutex;
  static std::map<std::tuple<const void*, int, int, size_t, int>, bool> known;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return false;
  std::lock_guard<std::mutex> lock(mutex);
  const auto key = std::make_tuple(kernel, size, threads, smem, device);
  auto it = known.find(key);
  if (it != known.end()) return it->second;
  int major = 0;
  bool ok = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess && major >= 9;
  if (ok && size > 8) ok = cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) == cudaSuccess;
  if (ok) {
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(size);
    config.blockDim = dim3(threads);
    config.dynamicSmemBytes = smem;
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = size;
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    config.attrs = &attr;
    config.numAttrs = 1;
    int clusters = 0;
    ok = cudaOccupancyMaxActiveClusters(&clusters, kernel, &config) == cudaSuccess && clusters > 0;
  }
  cudaGetLastError();  // a refusal above is an answer, not an error for the next launch
  known[key] = ok;
  return ok;
}

}  // namespace aph::cuda_cluster
