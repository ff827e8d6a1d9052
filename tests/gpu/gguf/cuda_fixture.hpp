// A GoogleTest fixture for the GGUF GPU tests that drive the plugin's
// implementation library: a CUDA device (or a skip), the plugin state with
// cudaMalloc-backed host services, and a stream.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "plugins/quant-gguf/plugin_state.hpp"
#include "tests/gpu/gguf/cuda_host.hpp"

namespace aph::gguf::test_gpu {

template <class Base>
class WithCuda : public Base {
 protected:
  void SetUp() override {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) GTEST_SKIP() << "no CUDA device";
    services_ = cuda_services();
    state_.services = &services_;
    cudaStreamCreate(&stream_);
  }
  void TearDown() override {
    if (stream_) cudaStreamDestroy(stream_);
  }
  aph_host_services services_{};
  PluginState state_;
  cudaStream_t stream_ = nullptr;
};

}  // namespace aph::gguf::test_gpu
