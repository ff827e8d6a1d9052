// A string -> id hash map that can be probed with a string_view, so lookups
// in the encoder's hot loop allocate nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace aph::text {

struct TransparentStringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

using StringIdMap = std::unordered_map<std::string, int32_t, TransparentStringHash, std::equal_to<>>;

inline int32_t find_id(const StringIdMap& map, std::string_view text) {
  auto it = map.find(text);
  return it == map.end() ? -1 : it->second;
}

}  // namespace aph::text
