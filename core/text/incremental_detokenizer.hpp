// Streaming detokenization: one generated token in, the text that may be sent
// to the client now out. Text is built from Tokenizer::token_bytes, so
// SentencePiece '▁' and <0xNN> byte tokens and GPT-2 byte-level tokens all
// arrive as raw bytes; bytes that do not yet form a whole UTF-8 character are
// held until they do (or are proven invalid, which yields U+FFFD).
//
// Thread: one instance per sequence, used by one thread at a time.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "core/text/tokenizer.hpp"
#include "core/text/utf8.hpp"  // take_complete_utf8, is_valid_utf8

namespace aph::text {

struct DetokenizeOptions {
  // Drop control/special tokens (BOS, EOS, <|im_end|>, ...) from the text.
  bool skip_special_tokens = true;
  // When special tokens are kept: put one space between a special token and
  // its neighbouring text, as HF's slow tokenizers (and vLLM) do.
  bool spaces_between_special_tokens = true;
};

class IncrementalDetokenizer {
 public:
  // `tokenizer` must outlive this object. `prompt_ids` are the tokens already
  // in the sequence (their text is not emitted). With no prompt, a
  // SentencePiece tokenizer's leading space of the first text token is
  // stripped (Tokenizer::strips_leading_space); after a prompt it is kept,
  // because it separates the new text from the prompt's.
  IncrementalDetokenizer(const Tokenizer& tokenizer, DetokenizeOptions options,
                         std::span<const int32_t> prompt_ids = {});

  // Appends one token; returns the text completed by it (often empty while a
  // multi-byte character is split over byte tokens). Never returns a broken
  // UTF-8 sequence. Throws aph::Error for an id outside the vocabulary.
  std::string push(int32_t id);

  // The sequence ended: returns any held bytes (an incomplete character
  // becomes U+FFFD). Further pushes continue from an empty hold.
  std::string flush();

  // Everything returned by push/flush so far, concatenated.
  const std::string& text() const { return text_; }
  // Bytes waiting for the rest of their character.
  size_t held_bytes() const { return pending_.size(); }

 private:
  const Tokenizer& tokenizer_;
  DetokenizeOptions options_;
  bool strip_next_space_ = false;     // SentencePiece start of sequence
  bool previous_was_special_ = false; // the last emitted segment was a special token
  bool emitted_any_ = false;          // anything emitted (or in the prompt) yet
  std::string pending_;               // bytes of an unfinished character
  std::string text_;
};

}  // namespace aph::text
