// Temperature, greedy and seeded selection, mirostat.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "tests/unit/samplers/chain_harness.hpp"

namespace aph::test {
namespace {

constexpr int32_t kVocab = 256;

int32_t argmax(const std::vector<float>& x) {
  return static_cast<int32_t>(std::max_element(x.begin(), x.end()) - x.begin());
}

TEST(Temperature, DividesLogits) {
  ChainHarness h(kVocab);
  auto x = random_logits(kVocab, 1);
  Step s = h.run1(R"({"temperature": 0.7})", x);
  for (int32_t i = 0; i < kVocab; ++i) EXPECT_FLOAT_EQ(s.logits[i], x[i] / 0.7f);
}

TEST(Temperature, DynamicTemperatureFollowsNormalizedEntropy) {
  ChainHarness h(kVocab);
  auto x = random_logits(kVocab, 2, 1.5f);
  auto p = probs_of(x);
  double ent = 0;
  for (double v : p) ent -= v * std::log(v);
  const double t = 0.5 + (1.5 - 0.5) * std::pow(ent / std::log(static_cast<double>(kVocab)), 1.3);
  Step s = h.run1(R"({"dynatemp_min": 0.5, "dynatemp_max": 1.5, "dynatemp_exponent": 1.3})", x);
  for (int32_t i = 0; i < kVocab; i += 17) EXPECT_NEAR(s.logits[i], x[i] / t, 1e-4 * std::fabs(x[i] / t) + 1e-5);
  // Kobold's dynatemp_range: temperature 1 +- 0.5 is the same range.
  Step k = h.run1(R"({"temperature": 1.0, "dynatemp_range": 0.5, "dynatemp_exponent": 1.3})", x);
  for (int32_t i = 0; i < kVocab; i += 17) EXPECT_FLOAT_EQ(k.logits[i], s.logits[i]);
}

TEST(Selection, ZeroTemperatureIsGreedyAndTinyTemperatureTendsToIt) {
  ChainHarness h(kVocab);
  for (uint32_t seed = 0; seed < 20; ++seed) {
    auto x = random_logits(kVocab, 100 + seed);
    EXPECT_EQ(h.run1(R"({"temperature": 0})", x, {}, 0, seed, seed).chosen[0], argmax(x));
    EXPECT_EQ(h.run1(R"({"temperature": 0.0001})", x, {}, 0, seed, seed).chosen[0], argmax(x));
  }
}

TEST(Selection, SeedReproducesAloneAndInABatch) {
  ChainHarness h(kVocab);
  auto x = random_logits(kVocab, 3, 0.5f);  // flat enough that seeds matter
  std::vector<int32_t> alone;
  for (uint64_t step = 0; step < 10; ++step) alone.push_back(h.run1(R"({"seed": 1234})", x, {}, 0, 1234, step).chosen[0]);
  std::set<int32_t> distinct(alone.begin(), alone.end());
  EXPECT_GT(distinct.size(), 3u);
  for (uint64_t step = 0; step < 10; ++step) {
    std::vector<RowSpec> rows = {{R"({"top_k": 3})", {}, 0, 7, step},
                                 {R"({"seed": 1234})", {}, 0, 1234, step},
                                 {R"({"temperature": 0.3, "min_p": 0.1})", {}, 0, 9, step}};
    std::vector<float> batch;
    for (int r = 0; r < 3; ++r) batch.insert(batch.end(), x.begin(), x.end());
    EXPECT_EQ(h.run(rows, batch).chosen[1], alone[step]) << "step " << step;
  }
}

TEST(Selection, SeededDrawsFollowTheProcessedDistribution) {
  // 6 live tokens after top_k, temperature 0.8: chi-square over 30000 draws.
  constexpr int32_t kSmall = 16;
  ChainHarness h(kSmall);
  auto x = random_logits(kSmall, 4, 1.0f);
  const char* req = R"({"top_k": 6, "temperature": 0.8})";
  std::vector<float> processed = h.run1(req, x).logits;
  auto p = probs_of(processed);
  std::vector<int> counts(kSmall, 0);
  const int n = 30000;
  auto prepared = h.prepare(req);
  Tensor t = Tensor::empty({1, kSmall}, APH_DTYPE_F32, APH_DEVICE_CPU);
  std::vector<int32_t> chosen;
  for (int i = 0; i < n; ++i) {
    std::copy(x.begin(), x.end(), t.as<float>());
    sampling::RowInput row;
    row.sampling = prepared.get();
    row.seed = 42;
    row.step = static_cast<uint64_t>(i);
    h.chain().sample(t, std::span<const sampling::RowInput>(&row, 1), chosen, nullptr);
    ++counts[chosen[0]];
  }
  double chi2 = 0;
  int dof = -1;
  for (int32_t t = 0; t < kSmall; ++t) {
    if (p[t] == 0) {
      EXPECT_EQ(counts[t], 0) << "removed token " << t << " was drawn";
      continue;
    }
    const double e = p[t] * n;
    chi2 += (counts[t] - e) * (counts[t] - e) / e;
    ++dof;
  }
  ASSERT_EQ(dof, 5);
  EXPECT_LT(chi2, 20.52) << "chi-square " << chi2 << " (p < 0.001 at 5 dof)";
}

TEST(Mirostat, V2MuFollowsItsUpdateRule) {
  ChainHarness h(kVocab);
  auto x = random_logits(kVocab, 5, 2.0f);
  auto req = h.prepare(R"({"mirostat_mode": 2, "mirostat_tau": 3.0, "mirostat_eta": 0.2})");
  double mu = 6.0;  // 2 tau
  for (uint64_t step = 0; step < 6; ++step) {
    // Reference: keep tokens with surprise <= mu (at least one), renormalize.
    auto p = probs_of(x);
    std::vector<int32_t> idx(kVocab);
    for (int32_t i = 0; i < kVocab; ++i) idx[i] = i;
    std::sort(idx.begin(), idx.end(), [&](int32_t a, int32_t b) { return p[a] > p[b]; });
    double kept_mass = 0;
    std::set<int32_t> allowed;
    for (int32_t i : idx) {
      if (!allowed.empty() && -std::log2(p[i]) > mu) break;
      allowed.insert(i);
      kept_mass += p[i];
    }
    sampling::RowInput row;
    row.sampling = req.get();
    row.seed = 99;
    row.step = step;
    Tensor t = Tensor::empty({1, kVocab}, APH_DTYPE_F32, APH_DEVICE_CPU);
    std::copy(x.begin(), x.end(), t.as<float>());
    std::vector<int32_t> chosen;
    h.chain().sample(t, std::span<const sampling::RowInput>(&row, 1), chosen, nullptr);
    ASSERT_TRUE(allowed.count(chosen[0])) << "step " << step;
    EXPECT_EQ(kept(std::vector<float>(t.as<float>(), t.as<float>() + kVocab)), allowed);
    mu -= 0.2 * (-std::log2(p[chosen[0]] / kept_mass) - 3.0);
  }
  // The state lives in the request: a fresh request starts again at 2 tau and
  // keeps the same set as step 0 did.
  EXPECT_NE(mu, 6.0);
}

TEST(Mirostat, V1Selects) {
  ChainHarness h(kVocab);
  auto x = random_logits(kVocab, 6, 2.0f);
  Step s = h.run1(R"({"mirostat_mode": 1, "mirostat_tau": 5.0, "mirostat_eta": 0.1})", x);
  EXPECT_GE(s.chosen[0], 0);
  EXPECT_NE(s.logits[s.chosen[0]], kNegInf);
}

// A target surprise far beyond what the row offers makes v1's k larger than
// any int64: every token stays (rounding k first would have wrapped to one).
TEST(Mirostat, V1HugeTargetKeepsEveryToken) {
  ChainHarness h(kVocab);
  auto x = random_logits(kVocab, 6, 2.0f);
  Step s = h.run1(R"({"mirostat_mode": 1, "mirostat_tau": 50.0, "mirostat_eta": 0.1})", x);
  EXPECT_EQ(kept(s.logits).size(), static_cast<size_t>(kVocab));
}

TEST(Mirostat, DoesNotSwitchOffOtherRowsSamplers) {
  ChainHarness h(kVocab);
  auto x = random_logits(kVocab, 7);
  std::vector<float> batch = x;
  batch.insert(batch.end(), x.begin(), x.end());
  Step s = h.run({{R"({"mirostat_mode": 2, "mirostat_tau": 5, "mirostat_eta": 0.1})", {}, 0, 1, 0},
                  {R"({"top_k": 4})", {}, 0, 1, 0}},
                 batch);
  EXPECT_EQ(kept(s.logits, kVocab, 2 * kVocab).size(), 4u);
}

}  // namespace
}  // namespace aph::test

namespace aph::test {
namespace {

// The engine shares one RequestSampling between the n choices of a request
// (seeds seed + index): each choice keeps its own mu.
TEST(Mirostat, ChoicesOfOneRequestKeepTheirOwnMu) {
  ChainHarness h(kVocab);
  auto x = random_logits(kVocab, 8, 2.0f);
  const char* json = R"({"mirostat_mode": 2, "mirostat_tau": 2.0, "mirostat_eta": 0.5})";
  auto shared = h.prepare(json);
  auto alone = h.prepare(json);
  for (uint64_t step = 0; step < 8; ++step) {
    std::vector<sampling::RowInput> rows(2);
    rows[0].sampling = shared.get();
    rows[0].seed = 11;
    rows[1].sampling = shared.get();
    rows[1].seed = 12;
    rows[0].step = rows[1].step = step;
    Tensor t = Tensor::empty({2, kVocab}, APH_DTYPE_F32, APH_DEVICE_CPU);
    std::copy(x.begin(), x.end(), t.as<float>());
    std::copy(x.begin(), x.end(), t.as<float>() + kVocab);
    std::vector<int32_t> both, one;
    h.chain().sample(t, rows, both, nullptr);

    sampling::RowInput solo = rows[0];
    solo.sampling = alone.get();
    Tensor u = Tensor::empty({1, kVocab}, APH_DTYPE_F32, APH_DEVICE_CPU);
    std::copy(x.begin(), x.end(), u.as<float>());
    h.chain().sample(u, std::span<const sampling::RowInput>(&solo, 1), one, nullptr);
    EXPECT_EQ(both[0], one[0]) << "step " << step;
    EXPECT_EQ(kept(std::vector<float>(t.as<float>(), t.as<float>() + kVocab)),
              kept(std::vector<float>(u.as<float>(), u.as<float>() + kVocab)));
  }
}

}  // namespace
}  // namespace aph::test
