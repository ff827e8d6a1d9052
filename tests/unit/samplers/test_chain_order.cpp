// Stage order: default, toml, per-request (SillyTavern names, Kobold ids),
// temperature_last.
#include <gtest/gtest.h>

#include "core/common/error.hpp"
#include "tests/unit/samplers/chain_harness.hpp"

namespace aph::test {
namespace {

constexpr int32_t kVocab = 200;

// min_p after temperature 3 keeps more tokens than min_p on the raw logits.
const char* kTempMinP = R"("temperature": 3.0, "min_p": 0.2)";

std::set<int32_t> minp_raw(const std::vector<float>& x, double mp, double temp) {
  std::vector<float> y = x;
  for (float& v : y) v /= static_cast<float>(temp);
  auto p = probs_of(y);
  const double pmax = *std::max_element(p.begin(), p.end());
  std::set<int32_t> s;
  for (int32_t i = 0; i < static_cast<int32_t>(x.size()); ++i) {
    if (p[i] >= mp * pmax) s.insert(i);
  }
  return s;
}

TEST(ChainOrder, DefaultIsAphroditesOrder) {
  ChainHarness h(kVocab);
  std::vector<std::string> want = {"min_tokens", "logit_bias", "token_bans", "allowed_token_ids",
                                   "banned_strings", "dry", "penalties", "no_repeat_ngram", "temperature",
                                   "top_nsigma", "top_k", "top_p", "top_a", "min_p", "tfs", "eta_cutoff",
                                   "epsilon_cutoff", "typical_p", "quadratic", "xtc", "skew", "mirostat", "sample"};
  EXPECT_EQ(h.chain().stage_names(), want);
}

TEST(ChainOrder, TemperatureBeforeMinPByDefault) {
  ChainHarness h(kVocab);
  auto x = random_logits(kVocab, 1);
  Step s = h.run1(std::string("{") + kTempMinP + "}", x);
  EXPECT_EQ(kept(s.logits), minp_raw(x, 0.2, 3.0));
  EXPECT_GT(kept(s.logits).size(), minp_raw(x, 0.2, 1.0).size());
}

TEST(ChainOrder, TemperatureLastAndRequestOverrides) {
  ChainHarness h(kVocab);
  auto x = random_logits(kVocab, 2);
  const auto raw = minp_raw(x, 0.2, 1.0);
  EXPECT_EQ(kept(h.run1(std::string("{") + kTempMinP + R"(, "temperature_last": true})", x).logits), raw);
  // SillyTavern: min_p named before temperature.
  EXPECT_EQ(kept(h.run1(std::string("{") + kTempMinP + R"(, "sampler_priority": ["min_p", "temperature"]})", x).logits),
            raw);
  // An explicit order wins over temperature_last.
  EXPECT_EQ(kept(h.run1(std::string("{") + kTempMinP +
                        R"(, "temperature_last": true, "sampler_priority": ["temperature", "min_p"]})", x).logits),
            minp_raw(x, 0.2, 3.0));
  // Kobold ids: 5 = temperature last in Lite's default [6,0,1,3,4,2,5].
  EXPECT_EQ(kept(h.run1(std::string("{") + kTempMinP + R"(, "sampler_order": [6, 0, 1, 3, 4, 2, 5]})", x).logits),
            raw);
  EXPECT_EQ(kept(h.run1(std::string("{") + kTempMinP + R"(, "sampler_order": [5, 6, 0, 1, 3, 4, 2]})", x).logits),
            minp_raw(x, 0.2, 3.0));
  // Empty priority = unset (SillyTavern sends [] for the default).
  EXPECT_EQ(kept(h.run1(std::string("{") + kTempMinP + R"(, "sampler_priority": []})", x).logits),
            minp_raw(x, 0.2, 3.0));
}

TEST(ChainOrder, RowsWithDifferentOrdersInOneBatch) {
  ChainHarness h(kVocab);
  auto x = random_logits(kVocab, 3);
  std::vector<float> batch = x;
  batch.insert(batch.end(), x.begin(), x.end());
  Step s = h.run({{std::string("{") + kTempMinP + "}", {}, 0, 1, 0},
                  {std::string("{") + kTempMinP + R"(, "temperature_last": true})", {}, 0, 1, 0}},
                 batch);
  EXPECT_EQ(kept(s.logits, 0, kVocab), minp_raw(x, 0.2, 3.0));
  EXPECT_EQ(kept(s.logits, kVocab, 2 * kVocab), minp_raw(x, 0.2, 1.0));
}

TEST(ChainOrder, TomlOrderAndItsErrors) {
  sampling::ChainOptions o;
  o.order = {"min_p", "temperature"};
  ChainHarness h(kVocab, o);
  auto x = random_logits(kVocab, 4);
  EXPECT_EQ(kept(h.run1(std::string("{") + kTempMinP + "}", x).logits), minp_raw(x, 0.2, 1.0));
  auto names = h.chain().stage_names();
  EXPECT_LT(std::find(names.begin(), names.end(), "min_p"), std::find(names.begin(), names.end(), "temperature"));

  sampling::ChainOptions bad;
  bad.order = {"temperature", "no_such_sampler"};
  EXPECT_THROW(ChainHarness(kVocab, bad), Error);
  sampling::ChainOptions fixed;
  fixed.order = {"sample", "temperature"};
  EXPECT_THROW(ChainHarness(kVocab, fixed), Error);
}

}  // namespace
}  // namespace aph::test

namespace aph::test {
namespace {

TEST(ChainOrder, SillyTavernsFullPriorityListIsAccepted) {
  ChainHarness h(kVocab);
  auto x = random_logits(kVocab, 5);
  const std::string st_default = R"(["dry", "penalties", "no_repeat_ngram", "temperature", "top_nsigma",
      "top_p_top_k", "top_a", "min_p", "tfs", "eta_cutoff", "epsilon_cutoff", "typical_p", "quadratic", "xtc"])";
  EXPECT_EQ(kept(h.run1(std::string("{") + kTempMinP + R"(, "sampler_priority": )" + st_default + "}", x).logits),
            minp_raw(x, 0.2, 3.0));
  // top_p_top_k names both stages: moving it before temperature moves both.
  Step s = h.run1(R"({"temperature": 3.0, "top_k": 5, "sampler_priority": ["top_p_top_k", "temperature"]})", x);
  EXPECT_EQ(kept(s.logits).size(), 5u);
  // A fixed stage cannot be reordered by a request either.
  EXPECT_THROW(h.prepare(R"({"sampler_priority": ["sample", "temperature"]})"), Error);
}

}  // namespace
}  // namespace aph::test
