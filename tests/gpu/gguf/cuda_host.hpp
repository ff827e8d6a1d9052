// A minimal host-services table backed by cudaMalloc, for GPU tests and the
// benchmark that drive the plugin's implementation library directly.
#pragma once

#include <cuda_runtime.h>

#include "aphrodite/plugin.h"
#include "core/common/error.hpp"

namespace aph::gguf::test_gpu {

inline void* cuda_alloc(void*, int32_t device, uint64_t bytes, aph_error* err) {
  void* p = nullptr;
  cudaSetDevice(device);
  if (cudaMalloc(&p, bytes) != cudaSuccess) {
    aph::write_error(err, APH_ERR_OUT_OF_MEMORY, "cudaMalloc failed");
    return nullptr;
  }
  return p;
}
inline void cuda_free(void*, int32_t, void* p) { cudaFree(p); }
inline const char* no_config(void*) { return "{}"; }

inline aph_host_services cuda_services() {
  aph_host_services s{};
  s.size = sizeof(s);
  s.config_json = no_config;
  s.device_alloc = cuda_alloc;
  s.device_free = cuda_free;
  return s;
}

}  // namespace aph::gguf::test_gpu
