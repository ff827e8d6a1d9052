// Reading typed fields out of a JSON request body. Every failure is a 400
// that names the field, so no client sees a 500 for bad input.
#pragma once

#include <boost/json.hpp>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aphrodite_api/http_error.hpp"

namespace aph::api {

inline boost::json::object parse_body_object(std::string_view body) {
  if (body.empty()) return {};
  boost::system::error_code ec;
  boost::json::parse_options options;
  options.max_depth = 64;
  boost::json::value value = boost::json::parse(body, ec, {}, options);
  if (ec) throw bad_request("request body is not valid JSON: " + ec.message());
  if (!value.is_object()) throw bad_request("request body must be a JSON object");
  return std::move(value.as_object());
}

inline const boost::json::value* present(const boost::json::object& body, std::string_view name) {
  auto it = body.find(name);
  if (it == body.end() || it->value().is_null()) return nullptr;
  return &it->value();
}

inline std::optional<double> get_number(const boost::json::object& body, std::string_view name,
                                        double min, double max) {
  const auto* v = present(body, name);
  if (v == nullptr) return std::nullopt;
  double x;
  if (v->is_double()) {
    x = v->as_double();
  } else if (v->is_int64()) {
    x = static_cast<double>(v->as_int64());
  } else if (v->is_uint64()) {
    x = static_cast<double>(v->as_uint64());
  } else {
    throw bad_request("'" + std::string(name) + "' must be a number", std::string(name));
  }
  if (!std::isfinite(x) || x < min || x > max) {
    throw bad_request("'" + std::string(name) + "' must be between " + std::to_string(min) +
                          " and " + std::to_string(max),
                      std::string(name));
  }
  return x;
}

inline std::optional<int64_t> get_int(const boost::json::object& body, std::string_view name,
                                      int64_t min, int64_t max) {
  const auto* v = present(body, name);
  if (v == nullptr) return std::nullopt;
  int64_t x;
  if (v->is_int64()) {
    x = v->as_int64();
  } else if (v->is_uint64()) {
    if (v->as_uint64() > static_cast<uint64_t>(INT64_MAX)) {
      throw bad_request("'" + std::string(name) + "' is out of range", std::string(name));
    }
    x = static_cast<int64_t>(v->as_uint64());
  } else if (v->is_double() && std::floor(v->as_double()) == v->as_double() &&
             std::fabs(v->as_double()) < 9e15) {
    x = static_cast<int64_t>(v->as_double());
  } else {
    throw bad_request("'" + std::string(name) + "' must be an integer", std::string(name));
  }
  if (x < min || x > max) {
    throw bad_request("'" + std::string(name) + "' must be between " + std::to_string(min) +
                          " and " + std::to_string(max),
                      std::string(name));
  }
  return x;
}

inline std::optional<bool> get_bool(const boost::json::object& body, std::string_view name) {
  const auto* v = present(body, name);
  if (v == nullptr) return std::nullopt;
  if (!v->is_bool()) {
    throw bad_request("'" + std::string(name) + "' must be a boolean", std::string(name));
  }
  return v->as_bool();
}

inline std::optional<std::string> get_string(const boost::json::object& body,
                                             std::string_view name) {
  const auto* v = present(body, name);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) {
    throw bad_request("'" + std::string(name) + "' must be a string", std::string(name));
  }
  return std::string(v->as_string());
}

// A string or a list of strings (OpenAI's `stop`, Kobold's `stop_sequence`).
inline std::vector<std::string> get_string_list(const boost::json::object& body,
                                                std::string_view name) {
  std::vector<std::string> out;
  const auto* v = present(body, name);
  if (v == nullptr) return out;
  if (v->is_string()) {
    if (!v->as_string().empty()) out.emplace_back(v->as_string());
    return out;
  }
  if (!v->is_array()) {
    throw bad_request("'" + std::string(name) + "' must be a string or a list of strings",
                      std::string(name));
  }
  for (const auto& item : v->as_array()) {
    if (!item.is_string()) {
      throw bad_request("'" + std::string(name) + "' must contain only strings",
                        std::string(name));
    }
    if (!item.as_string().empty()) out.emplace_back(item.as_string());
  }
  return out;
}

inline boost::json::array to_json_array(const std::vector<std::string>& items) {
  boost::json::array out;
  for (const auto& s : items) out.emplace_back(s);
  return out;
}

inline boost::json::array to_json_array(const std::vector<int32_t>& items) {
  boost::json::array out;
  for (int32_t x : items) out.emplace_back(x);
  return out;
}

}  // namespace aph::api
