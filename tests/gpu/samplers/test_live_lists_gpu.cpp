// The live lists the CUDA stages keep between the stages of one chain run
// (plugins/samplers/cuda/kernels.hpp's LiveList): after a truncation, later
// stages read a row's listed tokens instead of the whole row. Against the
// CPU: chains of truncations over several runs of the same chain with new
// logits each time (a list of the previous run must go unread), rows that
// use a stage next to rows that do not (lists are per logits row, not per
// active row), and batches whose host gives no run id.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <random>

#include "plugins/samplers/request.hpp"
#include "plugins/samplers/stages/truncation.hpp"
#include "tests/gpu/samplers/step_compare.hpp"
#include "tests/gpu/samplers/stage_host.hpp"

namespace aph::test {
namespace {

using Requests = std::vector<std::unique_ptr<sampling::RequestSampling>>;

bool has_cuda_device() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

std::vector<float> normal_logits(int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

StepResult run_requests(DeviceChain& c, const Requests& requests, const std::vector<float>& logits, int32_t vocab,
                        uint64_t step) {
  std::vector<const sampling::RequestSampling*> rows;
  std::vector<uint64_t> seeds;
  for (size_t i = 0; i < requests.size(); ++i) {
    rows.push_back(requests[i].get());
    seeds.push_back(900 + i);
  }
  return run_step(c, rows, seeds, logits, vocab, step);
}

// Every stage that reads the lists, after a truncation that leaves at most
// 1024 live tokens (so the first stage after it writes the row's list), and
// rows that stay dense or use none of them, in one batch, over several runs.
TEST(LiveListsGpu, ChainsOverSeveralRunsMatchCpu) {
  if (!has_cuda_device()) GTEST_SKIP() << "no CUDA device";
  constexpr int32_t kVocab = 32000;
  const std::vector<std::string> json = {
      R"({"top_k": 300, "top_p": 0.95, "min_p": 0.02, "typical_p": 0.9})",
      R"({"top_k": 100, "top_p": 0.9, "typical_p": 0.95})",  // no min_p: min_p's active row 1 is row 3
      R"({})",
      R"({"top_k": 500, "min_p": 0.05})",
      R"({"min_p": 0.001, "top_p": 0.97})",  // top_p leaves thousands: no stage lists the row
      R"({"top_k": 1024, "top_p": 0.99, "typical_p": 0.99})",  // the most a list holds
      R"({"top_k": 1025, "top_p": 0.99, "typical_p": 0.99})",  // one more: the row stays dense
      R"({"top_k": 200, "temperature": 0.7, "temperature_last": true})",
      R"({"top_k": 200, "dynatemp_min": 0.5, "dynatemp_max": 1.5, "temperature_last": true})",
      R"({"top_k": 300, "top_a": 0.05, "eta_cutoff": 5, "epsilon_cutoff": 3, "nsigma": 2.0})",
      R"({"top_k": 300, "smoothing_factor": 0.3, "smoothing_curve": 1.5})",
      R"({"top_k": 200, "xtc_threshold": 0.02, "xtc_probability": 1.0})",
      R"({"top_k": 64, "tfs": 0.95, "skew": 0.3})",
      R"({"top_k": 100, "mirostat_mode": 2, "mirostat_tau": 5, "mirostat_eta": 0.1})",
      R"({"top_k": 40, "temperature": 0})",
      R"({"top_k": 20, "min_p": 0.9, "top_p": 0.5})",  // a handful left, then fewer
  };
  DeviceChain cpu(APH_DEVICE_CPU, kVocab);
  DeviceChain gpu(0, kVocab);
  const int64_t n = static_cast<int64_t>(json.size());
  for (uint64_t step = 0; step < 3; ++step) {
    Requests rc, rg;
    for (const std::string& j : json) {
      rc.push_back(cpu.chain->prepare(boost::json::parse(j).as_object()));
      rg.push_back(gpu.chain->prepare(boost::json::parse(j).as_object()));
    }
    // New logits each run: the lists of the run before name other tokens.
    const auto logits = normal_logits(n * kVocab, 31 + static_cast<uint32_t>(step));
    const StepResult a = run_requests(cpu, rc, logits, kVocab, step);
    const StepResult b = run_requests(gpu, rg, logits, kVocab, step);
    expect_same_kept(a.logits, b.logits, kVocab, "run " + std::to_string(step));
    if (HasFatalFailure()) return;
    EXPECT_EQ(a.chosen, b.chosen) << "run " << step;
  }
}

// ---- stages called directly, with the run id the batch gives ----------------

// top_k then top_p then min_p on rows 0 and 2 of three (row 1 has none of
// them), on the CPU and on the device, with `run_id` and `size` as given.
template <typename Stage>
void apply_both(samplers::PluginState& st, const std::string& json, std::vector<float>& host, float* device_logits,
                int32_t* device_chosen, int64_t rows, int64_t vocab, uint64_t run_id, uint32_t size,
                cudaStream_t stream) {
  const auto params = Stage::create(samplers::Request(json.c_str()), st);
  ASSERT_NE(params, nullptr) << json;
  std::vector<aph_sampler_row> row(rows);
  for (int64_t r = 0; r < rows; ++r) {
    row[r].size = sizeof(aph_sampler_row);
    row[r].params = r == 1 ? nullptr : params.get();
  }
  std::vector<int32_t> chosen(rows, -1);
  aph_sampler_batch hb{};
  hb.size = sizeof(hb);
  hb.logits = tensor_view(host.data(), APH_DTYPE_F32, APH_DEVICE_CPU, rows, vocab);
  hb.chosen = tensor_view(chosen.data(), APH_DTYPE_I32, APH_DEVICE_CPU, rows, 0);
  hb.n_rows = static_cast<uint32_t>(rows);
  hb.rows = row.data();
  hb.eos_token_id = -1;
  auto cpu_rows = samplers::cpu_rows<typename Stage::Params>(hb);
  Stage::apply_cpu(st, std::span<const samplers::CpuRow<typename Stage::Params>>(cpu_rows));

  aph_sampler_batch db = hb;
  db.size = size;
  db.logits = tensor_view(device_logits, APH_DTYPE_F32, 0, rows, vocab);
  db.chosen = tensor_view(device_chosen, APH_DTYPE_I32, 0, rows, 0);
  db.run_id = run_id;  // present in memory even when `size` leaves it out
  Stage::apply_cuda(st, db, stream);
}

TEST(LiveListsGpu, RunIdOnlyWhereTheBatchGivesIt) {
  if (!has_cuda_device()) GTEST_SKIP() << "no CUDA device";
  constexpr int64_t kVocab = 32000, kRows = 3;
  aph_host_services services = stage_cuda_services();
  samplers::PluginState st(&services);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  void* logits_memory = nullptr;
  void* chosen_memory = nullptr;
  ASSERT_EQ(cudaMalloc(&logits_memory, kRows * kVocab * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&chosen_memory, kRows * sizeof(int32_t)), cudaSuccess);
  auto* d_logits = static_cast<float*>(logits_memory);
  auto* d_chosen = static_cast<int32_t*>(chosen_memory);

  const uint32_t full = sizeof(aph_sampler_batch);
  const auto old_host = static_cast<uint32_t>(offsetof(aph_sampler_batch, run_id));
  // Every pass reuses run id 7 in memory; only the first gives it. Were it
  // read where the batch does not give it (size too small, or 0), the
  // top_p of a later pass would read the first pass's lists, of other logits.
  struct Pass {
    uint64_t run_id;
    uint32_t size;
  };
  const Pass passes[] = {{7, full}, {7, old_host}, {0, full}, {7, old_host}};
  for (size_t k = 0; k < std::size(passes); ++k) {
    std::vector<float> host = normal_logits(kRows * kVocab, 500 + static_cast<uint32_t>(k));
    ASSERT_EQ(cudaMemcpy(d_logits, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    const Pass& p = passes[k];
    apply_both<samplers::TopKStage>(st, R"({"top_k": 300})", host, d_logits, d_chosen, kRows, kVocab, p.run_id,
                                    p.size, stream);
    apply_both<samplers::TopPStage>(st, R"({"top_p": 0.9})", host, d_logits, d_chosen, kRows, kVocab, p.run_id,
                                    p.size, stream);
    apply_both<samplers::MinPStage>(st, R"({"min_p": 0.05})", host, d_logits, d_chosen, kRows, kVocab, p.run_id,
                                    p.size, stream);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    std::vector<float> device(host.size());
    ASSERT_EQ(cudaMemcpy(device.data(), d_logits, device.size() * sizeof(float), cudaMemcpyDeviceToHost),
              cudaSuccess);
    expect_same_kept(host, device, static_cast<int32_t>(kVocab), "pass " + std::to_string(k));
    if (HasFatalFailure()) break;
  }
  cudaFree(d_logits);
  cudaFree(d_chosen);
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace aph::test
