// The same sampler chain on the CPU and on CUDA device 0, fed identical
// inputs, for comparing the two implementations (and for the bench).
#pragma once

#include <cuda_runtime_api.h>

#include <boost/json.hpp>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/common/tensor.hpp"
#include "core/sampling/sampler_chain.hpp"
#include "tests/unit/samplers/plugin_fixture.hpp"

namespace aph::test {

// Device memory, or pinned host memory for APH_DEVICE_CPU.
inline void* cuda_alloc(int32_t device, uint64_t bytes) {
  void* p = nullptr;
  if (device == APH_DEVICE_CPU) return cudaMallocHost(&p, bytes) == cudaSuccess ? p : nullptr;
  cudaSetDevice(device);
  return cudaMalloc(&p, bytes) == cudaSuccess ? p : nullptr;
}
inline void cuda_free(int32_t device, void* p) {
  if (device == APH_DEVICE_CPU) cudaFreeHost(p);
  else cudaFree(p);
}

struct DeviceChain {
  explicit DeviceChain(int32_t device, int32_t vocab, sampling::ChainOptions options = {}) {
    if (device != APH_DEVICE_CPU) {
      plugins.set_device_memory(&cuda_alloc, &cuda_free, device);
      if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
        throw std::runtime_error("cudaStreamCreate failed");
      }
    }
    plugins.load(plugin_path("aph_samplers.so"));
    options.device = device;
    options.stream = stream;
    options.vocab_size = vocab;
    chain = sampling::SamplerChain::create(plugins.registry(), options);
  }
  ~DeviceChain() {
    chain.reset();
    if (stream != nullptr) cudaStreamDestroy(stream);
  }
  LoadedPlugins plugins;
  cudaStream_t stream = nullptr;
  std::unique_ptr<sampling::SamplerChain> chain;
};

}  // namespace aph::test
