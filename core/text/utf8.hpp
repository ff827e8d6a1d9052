// UTF-8 helpers shared by the tokenizers and the streaming detokenizer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace aph::text {

// Length of the sequence a lead byte announces (1 for ASCII and for bytes that
// cannot start a sequence, so a scan always advances).
inline size_t utf8_sequence_length(uint8_t lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 1;
}

void append_utf8(std::string& out, uint32_t codepoint);

// Length of the well-formed sequence at text[pos], or 0 when the bytes there
// are not one (overlong, surrogate, out of range, bad continuation, cut off).
size_t valid_utf8_sequence_at(std::string_view text, size_t pos);

// Length of the maximal prefix of an ill-formed sequence at text[pos] (the
// unit that Unicode's "U+FFFD substitution of maximal subparts" replaces).
size_t invalid_utf8_run_at(std::string_view text, size_t pos);

// Replaces every ill-formed subsequence with U+FFFD.
std::string to_valid_utf8(std::string_view bytes);

// Splits `bytes` into the longest prefix of whole characters (invalid
// sequences replaced by U+FFFD, as Python's errors="replace" does) and leaves
// in `bytes` only a trailing, still-completable partial character.
std::string take_complete_utf8(std::string& bytes);

// True when `text` is well-formed UTF-8.
bool is_valid_utf8(std::string_view text);

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";

}  // namespace aph::text
