// Python str semantics (code points, Unicode whitespace, casing) shared by
// the filters and the string methods.
#include <algorithm>

#include "core/chat/runtime.hpp"
#include "core/chat/utf8.hpp"

namespace aph::chat {
namespace {

// Case mapping for the scripts chat data commonly carries: ASCII, Latin-1,
// Greek and Cyrillic. Other code points are left unchanged.
char32_t to_upper(char32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if (c >= 0xE0 && c <= 0xFE && c != 0xF7) return c - 32;
  if (c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2) return c - 32;
  if (c >= 0x430 && c <= 0x44F) return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  return c;
}

char32_t to_lower(char32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  return c;
}

std::string map_chars(const std::string& s, char32_t (*f)(char32_t)) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : utf8::decode(s)) utf8::append(out, f(c));
  return out;
}

bool is_line_break(char32_t c) {
  return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E || c == 0x85 ||
         c == 0x2028 || c == 0x2029;
}

}  // namespace

bool py_is_cased(char32_t c) { return to_upper(c) != c || to_lower(c) != c; }

std::string py_upper(const std::string& s) { return map_chars(s, to_upper); }
std::string py_lower(const std::string& s) { return map_chars(s, to_lower); }

std::string py_capitalize(const std::string& s) {
  auto cps = utf8::decode(s);
  for (size_t i = 0; i < cps.size(); ++i) cps[i] = i == 0 ? to_upper(cps[i]) : to_lower(cps[i]);
  return utf8::encode(cps);
}

std::string py_title(const std::string& s) {
  auto cps = utf8::decode(s);
  bool previous_cased = false;
  for (char32_t& c : cps) {
    c = previous_cased ? to_lower(c) : to_upper(c);
    previous_cased = py_is_cased(c);
  }
  return utf8::encode(cps);
}

std::string py_strip(const std::string& s, const Value& chars, bool left, bool right) {
  auto cps = utf8::decode(s);
  std::vector<char32_t> set;
  const bool whitespace = chars.is_none() || chars.is_undefined();
  if (!whitespace) {
    if (!chars.is_string()) fail("strip arg must be None or str");
    set = utf8::decode(chars.as_string());
  }
  auto strippable = [&](char32_t c) {
    return whitespace ? utf8::is_space(c) : std::find(set.begin(), set.end(), c) != set.end();
  };
  size_t begin = 0, end = cps.size();
  if (left) {
    while (begin < end && strippable(cps[begin])) ++begin;
  }
  if (right) {
    while (end > begin && strippable(cps[end - 1])) --end;
  }
  return utf8::encode(std::vector<char32_t>(cps.begin() + begin, cps.begin() + end));
}

List py_split(const std::string& s, const Value& sep, int64_t maxsplit, bool from_right) {
  List out;
  if (sep.is_none() || sep.is_undefined()) {
    // Runs of whitespace separate; leading/trailing whitespace yields nothing.
    auto cps = utf8::decode(s);
    std::vector<std::pair<size_t, size_t>> words;
    size_t i = 0;
    while (i < cps.size()) {
      while (i < cps.size() && utf8::is_space(cps[i])) ++i;
      if (i >= cps.size()) break;
      size_t j = i;
      while (j < cps.size() && !utf8::is_space(cps[j])) ++j;
      words.emplace_back(i, j);
      i = j;
    }
    if (maxsplit >= 0 && static_cast<size_t>(maxsplit) + 1 < words.size()) {
      // The unsplit remainder keeps its inner whitespace.
      if (from_right) {
        size_t keep = words.size() - static_cast<size_t>(maxsplit);
        size_t start = words[0].first;
        size_t stop = words[keep - 1].second;
        out.push_back(Value::string(utf8::encode({cps.begin() + start, cps.begin() + stop})));
        for (size_t w = keep; w < words.size(); ++w) {
          out.push_back(Value::string(utf8::encode({cps.begin() + words[w].first, cps.begin() + words[w].second})));
        }
      } else {
        for (size_t w = 0; w < static_cast<size_t>(maxsplit); ++w) {
          out.push_back(Value::string(utf8::encode({cps.begin() + words[w].first, cps.begin() + words[w].second})));
        }
        size_t start = words[maxsplit].first;
        size_t stop = cps.size();
        while (stop > start && utf8::is_space(cps[stop - 1])) --stop;
        out.push_back(Value::string(utf8::encode({cps.begin() + start, cps.begin() + stop})));
      }
      return out;
    }
    for (auto [a, b] : words) out.push_back(Value::string(utf8::encode({cps.begin() + a, cps.begin() + b})));
    return out;
  }
  if (!sep.is_string()) fail("must be str or None, not " + sep.python_type_name());
  const std::string& d = sep.as_string();
  if (d.empty()) fail("empty separator");
  std::vector<std::string> parts;
  if (!from_right) {
    size_t start = 0;
    int64_t splits = 0;
    while (maxsplit < 0 || splits < maxsplit) {
      size_t at = s.find(d, start);
      if (at == std::string::npos) break;
      parts.push_back(s.substr(start, at - start));
      start = at + d.size();
      ++splits;
    }
    parts.push_back(s.substr(start));
  } else {
    size_t end = s.size();
    int64_t splits = 0;
    while ((maxsplit < 0 || splits < maxsplit) && end >= d.size()) {
      size_t at = s.rfind(d, end - d.size());
      if (at == std::string::npos) break;
      parts.push_back(s.substr(at + d.size(), end - at - d.size()));
      end = at;
      ++splits;
    }
    parts.push_back(s.substr(0, end));
    std::reverse(parts.begin(), parts.end());
  }
  for (auto& p : parts) out.push_back(Value::string(std::move(p)));
  return out;
}

List py_splitlines(const std::string& s, bool keepends) {
  List out;
  auto cps = utf8::decode(s);
  size_t start = 0;
  for (size_t i = 0; i < cps.size(); ++i) {
    if (!is_line_break(cps[i])) continue;
    size_t end = i;
    if (cps[i] == '\r' && i + 1 < cps.size() && cps[i + 1] == '\n') ++i;
    size_t stop = keepends ? i + 1 : end;
    out.push_back(Value::string(utf8::encode({cps.begin() + start, cps.begin() + stop})));
    start = i + 1;
  }
  if (start < cps.size()) out.push_back(Value::string(utf8::encode({cps.begin() + start, cps.end()})));
  return out;
}

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  check_string_size(out.size());
  return out;
}

std::string py_replace(const std::string& s, const std::string& old, const std::string& replacement, int64_t count) {
  std::string out;
  if (old.empty()) {
    auto bounds = utf8::boundaries(s);
    int64_t done = 0;
    for (size_t i = 0; i + 1 < bounds.size(); ++i) {
      if (count < 0 || done < count) {
        out += replacement;
        ++done;
      }
      out += s.substr(bounds[i], bounds[i + 1] - bounds[i]);
      check_string_size(out.size());
    }
    if (count < 0 || done < count) out += replacement;
    return out;
  }
  size_t start = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    size_t at = s.find(old, start);
    if (at == std::string::npos) break;
    out.append(s, start, at - start);
    out += replacement;
    check_string_size(out.size());
    start = at + old.size();
    ++done;
  }
  out.append(s, start, std::string::npos);
  check_string_size(out.size());
  return out;
}

}  // namespace aph::chat
