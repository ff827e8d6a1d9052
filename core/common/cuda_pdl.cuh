// Programmatic dependent launch (sm_90): a decode step is a chain of short
// kernels, and between two of them the GPU idles for the launch and the ramp
// of the next one. A kernel launched with launch_dependent() may start while
// the kernel before it is still running; it does the work that does not read
// that kernel's output (a matvec streams its first weights) and then calls
// wait_for_producer(), which returns once the previous kernel has finished
// and its writes are visible. Kernels that come before such a kernel call
// allow_dependents() early so that the next one can be scheduled at once.
//
// Rules: every kernel launched with launch_dependent() calls
// wait_for_producer() before it reads or writes anything another kernel
// touches. Both device calls are no-ops when the kernel was launched plainly
// or built for an older GPU. APH_PDL=0 launches everything plainly (to
// measure what it gains). Header-only: core ops and plugins include it.
#pragma once

#include <cuda_runtime.h>

#include <cstdlib>

#include "core/common/env_flag.hpp"

namespace aph::cuda_pdl {

__device__ __forceinline__ void wait_for_producer() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void allow_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

inline bool enabled() {
  static const bool on = env_flag("APH_PDL", true);
  return on;
}

// launch_dependent in thread block clusters of `cluster` CTAs along x
// (1: no clusters; grid.x must be a multiple).
template <typename... Params, typename... Args>
cudaError_t launch_dependent_clustered(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem,
                                       cudaStream_t stream, unsigned cluster, Args... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute attrs[2]{};
  unsigned n = 0;
  if (cluster > 1) {
    attrs[n].id = cudaLaunchAttributeClusterDimension;
    attrs[n].val.clusterDim.x = cluster;
    attrs[n].val.clusterDim.y = 1;
    attrs[n].val.clusterDim.z = 1;
    ++n;
  }
  if (enabled()) {
    attrs[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[n].val.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  config.attrs = attrs;
  config.numAttrs = n;
  return cudaLaunchKernelEx(&config, kernel, static_cast<Params>(args)...);
}

// kernel<<<grid, block, smem, stream>>>(args...), allowed to overlap the
// previous kernel in the stream (see above). Returns the launch error.
template <typename... Params, typename... Args>
cudaError_t launch_dependent(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                             Args... args) {
  return launch_dependent_clustered(kernel, grid, block, smem, stream, 1u, args...);
}

}  // namespace aph::cuda_pdl
