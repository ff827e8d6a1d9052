#include "core/text/byte_level.hpp"

#include <array>

#include "core/text/utf8.hpp"

namespace aph::text {
namespace {

struct ByteLevelTables {
  std::array<uint32_t, 256> codepoint_of_byte{};
  std::array<std::string, 256> text_of_byte;
  std::array<int16_t, 512> byte_of_codepoint{};  // every mapped code point is < 324

  ByteLevelTables() {
    byte_of_codepoint.fill(-1);
    uint32_t next_extra = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      codepoint_of_byte[b] = printable ? b : next_extra++;
    }
    for (uint32_t b = 0; b < 256; ++b) {
      append_utf8(text_of_byte[b], codepoint_of_byte[b]);
      byte_of_codepoint[codepoint_of_byte[b]] = static_cast<int16_t>(b);
    }
  }
};

const ByteLevelTables& tables() {
  static const ByteLevelTables t;
  return t;
}

}  // namespace

const std::string& byte_level_char(uint8_t byte) { return tables().text_of_byte[byte]; }

std::optional<uint8_t> byte_level_byte(uint32_t codepoint) {
  if (codepoint >= 512) return std::nullopt;
  const int16_t b = tables().byte_of_codepoint[codepoint];
  if (b < 0) return std::nullopt;
  return static_cast<uint8_t>(b);
}

std::string byte_level_encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += byte_level_char(static_cast<uint8_t>(c));
  return out;
}

std::string byte_level_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t n = valid_utf8_sequence_at(text, pos);
    if (n == 0) {
      out.push_back(text[pos++]);
      continue;
    }
    uint32_t cp = 0;
    if (n == 1) {
      cp = static_cast<uint8_t>(text[pos]);
    } else if (n == 2) {
      cp = ((static_cast<uint8_t>(text[pos]) & 0x1F) << 6) | (static_cast<uint8_t>(text[pos + 1]) & 0x3F);
    }
    const auto byte = n <= 2 ? byte_level_byte(cp) : std::nullopt;
    if (byte) {
      out.push_back(static_cast<char>(*byte));
    } else {
      out.append(text.substr(pos, n));
    }
    pos += n;
  }
  return out;
}

}  // namespace aph::text
