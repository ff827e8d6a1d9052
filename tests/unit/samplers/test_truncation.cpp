// Truncation stages against direct implementations of their definitions.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "tests/unit/samplers/chain_harness.hpp"

namespace aph::test {
namespace {

constexpr int32_t kVocab = 512;

std::vector<int32_t> by_prob_desc(const std::vector<double>& p) {
  std::vector<int32_t> idx(p.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](int32_t a, int32_t b) { return p[a] > p[b]; });
  return idx;
}

TEST(Truncation, TopKKeepsExactlyTheKLargest) {
  ChainHarness h(kVocab);
  for (int k : {1, 5, 40, 511}) {
    auto x = random_logits(kVocab, 10 + k);
    Step s = h.run1("{\"top_k\": " + std::to_string(k) + "}", x);
    std::vector<float> sorted = x;
    std::sort(sorted.rbegin(), sorted.rend());
    std::set<int32_t> want;
    for (int32_t i = 0; i < kVocab; ++i) {
      if (x[i] >= sorted[k - 1]) want.insert(i);
    }
    EXPECT_EQ(kept(s.logits), want) << "k=" << k;
  }
}

TEST(Truncation, TopKOffValues) {
  ChainHarness h(kVocab);
  auto x = random_logits(kVocab, 3);
  for (const char* req : {"{\"top_k\": -1}", "{\"top_k\": 0}", "{\"top_k\": 100000}"}) {
    EXPECT_EQ(kept(h.run1(req, x).logits).size(), static_cast<size_t>(kVocab)) << req;
  }
}

TEST(Truncation, TopPKeepsSmallestNucleus) {
  ChainHarness h(kVocab);
  for (double p : {0.05, 0.3, 0.8, 0.95}) {
    auto x = random_logits(kVocab, static_cast<uint32_t>(p * 1000));
    Step s = h.run1("{\"top_p\": " + std::to_string(p) + "}", x);
    auto pr = probs_of(x);
    std::set<int32_t> want;
    double cum = 0;
    for (int32_t i : by_prob_desc(pr)) {
      want.insert(i);
      cum += pr[i];
      if (cum >= p) break;
    }
    EXPECT_EQ(kept(s.logits), want) << "p=" << p;
  }
}

TEST(Truncation, MinPKeepsExactlyTokensAboveScaledMax) {
  ChainHarness h(kVocab);
  for (double mp : {0.01, 0.05, 0.2, 0.9}) {
    auto x = random_logits(kVocab, static_cast<uint32_t>(mp * 977));
    Step s = h.run1("{\"min_p\": " + std::to_string(mp) + "}", x);
    auto pr = probs_of(x);
    const double pmax = *std::max_element(pr.begin(), pr.end());
    for (int32_t i = 0; i < kVocab; ++i) {
      const double ratio = pr[i] / (mp * pmax);
      if (std::fabs(ratio - 1) < 1e-5) continue;  // on the boundary: float vs double may differ
      EXPECT_EQ(s.logits[i] != kNegInf, ratio >= 1) << "token " << i << " min_p " << mp;
    }
  }
}

TEST(Truncation, TopAKeepsAboveAPmaxSquared) {
  ChainHarness h(kVocab);
  auto x = random_logits(kVocab, 77, 2.0f);
  Step s = h.run1("{\"top_a\": 0.5}", x);
  auto pr = probs_of(x);
  const double pmax = *std::max_element(pr.begin(), pr.end());
  std::set<int32_t> want;
  for (int32_t i = 0; i < kVocab; ++i) {
    if (pr[i] >= 0.5 * pmax * pmax) want.insert(i);
  }
  EXPECT_EQ(kept(s.logits), want);
}

TEST(Truncation, EpsilonAndEtaInUnitsOf1em4) {
  ChainHarness h(kVocab);
  auto x = random_logits(kVocab, 78, 2.0f);
  auto pr = probs_of(x);
  Step s = h.run1("{\"epsilon_cutoff\": 30}", x);
  std::set<int32_t> want;
  for (int32_t i = 0; i < kVocab; ++i) {
    if (pr[i] >= 30e-4) want.insert(i);
  }
  EXPECT_EQ(kept(s.logits), want);

  double h_nats = 0;
  for (double p : pr) h_nats -= p * std::log(p);
  const double eta = 20e-4;
  const double eps = std::min(eta, std::sqrt(eta) * std::exp(-h_nats));
  std::set<int32_t> want_eta;
  for (int32_t i = 0; i < kVocab; ++i) {
    if (pr[i] >= eps) want_eta.insert(i);
  }
  EXPECT_EQ(kept(h.run1("{\"eta_cutoff\": 20}", x).logits), want_eta);
}

TEST(Truncation, TypicalKeepsMostTypicalMass) {
  ChainHarness h(kVocab);
  auto x = random_logits(kVocab, 79, 2.0f);
  auto pr = probs_of(x);
  double ent = 0;
  for (double p : pr) ent -= p * std::log(p);
  std::vector<int32_t> idx(kVocab);
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](int32_t a, int32_t b) {
    return std::fabs(-std::log(pr[a]) - ent) < std::fabs(-std::log(pr[b]) - ent);
  });
  std::set<int32_t> want;
  double cum = 0;
  for (int32_t i : idx) {
    want.insert(i);
    cum += pr[i];
    if (cum >= 0.6) break;
  }
  EXPECT_EQ(kept(h.run1("{\"typical_p\": 0.6}", x).logits), want);
}

TEST(Truncation, TailFreeCutsWhereCurvatureMassPassesZ) {
  ChainHarness h(kVocab);
  auto x = random_logits(kVocab, 80, 2.5f);
  auto pr = probs_of(x);
  std::vector<int32_t> idx = by_prob_desc(pr);
  std::vector<double> d2;
  for (int i = 0; i + 2 < kVocab; ++i) d2.push_back(std::fabs(pr[idx[i]] - 2 * pr[idx[i + 1]] + pr[idx[i + 2]]));
  const double total = std::accumulate(d2.begin(), d2.end(), 0.0);
  std::set<int32_t> want{idx[0]};
  double cdf = 0;
  for (size_t i = 0; i < d2.size(); ++i) {
    cdf += d2[i] / total;
    if (cdf <= 0.9) want.insert(idx[i + 1]);
  }
  EXPECT_EQ(kept(h.run1("{\"tfs\": 0.9}", x).logits), want);
}

TEST(Truncation, TopNsigmaKeepsWithinNStandardDeviations) {
  ChainHarness h(kVocab);
  auto x = random_logits(kVocab, 81);
  double mean = std::accumulate(x.begin(), x.end(), 0.0) / kVocab, var = 0;
  for (float v : x) var += (v - mean) * (v - mean);
  const double sd = std::sqrt(var / (kVocab - 1));
  const double mx = *std::max_element(x.begin(), x.end());
  std::set<int32_t> want;
  for (int32_t i = 0; i < kVocab; ++i) {
    if (x[i] >= mx - 1.5 * sd) want.insert(i);
  }
  EXPECT_EQ(kept(h.run1("{\"nsigma\": 1.5}", x).logits), want);
  EXPECT_EQ(kept(h.run1("{\"top_n_sigma\": 1.5}", x).logits), want);  // ST's alias
}

TEST(Truncation, AtLeastOneTokenAlwaysSurvives) {
  ChainHarness h(kVocab);
  const char* extreme[] = {"{\"top_p\": 1e-9}",        "{\"min_p\": 1}",          "{\"top_a\": 1000}",
                           "{\"tfs\": 1e-9}",           "{\"typical_p\": 0}",      "{\"epsilon_cutoff\": 1000}",
                           "{\"eta_cutoff\": 1e9}",     "{\"nsigma\": 1e-9}",      "{\"top_k\": 1}",
                           "{\"xtc_probability\": 1, \"xtc_threshold\": 0}"};
  for (uint32_t seed = 0; seed < 5; ++seed) {
    auto x = random_logits(kVocab, 900 + seed, 0.01f + seed);
    for (const char* req : extreme) {
      Step s = h.run1(req, x);
      EXPECT_GE(kept(s.logits).size(), 1u) << req;
      EXPECT_NE(s.logits[s.chosen[0]], kNegInf) << req;
    }
  }
  // Flat logits: every truncation must keep something.
  std::vector<float> flat(kVocab, 0.5f);
  for (const char* req : extreme) EXPECT_GE(kept(h.run1(req, flat).logits).size(), 1u) << req;
}

}  // namespace
}  // namespace aph::test
