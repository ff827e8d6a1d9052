// Pre-tokenization: cutting text into words before BPE, as a sequence of
// regex splits (HF's Split/ByteLevel/Digits/Punctuation, llama.cpp's
// regex_exprs). Each step re-splits every piece the previous step produced,
// and each piece is matched on its own.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/text/regex.hpp"

namespace aph::text {

// HF's SplitDelimiterBehavior: what happens to the matched text.
enum class SplitBehavior { isolated, removed, merged_with_previous, merged_with_next, contiguous };

SplitBehavior parse_split_behavior(const std::string& name);  // "Isolated", ...; throws

struct SplitStep {
  std::shared_ptr<const Regex> regex;
  SplitBehavior behavior = SplitBehavior::isolated;
  bool invert = false;  // the pieces are what does NOT match
};

class PreTokenizer {
 public:
  void add_step(SplitStep step) { steps_.push_back(std::move(step)); }
  void add_regex(const std::string& pattern, SplitBehavior behavior = SplitBehavior::isolated,
                 bool invert = false);
  bool empty() const { return steps_.empty(); }
  // HF's ByteLevel pre-tokenizer rewrites the text into GPT-2 byte-level
  // characters; steps added after this call see that text (so, e.g., a
  // Digits step after it treats the byte-level '½' of 0xBD as a digit).
  void mark_byte_level() { byte_level_from_ = steps_.size(); }

  // Pieces of `text`, in order; with no steps, `text` itself. The views point
  // into `text`, or into storage of this thread that the next call reuses.
  void split(std::string_view text, std::vector<std::string_view>& pieces) const;

 private:
  void run_steps(size_t first, size_t last, std::vector<std::string_view>& pieces) const;

  std::vector<SplitStep> steps_;
  size_t byte_level_from_ = static_cast<size_t>(-1);
};

// llama.cpp's regex sets by tokenizer.ggml.pre name ("gpt-2", "llama-bpe",
// "qwen2", "deepseek-coder", ...). Throws aph::Error naming an unknown name.
PreTokenizer pre_tokenizer_for_gguf(const std::string& pre_name);

// Patterns HF's pre-tokenizers use, for the tokenizer.json loader.
inline constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
inline constexpr const char* kHfPunctuationClass = R"([\p{P}!-/:-@\[-`{-~])";

}  // namespace aph::text
