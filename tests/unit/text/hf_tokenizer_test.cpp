// tokenizer.json loading. (The byte-exact comparison with HF tokenizers on
// the fixture vocabularies is the oracle test in tests/oracle/text/.)
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/common/error.hpp"
#include "core/text/tokenizer.hpp"

namespace aph::text {
namespace {

namespace fs = std::filesystem;

class HfTokenizer : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("aph_text_hf_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
  }
  std::string path() const { return dir_.string(); }
  fs::path dir_;
};

// A SentencePiece-style BPE (as HF converts Llama 2): ▁ for spaces, merges,
// byte fallback, and a template that adds <s>.
const char* kSpmJson = R"({
  "added_tokens": [
    {"id": 0, "content": "<unk>", "special": true},
    {"id": 1, "content": "<s>", "special": true},
    {"id": 2, "content": "</s>", "special": true}
  ],
  "normalizer": {"type": "Sequence", "normalizers": [
    {"type": "Prepend", "prepend": "▁"},
    {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
  "pre_tokenizer": null,
  "post_processor": {"type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
    "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
  "decoder": {"type": "Sequence", "decoders": [
    {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
    {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
  "model": {"type": "BPE", "unk_token": "<unk>", "byte_fallback": true, "fuse_unk": true,
    "vocab": {"<unk>": 0, "<s>": 1, "</s>": 2, "<0xC3>": 3, "<0xA9>": 4, "▁": 5, "h": 6, "i": 7,
              "▁h": 8, "▁hi": 9, "t": 10, "he": 11, "▁t": 12, "e": 13},
    "merges": ["▁ h", "▁h i", "▁ t", "h e"]}
})";

TEST_F(HfTokenizer, SentencePieceStyleBpeWithByteFallback) {
  write("tokenizer.json", kSpmJson);
  write("tokenizer_config.json", R"({"bos_token": "<s>", "eos_token": "</s>", "add_bos_token": true})");
  auto tok = Tokenizer::from_hf(path());
  EXPECT_EQ(tok->encode("hi", {false, false}), (std::vector<int32_t>{9}));
  EXPECT_EQ(tok->encode("hi", {true, false}), (std::vector<int32_t>{1, 9}));
  // 'é' is not in the vocabulary: its two bytes; "the" -> ▁t + he.
  EXPECT_EQ(tok->encode("hi é the", {false, false}),
            (std::vector<int32_t>{9, 5, 3, 4, 12, 11}));
  EXPECT_EQ(tok->encode("<s>hi", {false, true}), (std::vector<int32_t>{1, 9}));
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_TRUE(tok->strips_leading_space());
  EXPECT_EQ(tok->decode(tok->encode("hi é the", {}), true), "hi é the");
}

TEST_F(HfTokenizer, ByteLevelBpeFromAFilePath) {
  // Ġ is the byte-level character for ' '.
  write("tokenizer.json", R"({
    "added_tokens": [{"id": 5, "content": "<|end|>", "special": true}],
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
    "decoder": {"type": "ByteLevel"},
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "Ġ": 2, "ab": 3, "Ġab": 4, "<|end|>": 5},
              "merges": [["a", "b"], ["Ġ", "ab"]]}
  })");
  auto tok = Tokenizer::from_hf((dir_ / "tokenizer.json").string());
  EXPECT_EQ(tok->encode("ab ab", {}), (std::vector<int32_t>{3, 4}));
  EXPECT_EQ(tok->encode("ab<|end|>", {false, true}), (std::vector<int32_t>{3, 5}));
  EXPECT_EQ(tok->decode({3, 4, 5}, true), "ab ab");
  EXPECT_EQ(tok->decode({3, 4, 5}, false), "ab ab<|end|>");
  EXPECT_FALSE(tok->adds_bos());
}

TEST_F(HfTokenizer, ErrorsNameTheFileAndSection) {
  auto expect_error = [&](const std::string& json, const std::string& needle) {
    write("tokenizer.json", json);
    try {
      Tokenizer::from_hf(path());
      ADD_FAILURE() << "no error for " << needle;
    } catch (const aph::Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("tokenizer.json"), std::string::npos) << e.what();
    }
  };
  expect_error("{", "JSON");
  expect_error("[]", "object");
  expect_error(R"({"model": {"type": "Unigram", "vocab": []}})", "Unigram");
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["ab"]}})", "model.merges");
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": 0}},
                   "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(("}, "behavior": "Isolated"}})",
               "((");
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": 0}}, "normalizer": {"type": "NFKD"}})", "NFKD");
  fs::remove(dir_ / "tokenizer.json");
  EXPECT_THROW(Tokenizer::from_hf(path()), aph::Error);
}

}  // namespace
}  // namespace aph::text
