#include "core/text/stop_matcher.hpp"

#include <algorithm>

namespace aph::text {

StopMatcher::StopMatcher(std::vector<std::string> stop_strings, bool include_stop_str_in_output)
    : stops_(std::move(stop_strings)), include_stop_(include_stop_str_in_output) {}

const std::string& StopMatcher::matched_stop() const {
  static const std::string none;
  return stop_index_ ? stops_[*stop_index_] : none;
}

StopMatcher::Result StopMatcher::push(std::string_view text) {
  Result result;
  if (stop_index_) return result;
  // Only the held tail can hold the start of a match, so a stop string is
  // searched for in held_ + text, beginning where it could still end in text.
  std::string buffer = std::move(held_);
  held_.clear();
  const size_t old_size = buffer.size();
  buffer.append(text);

  size_t best_end = std::string::npos;
  size_t best_begin = 0;
  size_t best_index = 0;
  for (size_t i = 0; i < stops_.size(); ++i) {
    const std::string& stop = stops_[i];
    if (stop.empty() || stop.size() > buffer.size()) continue;
    // The earliest occurrence of this stop string that ends inside the new text.
    const size_t from = old_size >= stop.size() ? old_size - stop.size() + 1 : 0;
    const size_t at = buffer.find(stop, from);
    if (at == std::string::npos) continue;
    const size_t end = at + stop.size();
    if (end < best_end || (end == best_end && at < best_begin)) {
      best_end = end;
      best_begin = at;
      best_index = i;
    }
  }
  if (best_end != std::string::npos) {
    stop_index_ = best_index;
    result.stop_index = best_index;
    result.text = buffer.substr(0, include_stop_ ? best_end : best_begin);
    return result;
  }

  // Hold the longest tail that is a proper prefix of some stop string.
  size_t hold = 0;
  for (const std::string& stop : stops_) {
    const size_t max_len = std::min(stop.size() - (stop.empty() ? 0 : 1), buffer.size());
    for (size_t len = max_len; len > hold; --len) {
      if (buffer.compare(buffer.size() - len, len, stop, 0, len) == 0) {
        hold = len;
        break;
      }
    }
  }
  held_ = buffer.substr(buffer.size() - hold);
  buffer.resize(buffer.size() - hold);
  result.text = std::move(buffer);
  return result;
}

std::string StopMatcher::flush() {
  if (stop_index_) return {};
  std::string out = std::move(held_);
  held_.clear();
  return out;
}

}  // namespace aph::text
