// For GPU tests that drive sampler stages directly (the plugin's stage
// structs, not the chain): host services backed by cudaMalloc and pinned
// host memory (tensor views: tests/gpu/tensor_view.hpp).
#pragma once

#include <cuda_runtime_api.h>

#include "aphrodite/plugin.h"
#include "aphrodite/sampler.h"
#include "tests/gpu/tensor_view.hpp"

namespace aph::test {

inline void* stage_device_alloc(void*, int32_t device, uint64_t bytes, aph_error*) {
  void* p = nullptr;
  if (device == APH_DEVICE_CPU) return cudaMallocHost(&p, bytes) == cudaSuccess ? p : nullptr;
  return cudaMalloc(&p, bytes) == cudaSuccess ? p : nullptr;
}
inline void stage_device_free(void*, int32_t device, void* p) {
  if (device == APH_DEVICE_CPU) {
    cudaFreeHost(p);
  } else {
    cudaFree(p);
  }
}
inline void* stage_pinned_alloc(void* host, uint64_t bytes, aph_error* err) {
  return stage_device_alloc(host, APH_DEVICE_CPU, bytes, err);
}
inline void stage_pinned_free(void* host, void* p) { stage_device_free(host, APH_DEVICE_CPU, p); }

inline aph_host_services stage_cuda_services() {
  aph_host_services s{};
  s.size = sizeof(s);
  s.device_alloc = &stage_device_alloc;
  s.device_free = &stage_device_free;
  s.pinned_alloc = &stage_pinned_alloc;
  s.pinned_free = &stage_pinned_free;
  return s;
}

}  // namespace aph::test
