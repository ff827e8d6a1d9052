#include "server/http/json_body.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <cctype>

namespace aph::server {

std::string prevalidate_json_body(std::string_view body) {
  boost::json::parse_options options;
  options.max_depth = kMaxJsonDepth;
  options.allow_comments = false;
  options.allow_trailing_commas = false;
  options.allow_invalid_utf8 = false;
  boost::json::stream_parser parser({}, options);
  boost::system::error_code ec;
  // write() (unlike write_some) also rejects bytes after the first value.
  parser.write(body.data(), body.size(), ec);
  if (!ec) parser.finish(ec);
  if (ec) return "request body is not valid JSON: " + ec.message();
  boost::json::value v = parser.release();
  if (!v.is_object()) return "request body must be a JSON object";
  return "";
}

bool is_json_content_type(std::string_view content_type) {
  std::string t(content_type.substr(0, content_type.find(';')));
  t.erase(std::remove_if(t.begin(), t.end(), [](unsigned char c) { return std::isspace(c); }), t.end());
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (t == "application/json") return true;
  return t.rfind("application/", 0) == 0 && t.size() > 5 && t.compare(t.size() - 5, 5, "+json") == 0;
}

}  // namespace aph::server
