// Decode-path bandwidth of the GGUF CUDA matvec on Llama-3-8B layer shapes
// (batch 1): prints GB/s of weight bytes read against the card's measured
// device-to-device copy bandwidth (the ceiling a matvec can reach).
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "plugins/quant-gguf/container/ggml_types.hpp"
#include "plugins/quant-gguf/linear.hpp"
#include "plugins/quant-gguf/plugin_state.hpp"
#include "tests/gpu/gguf/cuda_host.hpp"
#include "tests/unit/gguf/random_blocks.hpp"

using namespace aph::gguf;

namespace {

double copy_bandwidth() {
  const size_t bytes = size_t{2} << 30;
  void *a = nullptr, *b = nullptr;
  cudaMalloc(&a, bytes);
  cudaMalloc(&b, bytes);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice);
  cudaEventRecord(e0);
  const int reps = 10;
  for (int i = 0; i < reps; ++i) cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice);
  cudaEventRecord(e1);
  cudaEventSynchronize(e1);
  float ms = 0;
  cudaEventElapsedTime(&ms, e0, e1);
  cudaFree(a);
  cudaFree(b);
  return 2.0 * bytes * reps / (ms * 1e-3) / 1e9;  // read + write
}

}  // namespace

int main() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("no CUDA device\n");
    return 1;
  }
  const double ceiling = copy_bandwidth();
  std::printf("device copy bandwidth (read+write): %.0f GB/s\n", ceiling);
  aph_host_services services = test_gpu::cuda_services();
  PluginState state;
  state.services = &services;
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  struct Shape { int64_t n, k; const char* what; };
  const Shape shapes[] = {{4096, 4096, "q/o_proj"}, {14336, 4096, "gate/up"}, {4096, 14336, "down"},
                          {128256, 4096, "lm_head"}};
  for (uint32_t type : {kQ4_K, kQ8_0, kQ4_1, kQ6_K, kQ4_0, kQ5_K}) {
    for (const auto& s : shapes) {
      auto w = test_data::random_rows(type, s.n, s.k, 1);
      aph_weight_info wi{};
      wi.size = sizeof(wi);
      wi.dtype = -1;
      wi.format_type = type;
      wi.rank = 2;
      wi.shape[0] = s.n;
      wi.shape[1] = s.k;
      wi.data = w.data();
      wi.nbytes = w.size();
      aph_linear_desc d{};
      d.size = sizeof(d);
      d.name = s.what;
      d.in_features = s.k;
      d.out_features = s.n;
      d.device = 0;
      d.act_dtype = APH_DTYPE_BF16;
      d.n_parts = 1;
      d.parts = &wi;
      d.stream = stream;
      Linear lin(state, d);
      for (int64_t m : {1, 4}) {
        void *x = nullptr, *y = nullptr;
        cudaMalloc(&x, m * s.k * 2);
        cudaMalloc(&y, m * s.n * 2);
        cudaMemset(x, 0x3c, m * s.k * 2);
        aph_tensor xt{sizeof(aph_tensor), APH_DTYPE_BF16, 0, 2, x, {m, s.k}, {s.k, 1}};
        aph_tensor yt{sizeof(aph_tensor), APH_DTYPE_BF16, 0, 2, y, {m, s.n}, {s.n, 1}};
        for (int i = 0; i < 5; ++i) lin.forward(xt, yt, stream);
        cudaEvent_t e0, e1;
        cudaEventCreate(&e0);
        cudaEventCreate(&e1);
        const int reps = 100;
        cudaEventRecord(e0, stream);
        for (int i = 0; i < reps; ++i) lin.forward(xt, yt, stream);
        cudaEventRecord(e1, stream);
        cudaEventSynchronize(e1);
        float ms = 0;
        cudaEventElapsedTime(&ms, e0, e1);
        const double us = ms * 1e3 / reps;
        const double gbs = static_cast<double>(w.size()) / (us * 1e-6) / 1e9;
        std::printf("%-5s %-9s %6lld x %5lld  M=%lld: %8.1f us  %7.0f GB/s  %5.1f%% of copy\n",
                    type_traits(type)->name.data(), s.what, static_cast<long long>(s.n),
                    static_cast<long long>(s.k), static_cast<long long>(m), us, gbs, 100.0 * gbs / ceiling);
        cudaFree(x);
        cudaFree(y);
      }
    }
  }
  cudaStreamDestroy(stream);
  return 0;
}
