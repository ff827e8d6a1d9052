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
#include <cstring>

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
  static const bool on = [] {
    const char* v = std::getenv("APH_PDL");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return on;
}

// kernel<<<grid, block, smem, stream>>>(args...), allowed to overlap the
// previous kernel in the stream (see above). Returns the launch error.
template <typename... Params, typename... Args>
cudaError_t launch_dependent(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                             Args... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &attr;
  config.numAttrs = enabled() ? 1 : 0;
  return cudaLaunchKernelEx(&config, kernel, static_cast<Params>(args)...);
}

}  // namespace aph::cuda_pdl
