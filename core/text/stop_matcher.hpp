// Stop strings over streamed text. Text arrives in pieces (one per token) and
// a stop string may span several pieces, so the matcher holds back the tail
// that could still grow into a stop string and releases it as soon as it
// cannot. Once a stop string matches, the sequence is finished: text after it
// is never released.
//
// When several stop strings could match, the one that completes first (its
// end earliest in the text) wins; among those, the one starting earliest
// (the longest); then the first in the list.
//
// Thread: one instance per sequence, used by one thread at a time.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace aph::text {

class StopMatcher {
 public:
  // Empty stop strings are ignored. include_stop_str_in_output: the matched
  // stop string is part of the released text (OpenAI's default is false).
  explicit StopMatcher(std::vector<std::string> stop_strings,
                       bool include_stop_str_in_output = false);

  struct Result {
    std::string text;                  // safe to send now
    std::optional<size_t> stop_index;  // index into stop_strings when one matched
  };

  // Feeds newly detokenized text. After a match, returns nothing more.
  Result push(std::string_view text);
  // The sequence ended for another reason (EOS, length): releases what is held.
  std::string flush();

  bool stopped() const { return stop_index_.has_value(); }
  std::optional<size_t> stop_index() const { return stop_index_; }
  const std::string& matched_stop() const;  // "" until stopped
  size_t held_bytes() const { return held_.size(); }
  const std::vector<std::string>& stop_strings() const { return stops_; }

 private:
  std::vector<std::string> stops_;
  bool include_stop_;
  std::string held_;  // released text's tail that may begin a stop string
  std::optional<size_t> stop_index_;
};

}  // namespace aph::text
