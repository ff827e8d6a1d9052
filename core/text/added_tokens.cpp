#include "core/text/added_tokens.hpp"

#include <algorithm>

namespace aph::text {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
  std::erase_if(tokens_, [](const AddedToken& t) { return t.text.empty(); });
  for (uint32_t i = 0; i < tokens_.size(); ++i) {
    by_first_byte_[static_cast<uint8_t>(tokens_[i].text[0])].push_back(i);
  }
  for (auto& bucket : by_first_byte_) {
    std::stable_sort(bucket.begin(), bucket.end(), [&](uint32_t a, uint32_t b) {
      return tokens_[a].text.size() > tokens_[b].text.size();
    });
  }
}

void AddedTokenMatcher::partition(std::string_view text, bool parse_special,
                                  std::vector<Fragment>& out) const {
  out.clear();
  size_t raw_begin = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const AddedToken* found = nullptr;
    for (uint32_t index : by_first_byte_[static_cast<uint8_t>(text[pos])]) {
      const AddedToken& t = tokens_[index];
      if (t.special && !parse_special) continue;
      if (text.compare(pos, t.text.size(), t.text) == 0) {
        found = &t;
        break;
      }
    }
    if (found == nullptr) {
      ++pos;
      continue;
    }
    size_t raw_end = pos;
    if (found->lstrip) {
      while (raw_end > raw_begin && is_space(text[raw_end - 1])) --raw_end;
    }
    if (raw_end > raw_begin) out.push_back(Fragment{-1, text.substr(raw_begin, raw_end - raw_begin)});
    out.push_back(Fragment{found->id, {}});
    pos += found->text.size();
    if (found->rstrip) {
      while (pos < text.size() && is_space(text[pos])) ++pos;
    }
    raw_begin = pos;
  }
  if (raw_begin < text.size()) out.push_back(Fragment{-1, text.substr(raw_begin)});
}

}  // namespace aph::text
