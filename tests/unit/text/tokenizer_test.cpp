#include <gtest/gtest.h>

#include <algorithm>

#include "core/common/error.hpp"
#include "core/text/tokenizer.hpp"
#include "core/text/utf8.hpp"
#include "tests/unit/text/vocab_fixtures.hpp"

namespace aph::text::testing {
namespace {

std::unique_ptr<Tokenizer> load(const char* name) {
  return load_gguf_tokenizer(vocab_fixture_dir() + "/" + name);
}

bool contains(const std::vector<int32_t>& ids, int32_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

TEST(Tokenizer, AddSpecialFollowsTheDeclaredFlags) {
  auto spm = load("ggml-vocab-llama-spm.gguf");
  EXPECT_TRUE(spm->adds_bos());
  EXPECT_FALSE(spm->adds_eos());
  const auto plain = spm->encode("Hello", {false, false});
  const auto with = spm->encode("Hello", {true, false});
  ASSERT_EQ(with.size(), plain.size() + 1);
  EXPECT_EQ(with.front(), spm->bos_id());
  EXPECT_EQ(spm->encode("", {true, false}), std::vector<int32_t>{spm->bos_id()});

  auto gpt2 = load("ggml-vocab-gpt-2.gguf");
  EXPECT_FALSE(gpt2->adds_bos());
  EXPECT_EQ(gpt2->encode("Hello", {true, false}), gpt2->encode("Hello", {false, false}));
}

TEST(Tokenizer, ParseSpecialMatchesControlTokensOnlyWhenAsked) {
  auto phi3 = load("ggml-vocab-phi-3.gguf");
  const int32_t user = 32010;
  ASSERT_EQ(phi3->token_text(user), "<|user|>");
  const auto parsed = phi3->encode("<|user|>\nHi<|end|>", {false, true});
  EXPECT_EQ(parsed.front(), user);
  EXPECT_TRUE(contains(parsed, 32007));
  const auto literal = phi3->encode("<|user|>\nHi<|end|>", {false, false});
  EXPECT_FALSE(contains(literal, user));
  EXPECT_FALSE(contains(literal, 32007));
  EXPECT_EQ(phi3->decode(literal, true), "<|user|>\nHi<|end|>");

  auto gpt2 = load("ggml-vocab-gpt-2.gguf");
  EXPECT_EQ(gpt2->encode("a<|endoftext|>", {false, true}).back(), 50256);
  EXPECT_FALSE(contains(gpt2->encode("a<|endoftext|>", {false, false}), 50256));
}

TEST(Tokenizer, SentencePieceSpacePrefixAfterASpecialToken) {
  auto spm = load("ggml-vocab-llama-spm.gguf");
  // "<s>Hello" parsed: the text after the token gets the '▁' prefix again.
  const auto ids = spm->encode("<s>Hello", {false, true});
  ASSERT_GE(ids.size(), 2u);
  EXPECT_EQ(ids[0], spm->bos_id());
  const std::vector<int32_t> rest(ids.begin() + 1, ids.end());
  EXPECT_EQ(rest, spm->encode("Hello", {false, false}));
}

TEST(Tokenizer, DecodeInvertsEncodeOnTheFixtureStrings) {
  for (const char* name : {"ggml-vocab-gpt-2.gguf", "ggml-vocab-llama-spm.gguf", "ggml-vocab-starcoder.gguf"}) {
    auto tok = load(name);
    for (const auto& c : read_vocab_cases(vocab_fixture_dir() + "/" + name)) {
      std::string expected = c.input;
      // SentencePiece cannot tell its own prefix space from a leading one.
      if (tok->strips_leading_space() && expected.starts_with(' ')) continue;
      EXPECT_EQ(tok->decode(c.expected, true), expected) << name;
    }
  }
}

TEST(Tokenizer, TokenBytesAndSpecialIds) {
  auto spm = load("ggml-vocab-llama-spm.gguf");
  EXPECT_EQ(spm->token_bytes(spm->encode("\xF0\x9F\xA6\x99", {})[1]), "\xF0");  // <0xF0>, after '▁'
  EXPECT_TRUE(spm->is_special(spm->bos_id()));
  EXPECT_FALSE(spm->is_special(spm->encode("Hello", {})[0]));
  EXPECT_TRUE(spm->strips_leading_space());
  EXPECT_EQ(spm->vocab_size(), 32000);
  EXPECT_THROW(spm->token_text(32000), aph::Error);

  auto phi3 = load("ggml-vocab-phi-3.gguf");
  const auto eog = phi3->eog_ids();
  EXPECT_TRUE(contains(eog, 32000));  // eos <|endoftext|>
  EXPECT_TRUE(contains(eog, 32007));  // <|end|> ends a turn

  auto gpt2 = load("ggml-vocab-gpt-2.gguf");
  const auto hello = gpt2->encode(" Hello", {});
  ASSERT_EQ(hello.size(), 1u);
  EXPECT_EQ(gpt2->token_text(hello[0]), "\xC4\xA0Hello");  // "ĠHello"
  EXPECT_EQ(gpt2->token_bytes(hello[0]), " Hello");
}

TEST(Tokenizer, IllFormedInputIsReadAsReplacementCharacters) {
  auto gpt2 = load("ggml-vocab-gpt-2.gguf");
  const std::string bad = "a\xFF\xC3(b";
  EXPECT_EQ(gpt2->encode(bad, {}), gpt2->encode(to_valid_utf8(bad), {}));
  auto spm = load("ggml-vocab-llama-spm.gguf");
  EXPECT_EQ(spm->encode(bad, {}), spm->encode(to_valid_utf8(bad), {}));
}

TEST(Tokenizer, LongRepetitiveInputEncodes) {
  auto tok = load("ggml-vocab-gpt-2.gguf");
  const std::string spaces(100000, ' ');
  const auto ids = tok->encode(spaces + "x", {});
  EXPECT_EQ(tok->decode(ids, true), spaces + "x");
}

boost::json::object tiny_metadata() {
  boost::json::object o;
  o["tokenizer.ggml.model"] = "gpt2";
  o["tokenizer.ggml.pre"] = "gpt-2";
  boost::json::array tokens;
  for (int b = 0; b < 256; ++b) tokens.emplace_back(std::string(1, 'a'));
  o["tokenizer.ggml.tokens"] = tokens;
  o["tokenizer.ggml.merges"] = boost::json::array{};
  return o;
}

void expect_error_mentions(const boost::json::object& meta, const std::string& needle) {
  try {
    Tokenizer::from_gguf_metadata(meta);
    ADD_FAILURE() << "no error; expected one naming " << needle;
  } catch (const aph::Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Tokenizer, BadGgufMetadataNamesTheKey) {
  auto m = tiny_metadata();
  m.erase("tokenizer.ggml.tokens");
  expect_error_mentions(m, "tokenizer.ggml.tokens");
  m = tiny_metadata();
  m["tokenizer.ggml.pre"] = "no-such-pre";
  expect_error_mentions(m, "tokenizer.ggml.pre");
  m = tiny_metadata();
  m["tokenizer.ggml.model"] = "bert";
  expect_error_mentions(m, "tokenizer.ggml.model");
  m = tiny_metadata();
  m["tokenizer.ggml.merges"] = boost::json::array{"nospace"};
  expect_error_mentions(m, "tokenizer.ggml.merges");
  m = tiny_metadata();
  m["tokenizer.ggml.token_type"] = boost::json::array{1, 2};
  expect_error_mentions(m, "token_type");
  m = tiny_metadata();
  m["tokenizer.ggml.eos_token_id"] = 999;
  expect_error_mentions(m, "eos");
  m = tiny_metadata();
  m["tokenizer.ggml.model"] = "llama";  // SentencePiece needs scores
  expect_error_mentions(m, "scores");
  m = tiny_metadata();
  m["tokenizer.ggml.tokens"] = boost::json::array{1, 2};
  expect_error_mentions(m, "tokenizer.ggml.tokens");
}

}  // namespace
}  // namespace aph::text::testing
