#include "plugins/samplers/request.hpp"

#include <cmath>

#include "core/common/error.hpp"

namespace aph::samplers {

namespace {
[[noreturn]] void bad(const char* name, const char* want) {
  throw invalid_argument(std::string(name) + ": expected " + want);
}
}  // namespace

Request::Request(const char* json) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(json ? json : "", ec);
  if (ec || !v.is_object()) throw invalid_argument("sampler request: not a JSON object");
  object_ = std::move(v.as_object());
}

bool Request::has(const char* name) const {
  const boost::json::value* v = object_.if_contains(name);
  return v != nullptr && !v->is_null();
}

const boost::json::value* Request::value(const char* name) const {
  const boost::json::value* v = object_.if_contains(name);
  return (v == nullptr || v->is_null()) ? nullptr : v;
}

const boost::json::value& Request::require(const char* name) const {
  const boost::json::value* v = value(name);
  if (v == nullptr) throw invalid_argument(std::string(name) + ": missing");
  return *v;
}

double Request::number(const char* name) const {
  const boost::json::value& v = require(name);
  if (v.is_double()) return v.get_double();
  if (v.is_int64()) return static_cast<double>(v.get_int64());
  if (v.is_uint64()) return static_cast<double>(v.get_uint64());
  if (v.is_bool()) return v.get_bool() ? 1.0 : 0.0;
  bad(name, "a number");
}

int64_t Request::integer(const char* name) const {
  const boost::json::value& v = require(name);
  if (v.is_int64()) return v.get_int64();
  if (v.is_uint64()) return static_cast<int64_t>(v.get_uint64());
  if (v.is_double() && std::floor(v.get_double()) == v.get_double() && std::fabs(v.get_double()) < 9e15) {
    return static_cast<int64_t>(v.get_double());
  }
  if (v.is_bool()) return v.get_bool() ? 1 : 0;
  bad(name, "an integer");
}

bool Request::boolean(const char* name) const {
  const boost::json::value& v = require(name);
  if (v.is_bool()) return v.get_bool();
  if (v.is_int64()) return v.get_int64() != 0;
  bad(name, "a boolean");
}

std::vector<int64_t> Request::int_list(const char* name) const {
  std::vector<int64_t> out;
  const boost::json::value* v = value(name);
  if (v == nullptr) return out;
  if (!v->is_array()) bad(name, "an array of integers");
  for (const boost::json::value& e : v->as_array()) {
    if (e.is_int64()) {
      out.push_back(e.get_int64());
    } else if (e.is_uint64()) {
      out.push_back(static_cast<int64_t>(e.get_uint64()));
    } else if (e.is_double() && std::floor(e.get_double()) == e.get_double()) {
      out.push_back(static_cast<int64_t>(e.get_double()));
    } else {
      bad(name, "an array of integers");
    }
  }
  return out;
}

std::vector<std::string> Request::string_list(const char* name) const {
  std::vector<std::string> out;
  const boost::json::value* v = value(name);
  if (v == nullptr) return out;
  if (!v->is_array()) bad(name, "an array of strings");
  for (const boost::json::value& e : v->as_array()) {
    if (!e.is_string()) bad(name, "an array of strings");
    out.emplace_back(e.get_string());
  }
  return out;
}

}  // namespace aph::samplers
