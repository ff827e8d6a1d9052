// Mirostat's state, read directly: the stage runs on a host batch (CPU code)
// and on a device batch (kernel) with twin requests, and after every step
// each request's mu for each seed is the same float on both.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "plugins/samplers/request.hpp"
#include "plugins/samplers/stages/selection.hpp"
#include "tests/gpu/samplers/stage_host.hpp"

namespace aph::samplers {
namespace {

using test::stage_cuda_services;
using test::tensor_view;

using Params = MirostatStage::Params;

std::unique_ptr<Params> make(PluginState& st, int mode, double tau, double eta) {
  const std::string json = "{\"mirostat_mode\": " + std::to_string(mode) + ", \"mirostat_tau\": " +
                           std::to_string(tau) + ", \"mirostat_eta\": " + std::to_string(eta) + "}";
  return MirostatStage::create(Request(json.c_str()), st);
}

float cpu_mu(const Params& p, uint64_t seed) {
  auto it = p.mu.find(seed);
  return it == p.mu.end() ? 2.0f * p.tau : it->second;
}

TEST(MirostatStateGpu, MuMatchesTheCpuAfterEveryStep) {
  constexpr int64_t kVocab = 32000;
  aph_host_services services = stage_cuda_services();
  PluginState st(&services);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);

  // Twin requests: [0] v2 with two choices (rows 0 and 2), [1] v1, [2] v2
  // whose row is sometimes decided before mirostat runs. Row 1 has no mirostat.
  std::vector<std::unique_ptr<Params>> cpu, gpu;
  const int modes[] = {2, 1, 2};
  const double taus[] = {3.0, 5.0, 4.0}, etas[] = {0.2, 0.1, 0.3};
  for (int r = 0; r < 3; ++r) {
    cpu.push_back(make(st, modes[r], taus[r], etas[r]));
    gpu.push_back(make(st, modes[r], taus[r], etas[r]));
  }
  const int request_of[] = {0, -1, 0, 1, 2};
  const uint64_t seeds[] = {11, 12, 13, 14, 15};
  constexpr int kRows = 5;

  void* d_logits = nullptr;
  void* d_chosen = nullptr;
  ASSERT_EQ(cudaMalloc(&d_logits, kRows * kVocab * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_chosen, kRows * sizeof(int32_t)), cudaSuccess);
  std::mt19937 gen(5);
  std::normal_distribution<float> dist(0.0f, 2.5f);
  for (uint64_t step = 0; step < 16; ++step) {
    std::vector<float> logits(kRows * kVocab);
    for (float& x : logits) x = dist(gen);
    std::vector<int32_t> chosen(kRows, -1);
    if (step % 2 == 0) chosen[4] = 7;  // decided by an earlier stage: mu stays

    std::vector<aph_sampler_row> cpu_rows_in(kRows), gpu_rows_in(kRows);
    for (int r = 0; r < kRows; ++r) {
      for (auto* rows : {&cpu_rows_in, &gpu_rows_in}) {
        aph_sampler_row& row = (*rows)[r];
        row.size = sizeof(row);
        row.seed = seeds[r];
        row.step = step;
      }
      if (request_of[r] >= 0) {
        cpu_rows_in[r].params = cpu[request_of[r]].get();
        gpu_rows_in[r].params = gpu[request_of[r]].get();
      }
    }

    // CPU: the stage's reference code on a host batch.
    std::vector<float> host_logits = logits;
    std::vector<int32_t> host_chosen = chosen;
    aph_sampler_batch hb{};
    hb.size = sizeof(hb);
    hb.logits = tensor_view(host_logits.data(), APH_DTYPE_F32, APH_DEVICE_CPU, kRows, kVocab);
    hb.chosen = tensor_view(host_chosen.data(), APH_DTYPE_I32, APH_DEVICE_CPU, kRows, 0);
    hb.n_rows = kRows;
    hb.rows = cpu_rows_in.data();
    hb.eos_token_id = -1;
    auto rows = cpu_rows<Params>(hb);
    MirostatStage::apply_cpu(st, std::span<const CpuRow<Params>>(rows));

    // GPU: the kernel on a device batch.
    ASSERT_EQ(cudaMemcpy(d_logits, logits.data(), logits.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(d_chosen, chosen.data(), kRows * sizeof(int32_t), cudaMemcpyHostToDevice), cudaSuccess);
    aph_sampler_batch db = hb;
    db.logits = tensor_view(d_logits, APH_DTYPE_F32, 0, kRows, kVocab);
    db.chosen = tensor_view(d_chosen, APH_DTYPE_I32, 0, kRows, 0);
    db.rows = gpu_rows_in.data();
    MirostatStage::apply_cuda(st, db, stream);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    std::vector<float> dev_logits(logits.size());
    std::vector<int32_t> dev_chosen(kRows);
    ASSERT_EQ(cudaMemcpy(dev_logits.data(), d_logits, dev_logits.size() * sizeof(float), cudaMemcpyDeviceToHost),
              cudaSuccess);
    ASSERT_EQ(cudaMemcpy(dev_chosen.data(), d_chosen, kRows * sizeof(int32_t), cudaMemcpyDeviceToHost), cudaSuccess);

    EXPECT_EQ(host_chosen, dev_chosen) << "step " << step;
    for (size_t i = 0; i < logits.size(); ++i) {
      ASSERT_EQ(host_logits[i] == -INFINITY, dev_logits[i] == -INFINITY)
          << "step " << step << " row " << i / kVocab << " token " << i % kVocab;
    }
    for (int r = 0; r < kRows; ++r) {
      if (request_of[r] < 0) continue;
      const float want = cpu_mu(*cpu[request_of[r]], seeds[r]);
      const float got = MirostatStage::device_mu(*gpu[request_of[r]], seeds[r], stream);
      EXPECT_FLOAT_EQ(want, got) << "step " << step << " row " << r;
    }
  }
  // The state moved: mu is not stuck at its start.
  EXPECT_NE(cpu_mu(*cpu[0], 11), 6.0f);
  EXPECT_NE(cpu_mu(*cpu[1], 14), 10.0f);
  EXPECT_NE(cpu_mu(*cpu[2], 15), 8.0f);  // row 4 ran on odd steps only
  gpu.clear();  // frees the device mu before the stream goes
  cudaFree(d_logits);
  cudaFree(d_chosen);
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace aph::samplers
