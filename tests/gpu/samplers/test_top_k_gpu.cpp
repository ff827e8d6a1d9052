// GPU vs CPU for top-k's paths (plugins/samplers/cuda/top_k_blocks.cuh and
// the general radix select): small k on rows split 16 and 8 blocks wide,
// slices too long for the block path, ties that make too many candidates,
// rows with fewer live tokens than k, and the list the block path leaves for
// top-p, typical and min-p after it.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "tests/gpu/samplers/step_compare.hpp"

namespace aph::test {
namespace {

struct Case {
  int32_t vocab;
  int rows;
  float quantum;    // > 0: logits rounded to it, so many tie
  int live_every;   // > 0: only every n-th token is live, the rest -inf
};

std::vector<float> case_logits(const Case& c, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  std::vector<float> v(static_cast<size_t>(c.rows) * c.vocab);
  for (size_t i = 0; i < v.size(); ++i) {
    float x = dist(gen);
    if (c.quantum > 0) x = std::round(x / c.quantum) * c.quantum;
    if (c.live_every > 0 && (i % c.vocab) % c.live_every != 0) x = -INFINITY;
    v[i] = x;
  }
  return v;
}

void compare(const Case& c, const std::string& json, const std::string& where) {
  DeviceChain cpu(APH_DEVICE_CPU, c.vocab);
  DeviceChain gpu(0, c.vocab);
  for (uint64_t step = 0; step < 2; ++step) {
    std::vector<std::unique_ptr<sampling::RequestSampling>> rc, rg;
    std::vector<const sampling::RequestSampling*> pc, pg;
    std::vector<uint64_t> seeds;
    for (int r = 0; r < c.rows; ++r) {
      rc.push_back(cpu.chain->prepare(boost::json::parse(json).as_object()));
      rg.push_back(gpu.chain->prepare(boost::json::parse(json).as_object()));
      pc.push_back(rc.back().get());
      pg.push_back(rg.back().get());
      seeds.push_back(900 + r);
    }
    const std::vector<float> logits = case_logits(c, 31 + static_cast<uint32_t>(step));
    const StepResult a = run_step(cpu, pc, seeds, logits, c.vocab, step);
    const StepResult b = run_step(gpu, pg, seeds, logits, c.vocab, step);
    const std::string at = where + " " + json + " step " + std::to_string(step);
    expect_same_kept(a.logits, b.logits, c.vocab, at);
    if (::testing::Test::HasFatalFailure()) return;
    EXPECT_EQ(a.chosen, b.chosen) << at;
  }
}

void compare_ks(const Case& c, const std::string& where) {
  for (int k : {1, 7, 100, 128, 129, 1000}) {
    compare(c, R"({"top_k": )" + std::to_string(k) + "}", where);
    if (::testing::Test::HasFatalFailure()) return;
  }
  // The block path's list, read by the stages after it; top-p and typical
  // on a listed row of at most 256 tokens rank them (ranked_mass.cuh), on a
  // longer one take the radix select.
  for (const char* json : {R"({"top_k": 100, "top_p": 0.9, "min_p": 0.01, "temperature": 0.8})",
                           R"({"top_k": 128, "top_p": 0.3})", R"({"top_k": 100, "typical_p": 0.5})",
                           R"({"top_k": 50, "typical_p": 0})", R"({"top_k": 100, "top_p": 0.6, "typical_p": 0.7})",
                           R"({"top_k": 1000, "top_p": 0.95, "typical_p": 0.9})"}) {
    compare(c, json, where);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// One to four rows: clusters of 16 blocks; more: 8 (row_split.cuh).
TEST(TopKGpu, WideClusters) { compare_ks({128256, 1, 0.0f, 0}, "1 row"); }
TEST(TopKGpu, NarrowClusters) { compare_ks({128256, 8, 0.0f, 0}, "8 rows"); }
TEST(TopKGpu, SliceTooLongForRegisters) { compare_ks({200000, 8, 0.0f, 0}, "200k x 8"); }
TEST(TopKGpu, SmallVocabulary) { compare_ks({5000, 3, 0.0f, 0}, "5000 x 3"); }
// Coarse ties: a block's boundary group can hold thousands of tokens, more
// candidates than block 0 takes.
TEST(TopKGpu, TiesAtTheBoundary) { compare_ks({128256, 2, 0.5f, 0}, "ties"); }
TEST(TopKGpu, FewerLiveTokensThanK) { compare_ks({128256, 3, 0.0f, 2000}, "sparse"); }

}  // namespace
}  // namespace aph::test
