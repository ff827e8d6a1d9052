// Added and special tokens are found in the input before any other
// processing: the text is cut into raw stretches and whole tokens. At each
// position the longest token that starts there wins (HF's leftmost-longest).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/text/vocabulary.hpp"

namespace aph::text {

struct Fragment {
  int32_t token = -1;     // >= 0: a matched added token
  std::string_view text;  // the raw stretch (token < 0)
};

class AddedTokenMatcher {
 public:
  explicit AddedTokenMatcher(std::vector<AddedToken> tokens);

  // parse_special: match special tokens too (non-special added tokens are
  // always matched, as in HF and llama.cpp).
  void partition(std::string_view text, bool parse_special, std::vector<Fragment>& out) const;
  bool empty() const { return tokens_.empty(); }

 private:
  std::vector<AddedToken> tokens_;
  // Indices into tokens_ by first byte, longest first.
  std::array<std::vector<uint32_t>, 256> by_first_byte_;
};

}  // namespace aph::text
