// DRY on crafted repetitive sequences: which token is penalized, by how much,
// and what stops a match.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/unit/samplers/chain_harness.hpp"

namespace aph::test {
namespace {

constexpr int32_t kVocab = 64;

std::string dry(const std::string& extra = "") {
  return R"({"dry_multiplier": 0.8, "dry_base": 1.75, "dry_allowed_length": 2)" + extra + "}";
}

TEST(Dry, PenalizesTheTokenThatExtendsARepeat) {
  ChainHarness h(kVocab);
  std::vector<float> x(kVocab, 1.0f);
  // "1 2 3 4 ... 1 2 3": emitting 4 would repeat a suffix of length 3.
  std::vector<int32_t> tokens{1, 2, 3, 4, 20, 21, 1, 2, 3};
  Step s = h.run1(dry(), x, tokens, 0);
  const float want = 1.0f - 0.8f * std::pow(1.75f, 3 - 2);
  for (int32_t t = 0; t < kVocab; ++t) EXPECT_FLOAT_EQ(s.logits[t], t == 4 ? want : 1.0f) << t;
}

TEST(Dry, LongestMatchWinsAndShortMatchesAreAllowed) {
  ChainHarness h(kVocab);
  std::vector<float> x(kVocab, 0.0f);
  // Suffix "7 8 9". Earlier: "8 9 10" (L=2 -> 10), "7 8 9 11" (L=3 -> 11), "9 12" (L=1: allowed).
  std::vector<int32_t> tokens{8, 9, 10, 30, 7, 8, 9, 11, 31, 9, 12, 32, 7, 8, 9};
  Step s = h.run1(dry(), x, tokens, 0);
  EXPECT_FLOAT_EQ(s.logits[10], -0.8f * std::pow(1.75f, 0.0f));
  EXPECT_FLOAT_EQ(s.logits[11], -0.8f * std::pow(1.75f, 1.0f));
  EXPECT_FLOAT_EQ(s.logits[12], 0.0f);
}

TEST(Dry, SequenceBreakersStopMatches) {
  ChainHarness h(kVocab);
  std::vector<float> x(kVocab, 0.0f);
  std::vector<int32_t> tokens{5, 1, 2, 3, 4, 40, 5, 1, 2, 3};
  // Without breakers, 4 extends a 4-token repeat "5 1 2 3".
  EXPECT_FLOAT_EQ(h.run1(dry(), x, tokens).logits[4], -0.8f * std::pow(1.75f, 2.0f));
  // With 2 as a breaker the repeated suffix may not reach past it: L = 1 < 2.
  EXPECT_FLOAT_EQ(h.run1(dry(R"(, "dry_sequence_breaker_ids": [2])"), x, tokens).logits[4], 0.0f);
  // With 1 as a breaker: suffix "2 3", L = 2 -> base^0.
  EXPECT_FLOAT_EQ(h.run1(dry(R"(, "dry_sequence_breaker_ids": [1])"), x, tokens).logits[4], -0.8f);
  // A breaker as the last token: nothing is penalized.
  EXPECT_EQ(kept(h.run1(dry(R"(, "dry_sequence_breaker_ids": [3])"), x, tokens).logits).size(), 64u);
}

TEST(Dry, RangeMaxNgramAndMaxOccurrences) {
  ChainHarness h(kVocab);
  std::vector<float> x(kVocab, 0.0f);
  std::vector<int32_t> tokens{1, 2, 3, 4, 5, 6, 7, 50, 51, 52, 53, 1, 2, 3, 4, 5, 6};
  // Full match L = 6 -> base^4; max_ngram 3 caps it at base^1.
  EXPECT_FLOAT_EQ(h.run1(dry(), x, tokens).logits[7], -0.8f * std::pow(1.75f, 4.0f));
  EXPECT_FLOAT_EQ(h.run1(dry(R"(, "dry_max_ngram": 3)"), x, tokens).logits[7], -0.8f * std::pow(1.75f, 1.0f));
  // dry_range 6 sees only "1 2 3 4 5 6" (ST's dry_penalty_last_n alias): no earlier copy.
  EXPECT_FLOAT_EQ(h.run1(dry(R"(, "dry_penalty_last_n": 6)"), x, tokens).logits[7], 0.0f);

  // Two older occurrences of the last token; max_occurrences 1 looks at the newest only.
  std::vector<int32_t> occ{9, 8, 5, 40, 7, 8, 41, 9, 8};  // suffix "9 8": 5 (L=2), 41? no: "7 8" L=1
  EXPECT_FLOAT_EQ(h.run1(dry(), x, occ).logits[5], -0.8f);
  EXPECT_FLOAT_EQ(h.run1(dry(R"(, "dry_max_occurrences": 1)"), x, occ).logits[5], 0.0f);
}

TEST(Dry, StringBreakersAsSillyTavernSendsThem) {
  ChainHarness h(kVocab);
  std::vector<float> x(kVocab, 0.0f);
  // Without a vocabulary, text breakers match no token; the request must
  // still validate the JSON-encoded string form.
  Step s = h.run1(dry(R"(, "dry_sequence_breakers": "[\"\\n\", \":\", \"\\\"\", \"*\"]")"), x, {1, 2, 9, 1, 2});
  EXPECT_FLOAT_EQ(s.logits[9], -0.8f);
}

TEST(Dry, LinearOnLongHistories) {
  ChainHarness h(kVocab);
  std::vector<float> x(kVocab, 0.0f);
  std::vector<int32_t> tokens(200000, 3);  // every position matches: the worst case for a naive scan
  Step s = h.run1(dry(R"(, "dry_max_occurrences": 1024, "dry_max_ngram": 1024)"), x, tokens);
  EXPECT_LT(s.logits[3], 0.0f);
}

}  // namespace
}  // namespace aph::test
