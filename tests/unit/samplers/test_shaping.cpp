// Quadratic smoothing, XTC and skew against their formulas.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "tests/unit/samplers/chain_harness.hpp"

namespace aph::test {
namespace {

constexpr int32_t kVocab = 128;

TEST(Quadratic, MatchesFormula) {
  ChainHarness h(kVocab);
  auto x = random_logits(kVocab, 1);
  const float f = 0.3f, c = 2.0f;
  Step s = h.run1(R"({"smoothing_factor": 0.3, "smoothing_curve": 2.0})", x);
  const float m = *std::max_element(x.begin(), x.end());
  for (int32_t i = 0; i < kVocab; ++i) {
    const float d = x[i] - m;
    const float want = m - f * (3 - c) / 2 * d * d + f * (c - 1) / 2 * d * d * d;
    EXPECT_NEAR(s.logits[i], want, 1e-4f * std::max(1.0f, std::fabs(want)));
  }
}

TEST(Xtc, RemovesTopChoicesButTheLeastLikely) {
  ChainHarness h(kVocab);
  std::vector<float> x(kVocab, 0.0f);
  x[3] = 6.0f;
  x[9] = 5.5f;
  x[20] = 5.0f;  // three tokens above 0.1
  auto p = probs_of(x);
  ASSERT_GE(p[20], 0.1);
  Step s = h.run1(R"({"xtc_threshold": 0.1, "xtc_probability": 1.0})", x);
  EXPECT_EQ(s.logits[3], kNegInf);
  EXPECT_EQ(s.logits[9], kNegInf);
  EXPECT_EQ(s.logits[20], 5.0f);
  EXPECT_EQ(kept(s.logits).size(), static_cast<size_t>(kVocab - 2));
  // One top choice only: nothing changes.
  std::vector<float> y(kVocab, 0.0f);
  y[5] = 8.0f;
  EXPECT_EQ(kept(h.run1(R"({"xtc_threshold": 0.1, "xtc_probability": 1.0})", y).logits).size(),
            static_cast<size_t>(kVocab));
}

TEST(Xtc, FiresWithItsProbabilityPerStep) {
  ChainHarness h(kVocab);
  std::vector<float> x(kVocab, 0.0f);
  x[3] = 6.0f;
  x[9] = 5.5f;
  int fired = 0;
  for (uint64_t step = 0; step < 2000; ++step) {
    fired += h.run1(R"({"xtc_threshold": 0.1, "xtc_probability": 0.3})", x, {}, 0, 5, step).logits[3] == kNegInf;
  }
  EXPECT_NEAR(fired / 2000.0, 0.3, 0.035);
}

TEST(Skew, DifferencesOfPoweredSortedCdf) {
  ChainHarness h(kVocab);
  auto x = random_logits(kVocab, 2, 1.5f);
  auto p = probs_of(x);
  std::vector<int32_t> idx(kVocab);
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](int32_t a, int32_t b) { return p[a] > p[b]; });
  const double e = std::exp(0.5);
  Step s = h.run1(R"({"skew": 0.5})", x);
  auto q = probs_of(s.logits);
  double cum = 0, prev = 0;
  for (int32_t i : idx) {
    cum += p[i];
    const double c = std::pow(std::min(cum, 1.0), e);
    EXPECT_NEAR(q[i], c - prev, 1e-6);
    prev = c;
  }
}

// A peaked row: the running sum C is within rounding of 1 long before the
// last tokens, where C^e - C_before^e would be mostly rounding error (or 0,
// removing the token). Each tail token keeps e * p, the slope of C^e at 1.
TEST(Skew, TailTokensKeepTheirShare) {
  ChainHarness h(kVocab);
  std::vector<float> x(kVocab);
  for (int32_t i = 0; i < kVocab; ++i) x[i] = -0.4f * static_cast<float>(i);  // p down to e^-51
  auto p = probs_of(x);
  const double e = std::exp(0.5);
  Step s = h.run1(R"({"skew": 0.5})", x);
  double total = 0;
  for (int32_t i = 0; i < kVocab; ++i) {
    ASSERT_NE(s.logits[i], kNegInf) << "token " << i;
    total += std::exp(static_cast<double>(s.logits[i]));
    if (p[i] < 1e-12) {
      EXPECT_NEAR(s.logits[i], std::log(e * p[i]), 1e-5) << "token " << i;
    }
  }
  EXPECT_NEAR(total, 1.0, 1e-6);
}

}  // namespace
}  // namespace aph::test
