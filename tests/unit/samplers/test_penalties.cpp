// Repetition, frequency, presence penalties (incl. Kobold range/slope) and
// no_repeat_ngram against their formulas.
#include <gtest/gtest.h>

#include <map>

#include "tests/unit/samplers/chain_harness.hpp"

namespace aph::test {
namespace {

constexpr int32_t kVocab = 64;

TEST(Penalties, RepetitionFrequencyPresenceFollowTheirFormulas) {
  ChainHarness h(kVocab);
  auto x = random_logits(kVocab, 5);
  // prompt: 3 5 7 ; output: 5 9 9 9
  std::vector<int32_t> tokens{3, 5, 7, 5, 9, 9, 9};
  Step s = h.run1(R"({"repetition_penalty": 1.3, "frequency_penalty": 0.4, "presence_penalty": 0.25})", x, tokens, 3);
  std::map<int32_t, int> out_count{{5, 1}, {9, 3}};
  for (int32_t t = 0; t < kVocab; ++t) {
    float want = x[t];
    const bool seen = t == 3 || t == 5 || t == 7 || t == 9;
    if (seen) want = want > 0 ? want / 1.3f : want * 1.3f;  // applied once, whatever the count
    if (out_count.count(t)) want -= 0.4f * out_count[t] + 0.25f;
    EXPECT_FLOAT_EQ(s.logits[t], want) << "token " << t;
  }
}

TEST(Penalties, KoboldRangeLimitsTheRepetitionWindow) {
  ChainHarness h(kVocab);
  auto x = random_logits(kVocab, 6);
  std::vector<int32_t> tokens{1, 2, 3, 4, 5, 6};
  Step s = h.run1(R"({"rep_pen": 2.0, "rep_pen_range": 2})", x, tokens, 6);
  for (int32_t t = 0; t < kVocab; ++t) {
    float want = x[t];
    if (t == 5 || t == 6) want = want > 0 ? want / 2.0f : want * 2.0f;
    EXPECT_FLOAT_EQ(s.logits[t], want) << "token " << t;
  }
}

TEST(Penalties, KoboldSlopeRampsFromOldestToNewest) {
  ChainHarness h(kVocab);
  std::vector<float> x(kVocab, 2.0f);
  std::vector<int32_t> tokens{10, 11, 12, 13, 14};  // window of 5, oldest first
  const float pen = 1.5f, slope = 0.7f;
  Step s = h.run1(R"({"rep_pen": 1.5, "rep_pen_range": 5, "rep_pen_slope": 0.7})", x, tokens, 5);
  for (int i = 0; i < 5; ++i) {
    const double xx = i / 4.0 * 2.0 - 1.0;
    const double y = slope * xx / (1.0 + std::fabs(xx) * (slope - 1.0));
    const double p = 1.0 + (y + 1.0) / 2.0 * (pen - 1.0);
    EXPECT_NEAR(s.logits[10 + i], 2.0 / p, 1e-5) << "position " << i;
  }
  EXPECT_LT(s.logits[10], s.logits[14] + 1.0f);
  EXPECT_GT(s.logits[10], s.logits[14]);  // the oldest is penalized least
}

TEST(Penalties, NeutralValuesChangeNothing) {
  ChainHarness h(kVocab);
  auto x = random_logits(kVocab, 7);
  Step s = h.run1(R"({"repetition_penalty": 1, "frequency_penalty": 0, "presence_penalty": 0})", x, {1, 2, 3}, 1);
  EXPECT_EQ(s.logits, x);
}

TEST(NoRepeatNgram, BansTokensThatWouldRepeatAnNgram) {
  ChainHarness h(kVocab);
  auto x = random_logits(kVocab, 8);
  // trigram: last two tokens are (4, 5); "4 5 6" and "4 5 9" occurred.
  std::vector<int32_t> tokens{4, 5, 6, 1, 4, 5, 9, 2, 4, 5};
  Step s = h.run1(R"({"no_repeat_ngram_size": 3})", x, tokens, 0);
  for (int32_t t = 0; t < kVocab; ++t) {
    EXPECT_EQ(s.logits[t] == kNegInf, t == 6 || t == 9) << "token " << t;
  }
  // bigram: every token that followed 5 before.
  Step s2 = h.run1(R"({"no_repeat_ngram_size": 2})", x, tokens, 0);
  EXPECT_EQ(kept(s2.logits).size(), static_cast<size_t>(kVocab - 2));
}

}  // namespace
}  // namespace aph::test
