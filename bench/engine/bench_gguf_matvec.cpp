// aph_bench_gguf_matvec: the GGUF plugin's batch-1 CUDA matvec (int8 dot
// products on the quantized blocks) on the Llama-3-8B and SmolLM2-135M
// shapes, as time and as weight bytes read per second against the measured
// copy bandwidth. The activation quantization that precedes each call is timed
// too. Weights are random bytes in the device layout (the speed does not
// depend on the values); each call uses the next of enough copies that the
// reads come from HBM, not L2.
//
//   aph_bench_gguf_matvec [--copy-gbps X]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "ceilings.hpp"
#include "core/common/error.hpp"
#include "plugins/quant-gguf/cuda/device_layout.hpp"
#include "plugins/quant-gguf/cuda/kernels.hpp"

namespace {

void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw aph::Error(APH_ERR_DEVICE, std::string(what) + ": " + cudaGetErrorString(e));
}
void launch_ok(int e, const char* what) { cuda_ok(static_cast<cudaError_t>(e), what); }

struct Case {
  const char* type_name;
  uint32_t type;
  int64_t n, k;
};

uint8_t* random_device_bytes(size_t bytes) {
  std::vector<uint8_t> host(bytes);
  std::mt19937 gen(7);
  for (size_t i = 0; i < bytes; i += 4) {
    const uint32_t r = gen();
    for (size_t j = 0; j < 4 && i + j < bytes; ++j) host[i + j] = static_cast<uint8_t>(r >> (8 * j));
  }
  void* dev = nullptr;
  cuda_ok(cudaMalloc(&dev, bytes), "cudaMalloc");
  cuda_ok(cudaMemcpy(dev, host.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
  return static_cast<uint8_t*>(dev);
}

int run(double copy_gbps) {
  cudaStream_t stream;
  cuda_ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  const Case cases[] = {
      {"Q4_K", 12, 4096, 4096},  {"Q4_K", 12, 1024, 4096}, {"Q4_K", 12, 14336, 4096}, {"Q4_K", 12, 4096, 14336},
      {"Q6_K", 14, 1024, 4096},  {"Q6_K", 14, 4096, 14336}, {"Q8_0", 8, 4096, 4096},   {"Q4_0", 2, 4096, 4096},
      {"Q4_1", 3, 576, 576},     {"Q4_1", 3, 1536, 576},    {"Q4_1", 3, 576, 1536},    {"Q8_0", 8, 49152, 576},
  };
  constexpr int64_t kMaxK = 14336;
  void* x = nullptr;
  int8_t* xq = nullptr;
  float *xd = nullptr, *xs = nullptr;
  void* y = nullptr;
  cuda_ok(cudaMalloc(&x, kMaxK * 2), "cudaMalloc");
  cuda_ok(cudaMemset(x, 0, kMaxK * 2), "cudaMemset");
  cuda_ok(cudaMalloc(&xq, kMaxK), "cudaMalloc");
  cuda_ok(cudaMalloc(&xd, kMaxK / 32 * sizeof(float)), "cudaMalloc");
  cuda_ok(cudaMalloc(&xs, kMaxK / 16 * sizeof(float)), "cudaMalloc");
  cuda_ok(cudaMalloc(&y, 65536 * 2), "cudaMalloc");
  launch_ok(aph::gguf::cuda::launch_quantize_act(x, true, 1, kMaxK, xq, xd, xs, stream), "quantize_act");

  std::printf("GGUF CUDA matvec, batch 1, bf16 activations (copy ceiling %.0f GB/s read+write)\n", copy_gbps);
  std::printf("%-6s %-16s %9s %9s %8s\n", "type", "[N x K]", "us", "GB/s", "of copy");
  for (const Case& c : cases) {
    aph::gguf::DeviceLayout layout{};
    if (!aph::gguf::device_layout(c.type, &layout)) continue;
    const size_t bytes = static_cast<size_t>(c.n) * (c.k / layout.block_elems) * layout.stride;
    const int copies = static_cast<int>(std::max<size_t>(1, (512ull << 20) / bytes));
    std::vector<uint8_t*> w;
    w.push_back(random_device_bytes(bytes));
    for (int i = 1; i < copies; ++i) {
      uint8_t* d = nullptr;
      cuda_ok(cudaMalloc(reinterpret_cast<void**>(&d), bytes), "cudaMalloc");
      cuda_ok(cudaMemcpy(d, w[0], bytes, cudaMemcpyDeviceToDevice), "cudaMemcpy");
      w.push_back(d);
    }
    size_t i = 0;
    const int iters = 4 * copies;
    const double ms = aph::bench::time_stream_ms(stream, iters, [&] {
                        launch_ok(aph::gguf::cuda::launch_matvec(c.type, w[i++ % w.size()], c.n, c.k, xq, xd, xs, 1,
                                                                 nullptr, y, true, stream),
                                  "matvec");
                      }) / iters;
    char shape[32];
    std::snprintf(shape, sizeof shape, "[%lld x %lld]", static_cast<long long>(c.n), static_cast<long long>(c.k));
    std::printf("%-6s %-16s %9.1f %9.0f %7.0f%%\n", c.type_name, shape, ms * 1e3, bytes / (ms * 1e6),
                100 * bytes / (ms * 1e6) / copy_gbps);
    for (uint8_t* d : w) cudaFree(d);
  }
  const double q_ms = aph::bench::time_stream_ms(stream, 200, [&] {
                        launch_ok(aph::gguf::cuda::launch_quantize_act(x, true, 1, 4096, xq, xd, xs, stream),
                                  "quantize_act");
                      }) / 200;
  std::printf("activation quantization, 1 x 4096: %.1f us a call\n", q_ms * 1e3);
  cudaFree(x);
  cudaFree(xq);
  cudaFree(xd);
  cudaFree(xs);
  cudaFree(y);
  cudaStreamDestroy(stream);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return aph::bench::bench_main(argc, argv, "aph_bench_gguf_matvec", run); }
