// A device buffer for the GGUF GPU tests: filled with a byte or copied
// from the host, read back whole.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace aph::gguf::test_gpu {

template <typename T>
struct Device {
  T* ptr = nullptr;
  size_t count = 0;
  explicit Device(size_t n, int fill = 0) : count(n) {
    if (cudaMalloc(&ptr, std::max<size_t>(n, 1) * sizeof(T)) == cudaSuccess) cudaMemset(ptr, fill, n * sizeof(T));
  }
  explicit Device(const std::vector<T>& h) : Device(h.size()) {
    cudaMemcpy(ptr, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice);
  }
  ~Device() { cudaFree(ptr); }
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  std::vector<T> host() const {
    std::vector<T> h(count);
    cudaMemcpy(h.data(), ptr, count * sizeof(T), cudaMemcpyDeviceToHost);
    return h;
  }
};

}  // namespace aph::gguf::test_gpu
