// Decode-speed check of the CPU linear on the default model's shapes
// (SmolLM2-135M: 30 layers of Q4_1 q/k/v/o/gate/up/down + a Q8_0 tied head).
// Prints the linear time per token and the implied tokens/s ceiling.
#include <chrono>
#include <cstdio>
#include <vector>

#include "plugins/quant-gguf/cpu/dot.hpp"
#include "plugins/quant-gguf/cpu/linear_cpu.hpp"
#include "tests/unit/gguf/random_blocks.hpp"

using namespace aph::gguf;

int main() {
  struct Shape { int64_t n, k; uint32_t type; int count; };
  const std::vector<Shape> shapes = {
      {576, 576, kQ4_1, 60}, {192, 576, kQ4_1, 60}, {1536, 576, kQ4_1, 60},
      {576, 1536, kQ4_1, 30}, {49152, 576, kQ8_0, 1}};
  // Not part of the total: K-quant rows of an 8B-like width, for reference.
  const std::vector<Shape> extra = {{1024, 4096, kQ4_K, 0}, {1024, 4096, kQ6_K, 0}};
  double total_s = 0, bytes = 0;
  std::vector<float> x(1536, 0.5f), y(49152);
  for (const auto& s : shapes) {
    auto w = test_data::random_rows(s.type, s.n, s.k, 1);
    CpuLinear lin(s.type, s.k, s.n, w.data(), {}, false);
    lin.forward(x.data(), 1, y.data());
    const int reps = 20;
    auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) lin.forward(x.data(), 1, y.data());
    double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
    std::printf("%-6s %6lld x %5lld: %8.3f ms  %6.2f GB/s\n", type_traits(s.type)->name.data(),
                static_cast<long long>(s.n), static_cast<long long>(s.k), dt * 1e3,
                w.size() / dt / 1e9);
    total_s += dt * s.count;
    bytes += static_cast<double>(w.size()) * s.count;
  }
  for (const auto& s : extra) {
    auto w = test_data::random_rows(s.type, s.n, s.k, 1);
    CpuLinear lin(s.type, s.k, s.n, w.data(), {}, false);
    std::vector<float> xx(s.k, 0.5f);
    auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < 5; ++r) lin.forward(xx.data(), 1, y.data());
    double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 5;
    std::printf("%-6s %6lld x %5lld: %8.3f ms  %6.2f GB/s\n", type_traits(s.type)->name.data(),
                static_cast<long long>(s.n), static_cast<long long>(s.k), dt * 1e3, w.size() / dt / 1e9);
  }
  std::printf("kernels=%s  linear time per token %.2f ms -> %.1f tok/s ceiling (%.2f GB/s)\n",
              dot_kernels().name, total_s * 1e3, 1.0 / total_s, bytes / total_s / 1e9);
  return 0;
}
