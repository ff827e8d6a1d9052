// Between the request's JSON and template Values, and HF's tojson filter
// (json.dumps with ensure_ascii=False, sort_keys=False by default).
#pragma once

#include <boost/json.hpp>
#include <optional>
#include <string>

#include "core/chat/value.hpp"

namespace aph::chat {

Value from_json(const boost::json::value& json);

struct JsonDumpOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;  // nullopt: one line
  std::optional<std::string> item_separator;
  std::optional<std::string> key_separator;
  bool sort_keys = false;
};

// Output identical to Python's json.dumps for the same data. Throws a
// RuntimeFailure for values JSON cannot hold (undefined, macros, namespaces).
std::string to_json(const Value& v, const JsonDumpOptions& options);

}  // namespace aph::chat
