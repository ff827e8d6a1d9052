// The one Tokenizer implementation: both loaders describe a tokenizer as a
// VocabularySpec and this turns it into the encoder/decoder.
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/text/added_tokens.hpp"
#include "core/text/bpe_merges.hpp"
#include "core/text/spm_merges.hpp"
#include "core/text/string_map.hpp"
#include "core/text/tokenizer.hpp"
#include "core/text/vocabulary.hpp"

namespace aph::text {

// Validates the spec (ids in range, merge strings, sizes) and builds the
// tokenizer. Throws aph::Error naming spec.source and the field at fault.
std::unique_ptr<Tokenizer> build_tokenizer(VocabularySpec spec);

class TokenizerImpl final : public Tokenizer {
 public:
  explicit TokenizerImpl(VocabularySpec spec);

  std::vector<int32_t> encode(std::string_view text, const EncodeOptions& options) const override;
  std::string token_bytes(int32_t id) const override;
  const std::string& token_text(int32_t id) const override;
  std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const override;
  bool is_special(int32_t id) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(spec_.tokens.size()); }
  int32_t bos_id() const override { return spec_.bos_id; }
  int32_t eos_id() const override { return spec_.eos_id; }
  std::vector<int32_t> eog_ids() const override { return eog_ids_; }
  bool adds_bos() const override { return spec_.add_bos; }
  bool adds_eos() const override { return spec_.add_eos; }
  bool strips_leading_space() const override { return spec_.strip_leading_space; }

 private:
  void check_id(int32_t id) const;
  // One stretch of input between added tokens.
  void encode_segment(std::string_view segment, bool first_segment, bool after_token,
                      std::vector<int32_t>& out) const;
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;
  void merge_word(std::string_view word, std::vector<int32_t>& out) const;
  void initial_byte_level_symbols(std::string_view word, std::vector<BpeMerges::Symbol>& symbols) const;
  void initial_char_symbols(std::string_view word, std::vector<BpeMerges::Symbol>& symbols) const;

  VocabularySpec spec_;
  StringIdMap token_to_id_;
  std::vector<std::string> decoded_;  // token_bytes per id
  std::vector<int32_t> eog_ids_;
  AddedTokenMatcher added_;
  std::optional<BpeMerges> merges_;
  std::array<int32_t, 256> byte_symbol_{};  // byte-level: symbol of each raw byte
  std::array<int32_t, 256> byte_token_{};   // <0xNN> tokens (byte fallback)
  SpmVocabView spm_view_{};
  // No token has '▁' right after another character, so no token spans the
  // start of a '▁' run: SentencePiece-style text can be encoded (and cached)
  // word by word with the same result as in one piece.
  bool split_at_space_marks_ = false;

  // Words repeat: English text re-encodes the same few thousand words.
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>, TransparentStringHash, std::equal_to<>>
      word_cache_;
};

}  // namespace aph::text
