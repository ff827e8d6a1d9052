#include "core/text/incremental_detokenizer.hpp"

#include "core/text/utf8.hpp"

namespace aph::text {

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer& tokenizer, DetokenizeOptions options,
                                               std::span<const int32_t> prompt_ids)
    : tokenizer_(tokenizer), options_(options) {
  emitted_any_ = !prompt_ids.empty();
  strip_next_space_ = prompt_ids.empty() && tokenizer_.strips_leading_space();
  if (!prompt_ids.empty() && !options_.skip_special_tokens) {
    previous_was_special_ = tokenizer_.is_special(prompt_ids.back());
  }
}

std::string IncrementalDetokenizer::push(int32_t id) {
  std::string piece = tokenizer_.token_bytes(id);  // throws for a bad id
  const bool special = tokenizer_.is_special(id);
  if (special && options_.skip_special_tokens) return {};
  if (special) {
    if (options_.spaces_between_special_tokens && emitted_any_) piece.insert(0, 1, ' ');
  } else {
    if (strip_next_space_ && !piece.empty()) {
      if (piece.front() == ' ') piece.erase(0, 1);
      strip_next_space_ = false;
    }
    if (options_.spaces_between_special_tokens && previous_was_special_ && !piece.empty()) {
      piece.insert(0, 1, ' ');
    }
  }
  if (piece.empty()) return {};
  previous_was_special_ = special;
  emitted_any_ = true;
  pending_ += piece;
  std::string out = take_complete_utf8(pending_);
  text_ += out;
  return out;
}

std::string IncrementalDetokenizer::flush() {
  if (pending_.empty()) return {};
  std::string out = to_valid_utf8(pending_);
  pending_.clear();
  text_ += out;
  return out;
}

}  // namespace aph::text
