// aph_bench_gguf_matvec: the GGUF plugin's small-batch CUDA matvec (int8 dot
// products on the quantized blocks) on the Llama-3-8B and SmolLM2-135M
// shapes, as time and as weight bytes read per second against the measured
// copy bandwidth: the matvec alone, and together with the activation
// quantization that precedes it in a linear ("+quant"; the two overlap when
// launched as dependents, APH_PDL unset or 1). Weights are random bytes in the
// device layout (the speed does not depend on the values); each call uses
// the next of enough copies that the reads come from HBM, not L2. Calls are
// timed as a CUDA graph (as the engine runs decode), so launch gaps do not
// hide the small shapes. Then the tile GEMM of batched decode (m = 64, the
// 8B Q4_K_M's linears) in TFLOP/s against the measured bf16 GEMM rate.
//
//   aph_bench_gguf_matvec [--copy-gbps X]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "ceilings.hpp"
#include "core/common/error.hpp"
#include "plugins/quant-gguf/cuda/device_layout.hpp"
#include "plugins/quant-gguf/cuda/kernels.hpp"
#include "plugins/quant-gguf/cuda/tile_gemm.hpp"

namespace {

void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw aph::Error(APH_ERR_DEVICE, std::string(what) + ": " + cudaGetErrorString(e));
}
void launch_ok(int e, const char* what) { cuda_ok(static_cast<cudaError_t>(e), what); }

struct Case {
  const char* type_name;
  uint32_t type;
  int64_t n, k, m;
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

// Milliseconds per call of `launch` (which issues one kernel), captured
// `calls` times into a CUDA graph so that launch gaps do not count.
double graph_ms_per_call(cudaStream_t stream, int calls, const std::function<void(int)>& launch) {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  cuda_ok(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  for (int i = 0; i < calls; ++i) launch(i);
  cuda_ok(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
  cuda_ok(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
  const int reps = 5;
  const double ms = aph::bench::time_stream_ms(stream, reps, [&] {
    cuda_ok(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
  });
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  return ms / (reps * calls);
}

// Copies of one random weight matrix, enough that the calls read HBM, not L2.
std::vector<uint8_t*> weight_copies(uint32_t type, int64_t n, int64_t k, size_t* bytes_out) {
  aph::gguf::DeviceLayout layout{};
  if (!aph::gguf::device_layout(type, &layout)) return {};
  const size_t bytes = static_cast<size_t>(n) * aph::gguf::device_row_bytes(layout, k / layout.block_elems);
  const int copies = static_cast<int>(std::max<size_t>(1, (512ull << 20) / bytes));
  std::vector<uint8_t*> w;
  w.push_back(random_device_bytes(bytes));
  for (int i = 1; i < copies; ++i) {
    uint8_t* d = nullptr;
    cuda_ok(cudaMalloc(reinterpret_cast<void**>(&d), bytes), "cudaMalloc");
    cuda_ok(cudaMemcpy(d, w[0], bytes, cudaMemcpyDeviceToDevice), "cudaMemcpy");
    w.push_back(d);
  }
  *bytes_out = bytes;
  return w;
}

// The tile GEMM (tile_gemm.hpp) on the 8B Q4_K_M's linears at m = 64.
void run_tile_gemm(cudaStream_t stream, int sm_count, const void* x, void* y) {
  const Case cases[] = {
      {"Q4_K", 12, 4096, 4096, 64},  {"Q4_K", 12, 1024, 4096, 64},  {"Q6_K", 14, 1024, 4096, 64},
      {"Q4_K", 12, 14336, 4096, 64}, {"Q4_K", 12, 4096, 14336, 64}, {"Q6_K", 14, 4096, 14336, 64},
  };
  const aph::bench::Ceilings ceilings = aph::bench::measure_ceilings();
  std::printf("GGUF tile GEMM, bf16 activations (bf16 GEMM ceiling %.0f TFLOP/s)\n", ceilings.bf16_flops / 1e12);
  std::printf("%-6s %-16s %3s %6s %9s %9s %8s\n", "type", "[N x K]", "M", "splits", "us", "TFLOP/s", "of bf16");
  for (const Case& c : cases) {
    char shape[32];
    std::snprintf(shape, sizeof shape, "[%lld x %lld]", static_cast<long long>(c.n), static_cast<long long>(c.k));
    if (!aph::bench::case_wanted((std::string(c.type_name) + " " + shape).c_str())) continue;
    size_t bytes = 0;
    std::vector<uint8_t*> w = weight_copies(c.type, c.n, c.k, &bytes);
    if (w.empty()) continue;
    aph::gguf::cuda::TileGemmScratch scratch;
    void* ws = nullptr;
    scratch.partial_bytes = aph::gguf::cuda::tile_gemm_workspace_bytes(c.n, c.k, sm_count);
    if (scratch.partial_bytes > 0) cuda_ok(cudaMalloc(&ws, scratch.partial_bytes), "cudaMalloc");
    scratch.partials = static_cast<float*>(ws);
    void* images = nullptr;  // the wgmma form's x images (tile_gemm_wgmma.hpp), where the build has it
    scratch.x_image_bytes = aph::gguf::cuda::tile_gemm_image_bytes(c.k);
    if (scratch.x_image_bytes > 0) cuda_ok(cudaMalloc(&images, scratch.x_image_bytes), "cudaMalloc");
    scratch.x_image = images;
    const double ms = graph_ms_per_call(stream, std::max(8, 2 * static_cast<int>(w.size())), [&](int i) {
      launch_ok(aph::gguf::cuda::launch_tile_gemm(c.type, w[i % w.size()], c.n, c.k, x, c.m, nullptr, y, true,
                                                  scratch, sm_count, stream),
                "tile GEMM");
    });
    const double flops = 2.0 * c.m * c.n * c.k / (ms * 1e-3);
    std::printf("%-6s %-16s %3lld %6d %9.1f %9.1f %7.1f%%\n", c.type_name, shape, static_cast<long long>(c.m),
                aph::gguf::cuda::tile_gemm_splits(c.n, c.k, c.m, sm_count), ms * 1e3, flops / 1e12,
                ceilings.bf16_flops > 0 ? 100 * flops / ceilings.bf16_flops : 0.0);
    for (uint8_t* d : w) cudaFree(d);
    cudaFree(ws);
    cudaFree(images);
  }
}

int run(double copy_gbps) {
  cudaStream_t stream;
  cuda_ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  const Case cases[] = {
      {"Q4_K", 12, 4096, 4096, 1},   {"Q4_K", 12, 1024, 4096, 1},  {"Q4_K", 12, 14336, 4096, 1},
      {"Q4_K", 12, 4096, 14336, 1},  {"Q4_K", 12, 128256, 4096, 1}, {"Q6_K", 14, 1024, 4096, 1},
      {"Q6_K", 14, 4096, 4096, 1},   {"Q6_K", 14, 4096, 14336, 1},  {"Q6_K", 14, 128256, 4096, 1},
      {"Q5_K", 13, 4096, 4096, 1},   {"Q5_K", 13, 14336, 4096, 1},  {"Q8_0", 8, 4096, 4096, 1},
      {"Q8_0", 8, 14336, 4096, 1},   {"Q4_0", 2, 4096, 4096, 1},    {"Q4_1", 3, 576, 576, 1},
      {"Q4_1", 3, 1536, 576, 1},     {"Q4_1", 3, 576, 1536, 1},     {"Q8_0", 8, 49152, 576, 1},
      {"Q4_K", 12, 4096, 4096, 4},   {"Q4_K", 12, 14336, 4096, 8},  {"Q6_K", 14, 4096, 14336, 8},
  };
  constexpr int64_t kMaxK = 14336, kMaxN = 128256, kMaxM = 64;
  void* x = nullptr;
  int8_t* xq = nullptr;
  float *xd = nullptr, *xs = nullptr;
  void* y = nullptr;
  {
    // Random activations: zeros could take shortcuts real data does not.
    std::vector<uint16_t> xh(kMaxM * kMaxK);
    std::mt19937 gen(3);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (auto& v : xh) {
      const float f = normal(gen);
      uint32_t bits = 0;
      std::memcpy(&bits, &f, 4);
      v = static_cast<uint16_t>(bits >> 16);  // bf16 by truncation
    }
    cuda_ok(cudaMalloc(&x, xh.size() * 2), "cudaMalloc");
    cuda_ok(cudaMemcpy(x, xh.data(), xh.size() * 2, cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  cuda_ok(cudaMalloc(&xq, kMaxM * kMaxK), "cudaMalloc");
  cuda_ok(cudaMalloc(&xd, kMaxM * kMaxK / 32 * sizeof(float)), "cudaMalloc");
  cuda_ok(cudaMalloc(&xs, kMaxM * kMaxK / 16 * sizeof(float)), "cudaMalloc");
  cuda_ok(cudaMalloc(&y, kMaxM * kMaxN * 2), "cudaMalloc");

  std::printf("GGUF CUDA matvec, bf16 activations, CUDA graph of calls (copy ceiling %.0f GB/s read+write)\n",
              copy_gbps);
  int sm_count = 1;
  cuda_ok(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, 0), "SM count");
  // "+quant": a quantization kernel, then the matvec; "in-CTA": m == 1 with
  // the raw x, which each CTA quantizes itself (what the linear runs).
  std::printf("%-6s %-16s %2s %9s %9s %8s  %9s %8s  %9s %8s\n", "type", "[N x K]", "M", "us", "GB/s", "of copy",
              "+quant us", "of copy", "in-CTA us", "of copy");
  for (const Case& c : cases) {
    char shape[32];
    std::snprintf(shape, sizeof shape, "[%lld x %lld]", static_cast<long long>(c.n), static_cast<long long>(c.k));
    if (!aph::bench::case_wanted((std::string(c.type_name) + " " + shape).c_str())) continue;
    size_t bytes = 0;
    std::vector<uint8_t*> w = weight_copies(c.type, c.n, c.k, &bytes);
    if (w.empty()) continue;
    const int copies = static_cast<int>(w.size());
    launch_ok(aph::gguf::cuda::launch_quantize_act(x, nullptr, true, c.m, c.k, xq, xd, xs, stream), "quantize_act");
    aph::gguf::cuda::MatvecX quantized, raw;
    quantized.q = xq;
    quantized.d = xd;
    quantized.s = xs;
    raw.raw = x;
    const double ms = graph_ms_per_call(stream, std::max(8, 2 * copies), [&](int i) {
      launch_ok(aph::gguf::cuda::launch_matvec(c.type, w[i % w.size()], c.n, c.k, quantized, c.m, nullptr, y,
                                               true, sm_count, stream),
                "matvec");
    });
    // The pair the linear runs: quantize x, then the matvec (overlapping
    // when launched as dependents, core/common/cuda_pdl.cuh).
    const double pair_ms = graph_ms_per_call(stream, std::max(8, 2 * copies), [&](int i) {
      launch_ok(aph::gguf::cuda::launch_quantize_act(x, nullptr, true, c.m, c.k, xq, xd, xs, stream), "quantize_act");
      launch_ok(aph::gguf::cuda::launch_matvec(c.type, w[i % w.size()], c.n, c.k, quantized, c.m, nullptr, y,
                                               true, sm_count, stream),
                "matvec");
    });
    double raw_ms = 0;
    if (c.m == 1 && aph::gguf::cuda::fits_in_cta_quantization(c.type, c.k))
      raw_ms = graph_ms_per_call(stream, std::max(8, 2 * copies), [&](int i) {
        launch_ok(aph::gguf::cuda::launch_matvec(c.type, w[i % w.size()], c.n, c.k, raw, 1, nullptr, y, true,
                                                 sm_count, stream),
                  "matvec (raw x)");
      });
    std::printf("%-6s %-16s %2lld %9.1f %9.0f %7.0f%%  %9.1f %7.0f%%", c.type_name, shape,
                static_cast<long long>(c.m), ms * 1e3, bytes / (ms * 1e6), 100 * bytes / (ms * 1e6) / copy_gbps,
                pair_ms * 1e3, 100 * bytes / (pair_ms * 1e6) / copy_gbps);
    if (raw_ms > 0)
      std::printf("  %9.1f %7.0f%%\n", raw_ms * 1e3, 100 * bytes / (raw_ms * 1e6) / copy_gbps);
    else
      std::printf("  %9s %8s\n", "-", "-");
    for (uint8_t* d : w) cudaFree(d);
  }
  const double q_ms = graph_ms_per_call(stream, 100, [&](int) {
    launch_ok(aph::gguf::cuda::launch_quantize_act(x, nullptr, true, 1, 4096, xq, xd, xs, stream), "quantize_act");
  });
  std::printf("activation quantization, 1 x 4096: %.1f us a call\n", q_ms * 1e3);
  run_tile_gemm(stream, sm_count, x, y);
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
