// GPU vs CPU: every stage's kernel gives the same kept sets and, with the
// same seeds, the same tokens.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "tests/gpu/samplers/gpu_chain.hpp"

namespace aph::test {
namespace {

constexpr int32_t kVocab = 32000;
constexpr int kRows = 8;

struct Inputs {
  std::vector<float> logits;
  std::vector<std::vector<int32_t>> history;
};

Inputs make_inputs(uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> logit(0.0f, 3.0f);
  std::uniform_int_distribution<int32_t> tok(0, 400);  // a small alphabet: plenty of repeats
  Inputs in;
  in.logits.resize(static_cast<size_t>(kRows) * kVocab);
  for (float& x : in.logits) x = logit(gen);
  for (int r = 0; r < kRows; ++r) {
    std::vector<int32_t> h(2000 + 300 * r);
    for (int32_t& t : h) t = tok(gen);
    // Plant a repeat so DRY and no_repeat_ngram have work to do.
    for (int k = 0; k < 6; ++k) h[h.size() - 6 + k] = h[100 + k];
    in.history.push_back(std::move(h));
  }
  return in;
}

struct Result {
  std::vector<float> logits;
  std::vector<int32_t> chosen;
};

Result run(DeviceChain& c, const std::string& request, const Inputs& in, uint64_t step) {
  std::vector<std::unique_ptr<sampling::RequestSampling>> reqs;
  std::vector<sampling::RowInput> rows;
  for (int r = 0; r < kRows; ++r) {
    reqs.push_back(c.chain->prepare(boost::json::parse(request).as_object()));
    sampling::RowInput row;
    row.sampling = reqs.back().get();
    row.tokens = in.history[r].data();
    row.n_tokens = static_cast<int64_t>(in.history[r].size());
    row.n_prompt = row.n_tokens / 2;
    row.seed = 1000 + r;
    row.step = step;
    rows.push_back(row);
  }
  const int32_t device = c.stream != nullptr ? 0 : APH_DEVICE_CPU;
  Tensor t = Tensor::empty({kRows, kVocab}, APH_DTYPE_F32, device);
  copy_bytes(t.data(), device, in.logits.data(), APH_DEVICE_CPU, in.logits.size() * sizeof(float));
  Result out;
  c.chain->sample(t, rows, out.chosen, nullptr);
  out.logits.resize(in.logits.size());
  copy_bytes(out.logits.data(), APH_DEVICE_CPU, t.data(), device, out.logits.size() * sizeof(float));
  return out;
}

class GpuVsCpu : public ::testing::TestWithParam<const char*> {};

TEST_P(GpuVsCpu, SameKeptSetsAndTokens) {
  DeviceChain cpu(APH_DEVICE_CPU, kVocab);
  DeviceChain gpu(0, kVocab);
  for (uint64_t step = 0; step < 3; ++step) {
    Inputs in = make_inputs(static_cast<uint32_t>(step * 7 + 1));
    Result a = run(cpu, GetParam(), in, step);
    Result b = run(gpu, GetParam(), in, step);
    size_t kept = 0;
    for (size_t i = 0; i < a.logits.size(); ++i) {
      const bool ka = a.logits[i] != -INFINITY, kb = b.logits[i] != -INFINITY;
      ASSERT_EQ(ka, kb) << "row " << i / kVocab << " token " << i % kVocab << " step " << step;
      if (ka) {
        ++kept;
        ASSERT_NEAR(a.logits[i], b.logits[i], 1e-4f * std::max(1.0f, std::fabs(a.logits[i])))
            << "row " << i / kVocab << " token " << i % kVocab;
      }
    }
    EXPECT_GT(kept, 0u);
    EXPECT_EQ(a.chosen, b.chosen) << "step " << step;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Stages, GpuVsCpu,
    ::testing::Values(
        R"({})", R"({"temperature": 0})", R"({"temperature": 0.7})",
        R"({"dynatemp_min": 0.5, "dynatemp_max": 1.5, "dynatemp_exponent": 1.2})",
        R"({"top_k": 40})", R"({"top_p": 0.9})", R"({"min_p": 0.05})", R"({"top_a": 0.2})", R"({"tfs": 0.95})",
        R"({"typical_p": 0.8})", R"({"eta_cutoff": 5})", R"({"epsilon_cutoff": 3})", R"({"nsigma": 1.0})",
        R"({"smoothing_factor": 0.3, "smoothing_curve": 1.5})", R"({"skew": 0.4})",
        R"({"xtc_threshold": 0.02, "xtc_probability": 0.6})",
        R"({"repetition_penalty": 1.3, "frequency_penalty": 0.2, "presence_penalty": 0.3})",
        R"({"rep_pen": 1.2, "rep_pen_range": 600, "rep_pen_slope": 0.7})",
        R"({"dry_multiplier": 0.8, "dry_base": 1.75, "dry_allowed_length": 2, "dry_sequence_breaker_ids": [7, 9]})",
        R"({"no_repeat_ngram_size": 3})", R"({"logit_bias": {"5": 10, "17": -5}})",
        R"({"custom_token_bans": [1, 2, 3]})", R"({"allowed_token_ids": [10, 20, 30, 40]})",
        R"({"mirostat_mode": 2, "mirostat_tau": 5, "mirostat_eta": 0.1})",
        R"({"mirostat_mode": 1, "mirostat_tau": 5, "mirostat_eta": 0.1})", R"({"tfs": 0.5})",
        R"({"skew": 1.5, "temperature": 0.7})", R"({"top_k": 500, "tfs": 0.9, "skew": 0.3})",
        R"({"dry_multiplier": 0.8, "repetition_penalty": 1.1, "frequency_penalty": 0.1, "presence_penalty": 0.1,
            "xtc_threshold": 0.05, "xtc_probability": 0.5, "min_p": 0.02, "temperature": 0.9, "top_k": 200,
            "top_p": 0.95})"));

}  // namespace
}  // namespace aph::test
