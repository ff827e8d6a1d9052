// GPT-2's reversible byte <-> printable-character mapping (bytes_to_unicode):
// byte-level BPE vocabularies store every token as these characters.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace aph::text {

// The UTF-8 text of the character standing for `byte`.
const std::string& byte_level_char(uint8_t byte);
// The byte a code point stands for, if it is one of the 256 mapped ones.
std::optional<uint8_t> byte_level_byte(uint32_t codepoint);
// Raw bytes -> byte-level text.
std::string byte_level_encode(std::string_view bytes);
// Byte-level text -> raw bytes; characters outside the mapping are kept as
// their UTF-8 (added tokens are stored unmapped).
std::string byte_level_decode(std::string_view text);

}  // namespace aph::text
