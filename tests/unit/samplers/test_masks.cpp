// logit_bias, token bans, allowed ids, min_tokens / EOS bans, banned strings.
#include <gtest/gtest.h>

#include "core/common/error.hpp"
#include "tests/unit/samplers/chain_harness.hpp"

namespace aph::test {
namespace {

constexpr int32_t kVocab = 32;

TEST(Masks, LogitBiasAddsToTheLogit) {
  ChainHarness h(kVocab);
  auto x = random_logits(kVocab, 1);
  Step s = h.run1(R"({"logit_bias": {"3": 5.5, "7": -100}})", x);
  for (int32_t t = 0; t < kVocab; ++t) {
    EXPECT_FLOAT_EQ(s.logits[t], x[t] + (t == 3 ? 5.5f : t == 7 ? -100.0f : 0.0f));
  }
}

TEST(Masks, TokenBansInEveryClientShape) {
  ChainHarness h(kVocab);
  auto x = random_logits(kVocab, 2);
  EXPECT_EQ(kept(h.run1(R"({"custom_token_bans": [1, 4]})", x).logits).count(4), 0u);
  std::set<int32_t> k = kept(h.run1(R"({"custom_token_bans": "1, 4,9"})", x).logits);
  EXPECT_EQ(k.size(), static_cast<size_t>(kVocab - 3));
  EXPECT_EQ(k.count(9), 0u);
  EXPECT_EQ(kept(h.run1(R"({"banned_tokens": [5, 6]})", x).logits).size(), static_cast<size_t>(kVocab - 2));
  EXPECT_EQ(kept(h.run1(R"({"custom_token_bans": []})", x).logits).size(), static_cast<size_t>(kVocab));
}

TEST(Masks, AllowedTokenIdsRemoveEverythingElse) {
  ChainHarness h(kVocab);
  auto x = random_logits(kVocab, 3);
  Step s = h.run1(R"({"allowed_token_ids": [2, 30, 11]})", x);
  EXPECT_EQ(kept(s.logits), (std::set<int32_t>{2, 11, 30}));
  EXPECT_TRUE(s.chosen[0] == 2 || s.chosen[0] == 11 || s.chosen[0] == 30);
}

TEST(Masks, MinTokensMasksEndOfGenerationUntilReached) {
  sampling::ChainOptions o;
  o.eos_token_id = 2;
  o.eog_token_ids = {2, 17};
  ChainHarness h(kVocab, o);
  std::vector<float> x(kVocab, 0.0f);
  x[2] = 50.0f;  // EOS would win every time
  for (uint64_t step = 0; step < 5; ++step) {
    Step s = h.run1(R"({"min_tokens": 3, "temperature": 0})", x, {}, 0, 1, step);
    EXPECT_EQ(s.chosen[0] == 2, step >= 3) << "step " << step;
    EXPECT_EQ(s.logits[17] == kNegInf, step < 3);
  }
  EXPECT_EQ(h.run1(R"({"ban_eos_token": true, "temperature": 0})", x, {}, 0, 1, 100).logits[2], kNegInf);
  EXPECT_EQ(h.run1(R"({"use_default_badwordsids": true})", x, {}, 0, 1, 100).logits[2], kNegInf);
  auto req = h.prepare(R"({"ignore_eos": true})");
  EXPECT_TRUE(req->ignore_eos());
}

TEST(Masks, BannedStringsMaskTheCompletingToken) {
  sampling::ChainOptions o;
  // A toy vocabulary: ids 0..7.
  o.token_bytes = {"I", " can", "not", " cannot", "'t", " do", "no", "t"};
  ChainHarness h(8, o);
  std::vector<float> x(8, 0.0f);
  // History "I can": "not" and "no"+"t"... only tokens completing " cannot".
  Step s = h.run1(R"({"banned_strings": [" cannot"]})", x, {0, 1}, 1);
  EXPECT_EQ(kept(s.logits), (std::set<int32_t>{0, 1, 4, 5, 6, 7}));
  // History "I can" + "no": "t" completes it now.
  Step s2 = h.run1(R"({"banned_strings": [" cannot"]})", x, {0, 1, 6}, 1);
  EXPECT_EQ(kept(s2.logits), (std::set<int32_t>{0, 1, 2, 4, 5, 6}));
  // Kobold sends phrases in banned_tokens.
  Step s3 = h.run1(R"({"banned_tokens": [" do"]})", x, {0}, 1);
  EXPECT_EQ(s3.logits[5], kNegInf);
}

TEST(Logprobs, FromRawLogitsTopNAndChosen) {
  ChainHarness h(kVocab);
  auto x = random_logits(kVocab, 9);
  auto p = probs_of(x);
  Step s = h.run1(R"({"logprobs": 3, "top_k": 1})", x);
  ASSERT_EQ(s.logprobs[0].top.size(), 3u);
  std::vector<int32_t> idx(kVocab);
  for (int32_t i = 0; i < kVocab; ++i) idx[i] = i;
  std::sort(idx.begin(), idx.end(), [&](int32_t a, int32_t b) { return x[a] > x[b]; });
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(s.logprobs[0].top[i].token, idx[i]);
    EXPECT_NEAR(s.logprobs[0].top[i].logprob, std::log(p[idx[i]]), 1e-5);
  }
  EXPECT_EQ(s.logprobs[0].chosen.token, idx[0]);
  EXPECT_NEAR(s.logprobs[0].chosen.logprob, std::log(p[idx[0]]), 1e-5);  // raw, not the truncated 0
  EXPECT_EQ(h.run1("{}", x).logprobs[0].chosen.token, -1);
  auto chat = h.prepare(R"({"logprobs": true, "top_logprobs": 5})");
  EXPECT_EQ(chat->logprobs(), 5);
}

}  // namespace
}  // namespace aph::test

namespace aph::test {
namespace {

TEST(Masks, PaddedLogitsBeyondTheTokenizer) {
  sampling::ChainOptions o;
  o.token_bytes = {"a", "b", "ab", "c"};  // logits are wider than the tokenizer
  ChainHarness h(6, o);
  std::vector<float> x(6, 0.0f);
  Step s = h.run1(R"({"banned_strings": ["ab"], "custom_token_bans": [5]})", x, {0}, 1);
  EXPECT_EQ(kept(s.logits), (std::set<int32_t>{0, 3, 4}));  // "b" completes "ab", "ab" contains it
  sampling::ChainOptions too_many;
  too_many.token_bytes = std::vector<std::string>(7, "x");
  EXPECT_THROW(ChainHarness(6, too_many), Error);
}

}  // namespace
}  // namespace aph::test
