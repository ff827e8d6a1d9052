// API-key checks. Keys come from `Authorization: Bearer <key>` or
// `X-API-KEY: <key>`; every configured key is compared in constant time so
// the response time does not reveal how much of a guess was right.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace aph::server {

bool constant_time_equal(std::string_view a, std::string_view b);

// The key a client presented ("" if none): the Bearer token, else X-API-KEY.
std::string presented_key(std::string_view authorization_header, std::string_view x_api_key_header);

// True when `key` equals one of `keys`; every key is compared, whatever matched.
bool key_accepted(std::string_view key, const std::vector<std::string>& keys);

}  // namespace aph::server
