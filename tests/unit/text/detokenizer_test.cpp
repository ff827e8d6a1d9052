#include <gtest/gtest.h>

#include "core/common/error.hpp"
#include "core/text/incremental_detokenizer.hpp"
#include "tests/unit/text/vocab_fixtures.hpp"

namespace aph::text::testing {
namespace {

std::unique_ptr<Tokenizer> load(const char* name) {
  return load_gguf_tokenizer(vocab_fixture_dir() + "/" + name);
}

// Streams ids through a detokenizer; every piece must be whole UTF-8.
std::string stream(const Tokenizer& tok, const std::vector<int32_t>& ids, DetokenizeOptions opts,
                   std::vector<std::string>* pieces = nullptr, std::span<const int32_t> prompt = {}) {
  IncrementalDetokenizer detok(tok, opts, prompt);
  std::string all;
  for (int32_t id : ids) {
    std::string piece = detok.push(id);
    EXPECT_TRUE(is_valid_utf8(piece)) << "piece for id " << id;
    if (pieces) pieces->push_back(piece);
    all += piece;
  }
  all += detok.flush();
  EXPECT_EQ(all, detok.text());
  return all;
}

TEST(IncrementalDetokenizer, SentencePieceByteFallbackHoldsBytesUntilTheCharacterIsWhole) {
  auto tok = load("ggml-vocab-llama-spm.gguf");
  const std::string text = "Hello 🦙 world";
  const auto ids = tok->encode(text, {});
  // The llama vocabulary has no 🦙: it arrives as four <0xNN> byte tokens.
  size_t byte_tokens = 0;
  for (int32_t id : ids) byte_tokens += tok->token_text(id).starts_with("<0x") ? 1 : 0;
  ASSERT_EQ(byte_tokens, 4u);

  std::vector<std::string> pieces;
  EXPECT_EQ(stream(*tok, ids, {}, &pieces), text);
  size_t empty_pieces = 0;
  for (const auto& p : pieces) empty_pieces += p.empty() ? 1 : 0;
  EXPECT_EQ(empty_pieces, 3u);  // the first three bytes of 🦙 are held
  EXPECT_EQ(tok->decode(ids, true), text);
}

TEST(IncrementalDetokenizer, SentencePieceLeadingSpaceKeptAfterAPrompt) {
  auto tok = load("ggml-vocab-llama-spm.gguf");
  const auto prompt = tok->encode("Say", {});
  const auto ids = tok->encode("Hello world", {});
  EXPECT_EQ(stream(*tok, ids, {}), "Hello world");
  EXPECT_EQ(stream(*tok, ids, {}, nullptr, prompt), " Hello world");
}

TEST(IncrementalDetokenizer, ByteLevelSplitsOfMultiByteCharactersAreHeld) {
  auto tok = load("ggml-vocab-gpt-2.gguf");
  for (const std::string text : {"ied 4 ½ months", "កាន់តែពិសេសអាច", "🚀 (normal) 😶‍🌫️ ✅", "Cửa Việt"}) {
    const auto ids = tok->encode(text, {});
    std::vector<std::string> pieces;
    EXPECT_EQ(stream(*tok, ids, {}, &pieces), text);
    EXPECT_EQ(tok->decode(ids, true), text);
  }
}

TEST(IncrementalDetokenizer, SkipsOrSpacesSpecialTokens) {
  auto tok = load("ggml-vocab-llama-spm.gguf");
  std::vector<int32_t> ids = {tok->bos_id()};
  for (int32_t id : tok->encode("Hello", {})) ids.push_back(id);
  ids.push_back(tok->eos_id());
  EXPECT_EQ(stream(*tok, ids, {true, true}), "Hello");
  EXPECT_EQ(stream(*tok, ids, {false, true}), "<s> Hello </s>");
  EXPECT_EQ(stream(*tok, ids, {false, false}), "<s>Hello</s>");
}

TEST(IncrementalDetokenizer, FlushReplacesAnUnfinishedCharacter) {
  auto tok = load("ggml-vocab-llama-spm.gguf");
  const auto ids = tok->encode("🦙", {});
  IncrementalDetokenizer detok(*tok, {});
  std::string out;
  for (size_t i = 0; i + 1 < ids.size(); ++i) out += detok.push(ids[i]);
  EXPECT_GT(detok.held_bytes(), 0u);
  out += detok.flush();
  EXPECT_EQ(out, std::string(kReplacementChar));
}

TEST(IncrementalDetokenizer, BadIdThrows) {
  auto tok = load("ggml-vocab-gpt-2.gguf");
  IncrementalDetokenizer detok(*tok, {});
  EXPECT_THROW(detok.push(tok->vocab_size()), aph::Error);
  EXPECT_THROW(detok.push(-1), aph::Error);
}

TEST(Utf8, TakeCompleteHoldsOnlyACompletablePrefix) {
  std::string bytes = "a\xF0\x9F";
  EXPECT_EQ(take_complete_utf8(bytes), "a");
  EXPECT_EQ(bytes, "\xF0\x9F");
  bytes += "\xA6\x99";
  EXPECT_EQ(take_complete_utf8(bytes), "🦙");
  EXPECT_TRUE(bytes.empty());
  bytes = "\xFF" "b\xE2\x28";  // an impossible byte, then a lead whose next byte is wrong
  EXPECT_EQ(take_complete_utf8(bytes), "\xEF\xBF\xBD" "b\xEF\xBF\xBD(");
  EXPECT_TRUE(bytes.empty());
  EXPECT_FALSE(is_valid_utf8("\xC0\x80"));  // overlong
  EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));  // surrogate
  EXPECT_TRUE(is_valid_utf8("Äpfel 我"));
}

}  // namespace
}  // namespace aph::text::testing
