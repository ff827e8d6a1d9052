// Decode-speed check of the CPU linear on the default model's shapes
// (SmolLM2-135M: 30 layers of Q4_1 q/k/v/o/gate/up/down + a Q8_0 tied head).
// Prints the linear time per token and the implied tokens/s ceiling.
#include <chrono>
#include <cstdio>
#include <vector>

#include "plugins/quant-gguf/cpu/dequant.hpp"
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
  // Where the direct block kernel stops paying against unpacking eight rows
  // once for the batch (CpuLinear's kDirectMaxRows): microseconds per
  // activation row for the 135M's gate shape, by batch size.
  const DotKernels& kern = dot_kernels();
  for (const Shape& s : {Shape{1536, 576, kQ4_1, 0}, Shape{1024, 4096, kQ4_K, 0}, Shape{1024, 4096, kQ6_K, 0}}) {
  const int64_t n = s.n, k = s.k;
  const int group = unpack_group(s.type);
  auto w = test_data::random_rows(s.type, n, k, 2);
  const uint64_t row_bytes = w.size() / n;
  std::printf("%s %lld x %lld, us per activation row: m, direct, unpacked\n", type_traits(s.type)->name.data(),
              static_cast<long long>(n), static_cast<long long>(k));
  for (int64_t m : {1, 8, 16, 32, 64, 128}) {
    std::vector<int8_t> q(m * k), q8(k * 8);
    std::vector<float> d(m * k / 32), s16(m * k / 16), out(m * 8), ab8(k / group * 16);
    std::vector<int32_t> sum16(m * k / 16);
    std::vector<ActQ8> acts;
    std::vector<float> xs(k, 0.25f);
    for (int64_t i = 0; i < m; ++i) {
      kern.quantize_act(xs.data(), &q[i * k], &d[i * k / 32], &s16[i * k / 16], &sum16[i * k / 16], k);
      acts.push_back({&q[i * k], &d[i * k / 32], &s16[i * k / 16], &sum16[i * k / 16]});
    }
    auto time_us = [&](auto&& body) {
      const int reps = 5;
      auto t0 = std::chrono::steady_clock::now();
      for (int r = 0; r < reps; ++r)
        for (int64_t j = 0; j < n; j += 8) body(j);
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps / m * 1e6;
    };
    auto direct = kern.rows8_direct(s.type);
    const double t_direct = direct ? time_us([&](int64_t j) {
      const uint8_t* rows[8];
      for (int i = 0; i < 8; ++i) rows[i] = w.data() + (j + i) * row_bytes;
      direct(rows, acts.data(), m, k, out.data());
    }) : 0.0;
    const double t_unpacked = time_us([&](int64_t j) {
      const uint8_t* rows[8];
      for (int i = 0; i < 8; ++i) rows[i] = w.data() + (j + i) * row_bytes;
      unpack_rows8(s.type, rows, k, q8.data(), ab8.data(), ab8.data() + k / group * 8);
      kern.rows8(Rows8{q8.data(), ab8.data(), ab8.data() + k / group * 8, group}, acts.data(), m, k, out.data());
    });
    std::printf("  %3lld  %8.1f  %8.1f\n", static_cast<long long>(m), t_direct, t_unpacked);
  }
  }
  return 0;
}
