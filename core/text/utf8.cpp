#include "core/text/utf8.hpp"


namespace aph::text {

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

namespace {

// The allowed range of the second byte for each lead (Unicode Table 3-7);
// later continuation bytes are always 80..BF.
bool second_byte_ok(uint8_t lead, uint8_t b) {
  if (lead == 0xE0) return b >= 0xA0 && b <= 0xBF;
  if (lead == 0xED) return b >= 0x80 && b <= 0x9F;
  if (lead == 0xF0) return b >= 0x90 && b <= 0xBF;
  if (lead == 0xF4) return b >= 0x80 && b <= 0x8F;
  return b >= 0x80 && b <= 0xBF;
}

size_t expected_length(uint8_t lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;  // continuation byte, C0, C1, F5..FF: never a lead
}

// How many bytes at pos agree with a well-formed sequence so far.
size_t matching_prefix(std::string_view text, size_t pos, size_t need) {
  const auto lead = static_cast<uint8_t>(text[pos]);
  size_t i = 1;
  while (i < need && pos + i < text.size()) {
    const auto b = static_cast<uint8_t>(text[pos + i]);
    const bool ok = i == 1 ? second_byte_ok(lead, b) : (b >= 0x80 && b <= 0xBF);
    if (!ok) break;
    ++i;
  }
  return i;
}

}  // namespace

size_t valid_utf8_sequence_at(std::string_view text, size_t pos) {
  const size_t need = expected_length(static_cast<uint8_t>(text[pos]));
  if (need == 0) return 0;
  return matching_prefix(text, pos, need) == need ? need : 0;
}

size_t invalid_utf8_run_at(std::string_view text, size_t pos) {
  const size_t need = expected_length(static_cast<uint8_t>(text[pos]));
  if (need == 0) return 1;
  return matching_prefix(text, pos, need);
}

std::string to_valid_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t pos = 0;
  while (pos < bytes.size()) {
    const size_t n = valid_utf8_sequence_at(bytes, pos);
    if (n > 0) {
      out.append(bytes.substr(pos, n));
      pos += n;
    } else {
      out.append(kReplacementChar);
      pos += invalid_utf8_run_at(bytes, pos);
    }
  }
  return out;
}

bool is_valid_utf8(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t n = valid_utf8_sequence_at(text, pos);
    if (n == 0) return false;
    pos += n;
  }
  return true;
}

std::string take_complete_utf8(std::string& bytes) {
  std::string out;
  size_t pos = 0;
  while (pos < bytes.size()) {
    const size_t n = valid_utf8_sequence_at(bytes, pos);
    if (n > 0) {
      out.append(bytes, pos, n);
      pos += n;
      continue;
    }
    const size_t run = invalid_utf8_run_at(bytes, pos);
    const size_t need = expected_length(static_cast<uint8_t>(bytes[pos]));
    // A well-formed start cut off by the end of the buffer may still complete.
    if (need > 0 && pos + run == bytes.size() && run < need) break;
    out.append(kReplacementChar);
    pos += run;
  }
  bytes.erase(0, pos);
  return out;
}

}  // namespace aph::text
