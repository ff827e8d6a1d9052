// A stage's read-only view of one request: the JSON object the host built
// with every declared field present (defaults filled in, aliases resolved,
// types checked). The getters still verify types, so a host that skipped
// validation gets an error naming the field instead of a crash.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace aph::samplers {

class Request {
 public:
  explicit Request(const char* json);

  bool has(const char* name) const;
  double number(const char* name) const;
  int64_t integer(const char* name) const;
  bool boolean(const char* name) const;
  std::vector<int64_t> int_list(const char* name) const;
  std::vector<std::string> string_list(const char* name) const;
  // nullptr when absent or null.
  const boost::json::value* value(const char* name) const;

 private:
  const boost::json::value& require(const char* name) const;
  boost::json::object object_;
};

}  // namespace aph::samplers
