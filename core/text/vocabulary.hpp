// What a tokenizer is made of, whichever file it came from: the token table,
// the merge list, how raw text is prepared, the special tokens. The GGUF and
// tokenizer.json loaders fill one of these; Tokenizer::build checks it and
// turns it into the encoder.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/text/pre_tokenizer.hpp"

namespace aph::text {

// tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
enum class TokenType : int32_t {
  undefined = 0,
  normal = 1,
  unknown = 2,
  control = 3,
  user_defined = 4,
  unused = 5,
  byte = 6,
};

enum class ModelKind {
  byte_level_bpe,        // GPT-2 style: bytes as characters, merges by rank
  sentencepiece_scores,  // llama.cpp SPM: merges by token score, <0xNN> fallback
  char_bpe,              // HF BPE over characters, merges by rank, optional byte fallback
};

// When a prefix is put in front of a raw-text segment (a stretch of input
// between added tokens).
enum class PrefixWhen {
  every_segment,
  first_segment,         // only the segment that starts the input
  at_start_or_after_special,  // llama.cpp SPM: start of input, or after a matched token
};

// One text rewrite applied to each raw-text segment before pre-tokenization.
struct TextRule {
  enum class Kind { replace, prepend, lowercase } kind = Kind::replace;
  std::string from;  // replace: the literal to find
  std::string to;    // replace: replacement; prepend: the prefix
  PrefixWhen when = PrefixWhen::every_segment;
  bool unless_present = false;  // prepend: skip when the segment already starts with it
};

struct AddedToken {
  int32_t id = -1;
  std::string text;
  bool special = true;  // matched in input only with parse_special
  bool lstrip = false;  // swallows whitespace before it
  bool rstrip = false;  // swallows whitespace after it
};

struct VocabularySpec {
  std::string source;  // file or "GGUF metadata", for error messages
  ModelKind kind = ModelKind::byte_level_bpe;
  std::vector<std::string> tokens;
  std::vector<float> scores;          // empty or one per token
  std::vector<TokenType> types;       // one per token
  std::vector<std::pair<std::string, std::string>> merges;  // index = rank
  std::vector<TextRule> text_rules;
  PreTokenizer pre_tokenizer;
  std::vector<AddedToken> added_tokens;
  bool byte_fallback = false;  // char_bpe: unknown characters become <0xNN> tokens
  bool fuse_unk = false;       // char_bpe: consecutive unknowns become one <unk>
  bool ignore_merges = false;  // a word that is a whole token is taken as is (Llama 3)
  bool add_bos = false;
  bool add_eos = false;
  bool strip_leading_space = false;  // decode drops the space the encoder added
  int32_t bos_id = -1;
  int32_t eos_id = -1;
  int32_t unk_id = -1;
  int32_t pad_id = -1;
  std::vector<int32_t> extra_eog_ids;  // eot, eom, ...
};

}  // namespace aph::text
