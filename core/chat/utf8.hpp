// Python strings index by code point; ours are UTF-8 bytes. These helpers
// convert between the two so len(), slicing and indexing match Python.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace aph::chat::utf8 {

// Invalid bytes decode as themselves (U+0080..U+00FF range is not used for
// them; they round-trip through encode as single raw bytes).
std::vector<char32_t> decode(const std::string& s);
std::string encode(const std::vector<char32_t>& cps);
void append(std::string& out, char32_t cp);
size_t length(const std::string& s);
// Byte offsets of every code point start, plus s.size() at the end.
std::vector<size_t> boundaries(const std::string& s);
bool is_space(char32_t cp);  // Python's str.isspace()

}  // namespace aph::chat::utf8
