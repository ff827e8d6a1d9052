// The host's check of a JSON request body before any dialect sees it: valid
// UTF-8 JSON, an object at the top, bounded nesting. Dialects then parse a
// body they know is well-formed.
#pragma once

#include <string>
#include <string_view>

namespace aph::server {

constexpr int kMaxJsonDepth = 64;

// "" when the body is acceptable, else a message for a 400 ("request body is
// not valid JSON: syntax error at offset 12").
std::string prevalidate_json_body(std::string_view body);

// True for application/json and application/<x>+json (parameters ignored).
bool is_json_content_type(std::string_view content_type);

}  // namespace aph::server
