#include "core/chat/utf8.hpp"

#include "core/text/utf8.hpp"

namespace aph::chat::utf8 {
namespace {

// Length of the well-formed sequence starting at i, or 0 when malformed.
size_t sequence_length(const std::string& s, size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  }
  return n;
}

}  // namespace

std::vector<char32_t> decode(const std::string& s) {
  std::vector<char32_t> out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t n = sequence_length(s, i);
    const auto b = static_cast<unsigned char>(s[i]);
    if (n == 0) {
      // Keep a stray byte as a private-use code point so encode restores it.
      out.push_back(0xDC00 + b);
      i += 1;
      continue;
    }
    char32_t cp = n == 1 ? b : n == 2 ? (b & 0x1F) : n == 3 ? (b & 0x0F) : (b & 0x07);
    for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    out.push_back(cp);
    i += n;
  }
  return out;
}

void append(std::string& out, char32_t cp) {
  if (cp >= 0xDC80 && cp <= 0xDCFF) {  // a stray byte that decode kept
    out.push_back(static_cast<char>(cp - 0xDC00));
  } else {
    text::append_utf8(out, static_cast<uint32_t>(cp));
  }
}

std::string encode(const std::vector<char32_t>& cps) {
  std::string out;
  out.reserve(cps.size());
  for (char32_t cp : cps) append(out, cp);
  return out;
}

std::vector<size_t> boundaries(const std::string& s) {
  std::vector<size_t> out;
  out.reserve(s.size() + 1);
  for (size_t i = 0; i < s.size();) {
    out.push_back(i);
    size_t n = sequence_length(s, i);
    i += n == 0 ? 1 : n;
  }
  out.push_back(s.size());
  return out;
}

size_t length(const std::string& s) { return boundaries(s).size() - 1; }

bool is_space(char32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

}  // namespace aph::chat::utf8
