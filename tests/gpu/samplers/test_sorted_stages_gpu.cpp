// GPU vs CPU for the stages that walk the sorted distribution (tail-free,
// skew, mirostat): batches mixing them with rows that do not use them, logits
// with many exact ties (the sorted order splits tie groups, so it must be the
// CPU's), batches large enough to sort in chunks, and mirostat's state over
// many steps of the same requests.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>

#include "plugins/samplers/cuda/kernels.hpp"
#include "tests/gpu/samplers/step_compare.hpp"

namespace aph::test {
namespace {

using Requests = std::vector<std::unique_ptr<sampling::RequestSampling>>;

// Rows with at most this many live tokens are sorted in shared memory.
constexpr int32_t kCap = samplers::cuda::kCompactCap;

// Same kept sets, kept values within float rounding, same tokens.
void expect_same(const StepResult& cpu, const StepResult& gpu, int32_t vocab, const std::string& where) {
  expect_same_kept(cpu.logits, gpu.logits, vocab, where);
  if (::testing::Test::HasFatalFailure()) return;
  EXPECT_EQ(cpu.chosen, gpu.chosen) << where;
}

std::vector<float> normal_logits(int64_t n, uint32_t seed, float scale, float quantum = 0.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) {
    x = dist(gen);
    // Coarse steps, as from a low-precision model output: many exact ties.
    if (quantum > 0) x = std::round(x / quantum) * quantum;
  }
  return v;
}

// Fresh requests each step: one row per JSON, seeds 500 + row; logits(step)
// gives the step's rows.
void compare_fresh(const std::vector<std::string>& json, int32_t vocab,
                   const std::function<std::vector<float>(int step)>& logits_of, int steps) {
  DeviceChain cpu(APH_DEVICE_CPU, vocab);
  DeviceChain gpu(0, vocab);
  const int64_t n = static_cast<int64_t>(json.size());
  std::vector<uint64_t> seeds(n);
  for (int64_t i = 0; i < n; ++i) seeds[i] = 500 + i;
  for (int step = 0; step < steps; ++step) {
    Requests rc, rg;
    std::vector<const sampling::RequestSampling*> pc, pg;
    for (const std::string& j : json) {
      rc.push_back(cpu.chain->prepare(boost::json::parse(j).as_object()));
      rg.push_back(gpu.chain->prepare(boost::json::parse(j).as_object()));
      pc.push_back(rc.back().get());
      pg.push_back(rg.back().get());
    }
    const std::vector<float> logits = logits_of(step);
    StepResult a = run_step(cpu, pc, seeds, logits, vocab, step);
    StepResult b = run_step(gpu, pg, seeds, logits, vocab, step);
    expect_same(a, b, vocab, "step " + std::to_string(step));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

void compare_fresh(const std::vector<std::string>& json, int32_t vocab, float scale, float quantum, int steps) {
  const int64_t items = static_cast<int64_t>(json.size()) * vocab;
  compare_fresh(json, vocab, [&](int step) { return normal_logits(items, 77 + step, scale, quantum); }, steps);
}

TEST(SortedStagesGpu, MixedBatchMatchesCpu) {
  compare_fresh({R"({"tfs": 0.9})", R"({})", R"({"tfs": 0.5, "top_k": 300})", R"({"skew": 0.5})",
                 R"({"skew": 2.0, "min_p": 0.001})", R"({"top_p": 0.9})",
                 R"({"tfs": 0.97, "skew": 0.3, "temperature": 0.8})",
                 R"({"mirostat_mode": 1, "mirostat_tau": 4, "mirostat_eta": 0.1})",
                 R"({"mirostat_mode": 2, "mirostat_tau": 3, "mirostat_eta": 0.2})",
                 R"({"mirostat_mode": 2, "mirostat_tau": 6, "mirostat_eta": 0.1, "top_k": 100})",
                 R"({"mirostat_mode": 1, "mirostat_tau": 50, "mirostat_eta": 0.1})"},
                32000, 3.0f, 0.0f, 3);
}

TEST(SortedStagesGpu, TiesSplitLikeTheCpu) {
  const std::vector<std::string> json = {
      R"({"tfs": 0.9})", R"({"tfs": 0.6})", R"({"skew": 0.5})", R"({"skew": 0.2, "top_k": 40})",
      R"({"mirostat_mode": 1, "mirostat_tau": 3, "mirostat_eta": 0.1})",
      R"({"mirostat_mode": 2, "mirostat_tau": 4, "mirostat_eta": 0.1})", R"({})"};
  compare_fresh(json, 32000, 3.0f, 0.5f, 3);
  compare_fresh(json, 1000, 2.0f, 0.25f, 3);
}

TEST(SortedStagesGpu, TinyRowsAndFewLiveTokens) {
  compare_fresh({R"({"allowed_token_ids": [1, 4], "tfs": 0.5})", R"({"allowed_token_ids": [2, 3, 5], "tfs": 0.1})",
                 R"({"allowed_token_ids": [3], "skew": 0.7})",
                 R"({"allowed_token_ids": [3], "mirostat_mode": 2, "mirostat_tau": 1, "mirostat_eta": 0.1})",
                 R"({"allowed_token_ids": [0, 6], "mirostat_mode": 1, "mirostat_tau": 1, "mirostat_eta": 0.1})",
                 R"({"tfs": 0.8, "skew": 1.0})"},
                7, 1.5f, 0.0f, 4);
}

// A row with `live` live logits at random ids (the rest -inf): normal values,
// rounded to `quantum` when it is not 0 (exact ties), with every tenth live
// value a zero of either sign (-0.0 and +0.0 tie; ids decide).
std::vector<float> sparse_row(int32_t vocab, int32_t live, uint32_t seed, float quantum) {
  std::mt19937 gen(seed);
  std::vector<int32_t> ids(vocab);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), gen);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  std::vector<float> row(vocab, -INFINITY);
  for (int32_t k = 0; k < live; ++k) {
    float x = dist(gen);
    if (quantum > 0) x = std::round(x / quantum) * quantum;
    if (k % 10 == 9) x = (k / 10) % 2 == 0 ? 0.0f : -0.0f;
    row[ids[k]] = x;
  }
  return row;
}

// Rows with few live tokens take the compact path (sorted in shared memory),
// rows with more than kCompactCap the full sort, both in one batch: every
// stage on live counts 1, 2, 3, a few, just under, at and just over the cap,
// and the whole vocabulary, with and without ties.
TEST(SortedStagesGpu, CompactAndFullRowsMatchCpu) {
  constexpr int32_t kVocab = 32000;
  const std::vector<std::string> stages = {
      R"({"tfs": 0.9})", R"({"tfs": 0.5})", R"({"skew": 0.5})", R"({"skew": 2.0})",
      R"({"mirostat_mode": 1, "mirostat_tau": 3, "mirostat_eta": 0.1})",
      R"({"mirostat_mode": 1, "mirostat_tau": 8, "mirostat_eta": 0.1})",
      R"({"mirostat_mode": 2, "mirostat_tau": 4, "mirostat_eta": 0.1})",
      R"({"mirostat_mode": 2, "mirostat_tau": 9, "mirostat_eta": 0.1})"};
  struct Shape {
    int32_t live;
    float quantum;
  };
  const std::vector<Shape> shapes = {{1, 0.0f},       {2, 0.0f},        {2, 1e6f},        {3, 0.0f},
                                     {3, 1e6f},       {100, 0.0f},      {100, 0.5f},      {kCap - 1, 0.0f},
                                     {kCap, 0.0f},    {kCap, 0.25f},    {kCap + 1, 0.0f}, {kCap + 1, 0.25f},
                                     {kVocab, 0.0f},  {kVocab, 0.5f}};
  std::vector<std::string> json;
  for (const std::string& stage : stages) {
    for (size_t k = 0; k < shapes.size(); ++k) json.push_back(stage);
  }
  json.push_back(R"({})");  // a row the stages leave alone
  const int64_t n = static_cast<int64_t>(json.size());
  compare_fresh(json, kVocab,
                [&](int step) {
                  std::vector<float> logits;
                  logits.reserve(n * kVocab);
                  for (int64_t r = 0; r < n; ++r) {
                    const Shape& shape = shapes[r % shapes.size()];
                    const auto row = sparse_row(kVocab, r + 1 == n ? kVocab : shape.live,
                                                static_cast<uint32_t>(1000 * step + r), shape.quantum);
                    logits.insert(logits.end(), row.begin(), row.end());
                  }
                  return logits;
                },
                2);
}

// A vocabulary no larger than the cap never needs the full sort.
TEST(SortedStagesGpu, SmallVocabularyIsAllCompact) {
  const std::vector<std::string> json = {
      R"({"tfs": 0.7})", R"({"skew": 0.4})", R"({"mirostat_mode": 1, "mirostat_tau": 2, "mirostat_eta": 0.1})",
      R"({"mirostat_mode": 2, "mirostat_tau": 3, "mirostat_eta": 0.1})", R"({"tfs": 0.8, "top_k": 5})"};
  compare_fresh(json, kCap, 3.0f, 0.0f, 2);
  compare_fresh(json, kCap, 3.0f, 0.5f, 2);
}

// What the price benchmark runs: truncations first, then the sorted stages
// on the few tokens left.
TEST(SortedStagesGpu, AfterTruncationMatchesCpu) {
  compare_fresh({R"({"top_k": 100, "tfs": 0.95})", R"({"top_k": 100, "top_p": 0.95, "min_p": 0.02, "tfs": 0.98})",
                 R"({"top_k": 100, "skew": 0.1})", R"({"min_p": 0.05, "skew": 0.7})",
                 R"({"top_k": 100, "mirostat_mode": 1, "mirostat_tau": 5, "mirostat_eta": 0.1})",
                 R"({"top_k": 100, "mirostat_mode": 2, "mirostat_tau": 5, "mirostat_eta": 0.1})",
                 R"({"top_k": 100, "tfs": 0.98, "skew": 0.1, "temperature": 0.9})"},
                128256, 3.0f, 0.0f, 2);
}

// 40 rows of a Llama-3-sized vocabulary need more sort scratch than one
// chunk may take (96 MiB: 32 such rows), so tail-free and mirostat sort and
// run in two chunks; skew (every third row) in one.
TEST(SortedStagesGpu, LargeBatchSortsInChunks) {
  std::vector<std::string> json;
  for (int i = 0; i < 40; ++i) {
    std::string j = "{\"tfs\": " + std::to_string(0.95 - 0.05 * (i % 4)) +
                    ", \"mirostat_mode\": " + std::to_string(1 + i % 2) +
                    ", \"mirostat_tau\": " + std::to_string(3 + i % 5) + ", \"mirostat_eta\": 0.1";
    if (i % 3 == 0) j += ", \"skew\": 0.2";
    json.push_back(j + "}");
  }
  compare_fresh(json, 128256, 3.0f, 0.0f, 1);
}

// The same requests over many steps: mu evolves per request and seed (two
// rows share one request as the n choices do), and each step's mirostat
// kept set depends on it, so equal kept sets and tokens step after step mean
// the CPU and the GPU carry the same mu.
TEST(SortedStagesGpu, MirostatStateFollowsTheCpuOverSteps) {
  constexpr int32_t kVocab = 32000;
  const std::vector<std::string> json = {
      R"({"mirostat_mode": 2, "mirostat_tau": 3, "mirostat_eta": 0.2})",
      R"({"temperature": 0.9})",
      R"({"mirostat_mode": 1, "mirostat_tau": 5, "mirostat_eta": 0.1})",
      R"({"mirostat_mode": 2, "mirostat_tau": 4, "mirostat_eta": 0.5, "top_k": 50})",
      R"({"mirostat_mode": 2, "mirostat_tau": 2, "mirostat_eta": 0.3})",
  };
  DeviceChain cpu(APH_DEVICE_CPU, kVocab);
  DeviceChain gpu(0, kVocab);
  Requests rc, rg;
  for (const std::string& j : json) {
    rc.push_back(cpu.chain->prepare(boost::json::parse(j).as_object()));
    rg.push_back(gpu.chain->prepare(boost::json::parse(j).as_object()));
  }
  // Row 5 is request 0's second choice (its own seed, so its own mu).
  const std::vector<int> request_of = {0, 1, 2, 3, 4, 0};
  const std::vector<uint64_t> seeds = {11, 12, 13, 14, 15, 16};
  std::vector<const sampling::RequestSampling*> pc, pg;
  for (int r : request_of) {
    pc.push_back(rc[r].get());
    pg.push_back(rg[r].get());
  }
  const int64_t n = static_cast<int64_t>(request_of.size());
  for (uint64_t step = 0; step < 24; ++step) {
    auto logits = normal_logits(n * kVocab, 1000 + static_cast<uint32_t>(step), 2.5f);
    StepResult a = run_step(cpu, pc, seeds, logits, kVocab, step);
    StepResult b = run_step(gpu, pg, seeds, logits, kVocab, step);
    expect_same(a, b, kVocab, "step " + std::to_string(step));
    if (HasFatalFailure()) return;
  }
}

// mu carried across steps while a row's live count moves between the
// compact path and the full sort.
TEST(SortedStagesGpu, MirostatStateAcrossCompactAndFullSteps) {
  constexpr int32_t kVocab = 16000;
  const std::vector<std::string> json = {
      R"({"mirostat_mode": 2, "mirostat_tau": 3, "mirostat_eta": 0.2})",
      R"({"mirostat_mode": 1, "mirostat_tau": 5, "mirostat_eta": 0.1})",
      R"({"mirostat_mode": 2, "mirostat_tau": 6, "mirostat_eta": 0.5})",
  };
  DeviceChain cpu(APH_DEVICE_CPU, kVocab);
  DeviceChain gpu(0, kVocab);
  Requests rc, rg;
  std::vector<const sampling::RequestSampling*> pc, pg;
  for (const std::string& j : json) {
    rc.push_back(cpu.chain->prepare(boost::json::parse(j).as_object()));
    rg.push_back(gpu.chain->prepare(boost::json::parse(j).as_object()));
    pc.push_back(rc.back().get());
    pg.push_back(rg.back().get());
  }
  const std::vector<uint64_t> seeds = {21, 22, 23};
  const std::vector<int32_t> lives = {50, kVocab, kCap, kCap + 1, 2, 1, 700};
  for (uint64_t step = 0; step < 14; ++step) {
    std::vector<float> logits;
    for (size_t r = 0; r < json.size(); ++r) {
      const auto row = sparse_row(kVocab, lives[(step + r) % lives.size()], static_cast<uint32_t>(50 * step + r), 0.0f);
      logits.insert(logits.end(), row.begin(), row.end());
    }
    StepResult a = run_step(cpu, pc, seeds, logits, kVocab, step);
    StepResult b = run_step(gpu, pg, seeds, logits, kVocab, step);
    expect_same(a, b, kVocab, "step " + std::to_string(step));
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace aph::test
