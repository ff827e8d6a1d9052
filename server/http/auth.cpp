#include "server/http/auth.hpp"

#include <algorithm>
#include <cctype>

namespace aph::server {

bool constant_time_equal(std::string_view a, std::string_view b) {
  size_t n = std::max(a.size(), b.size());
  volatile unsigned char diff = static_cast<unsigned char>(a.size() != b.size());
  for (size_t i = 0; i < n; ++i) {
    unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff = diff | (x ^ y);
  }
  return diff == 0;
}

std::string presented_key(std::string_view authorization, std::string_view x_api_key) {
  auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
  };
  authorization = trim(authorization);
  if (authorization.size() > 7) {
    std::string scheme(authorization.substr(0, 7));
    std::transform(scheme.begin(), scheme.end(), scheme.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (scheme == "bearer ") return std::string(trim(authorization.substr(7)));
  }
  return std::string(trim(x_api_key));
}

bool key_accepted(std::string_view key, const std::vector<std::string>& keys) {
  if (key.empty()) return false;
  bool accepted = false;
  for (const auto& k : keys) accepted = constant_time_equal(key, k) | accepted;
  return accepted;
}

}  // namespace aph::server
