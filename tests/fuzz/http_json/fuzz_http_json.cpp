// libFuzzer: arbitrary bytes as an HTTP JSON request body, through the
// server's pre-validation (boost::json with the depth limit, object check)
// and, for what passes, a full parse as a dialect would do next.
#include <boost/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "server/http/json_body.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  std::string problem = aph::server::prevalidate_json_body(body);
  if (problem.empty()) {
    // Accepted bodies must be objects a dialect can parse without surprises.
    boost::json::parse_options options;
    options.max_depth = aph::server::kMaxJsonDepth;
    boost::system::error_code ec;
    boost::json::value v = boost::json::parse(body, ec, {}, options);
    if (ec || !v.is_object()) __builtin_trap();
  }
  aph::server::is_json_content_type(body);
  return 0;
}
