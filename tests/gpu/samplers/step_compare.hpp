// One sampling step of the same requests through a chain on the CPU and on
// the device (gpu_chain.hpp), and the comparison the GPU tests make of the
// two: the same kept sets, kept values within float rounding.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "tests/gpu/samplers/gpu_chain.hpp"

namespace aph::test {

struct StepResult {
  std::vector<float> logits;
  std::vector<int32_t> chosen;
};

// One step over rows [i] = (requests[i], seeds[i]); logits row-major [rows, vocab].
inline StepResult run_step(DeviceChain& c, const std::vector<const sampling::RequestSampling*>& requests,
                           const std::vector<uint64_t>& seeds, const std::vector<float>& logits, int32_t vocab,
                           uint64_t step) {
  const int64_t n = static_cast<int64_t>(requests.size());
  std::vector<sampling::RowInput> rows(n);
  for (int64_t i = 0; i < n; ++i) {
    rows[i].sampling = requests[i];
    rows[i].seed = seeds[i];
    rows[i].step = step;
  }
  const int32_t device = c.stream != nullptr ? 0 : APH_DEVICE_CPU;
  Tensor t = Tensor::empty({n, vocab}, APH_DTYPE_F32, device);
  copy_bytes(t.data(), device, logits.data(), APH_DEVICE_CPU, logits.size() * sizeof(float));
  StepResult out;
  c.chain->sample(t, rows, out.chosen, nullptr);
  out.logits.resize(logits.size());
  copy_bytes(out.logits.data(), APH_DEVICE_CPU, t.data(), device, out.logits.size() * sizeof(float));
  return out;
}

inline void expect_same_kept(const std::vector<float>& cpu, const std::vector<float>& gpu, int32_t vocab,
                             const std::string& where) {
  ASSERT_EQ(cpu.size(), gpu.size());
  for (size_t i = 0; i < cpu.size(); ++i) {
    const bool kc = cpu[i] != -INFINITY, kg = gpu[i] != -INFINITY;
    ASSERT_EQ(kc, kg) << where << ": row " << i / vocab << " token " << i % vocab << " kept on "
                      << (kc ? "CPU" : "GPU") << " only";
    if (kc) {
      ASSERT_NEAR(cpu[i], gpu[i], 1e-4f * std::max(1.0f, std::fabs(cpu[i])))
          << where << ": row " << i / vocab << " token " << i % vocab;
    }
  }
}

}  // namespace aph::test
