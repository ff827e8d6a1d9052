#include "server/toml_json.hpp"

#include <boost/json.hpp>

#include <cmath>
#include <sstream>

#include "core/common/error.hpp"

namespace aph::server {
namespace {

boost::json::value convert(const toml::node& node, const std::string& where) {
  switch (node.type()) {
    case toml::node_type::table: {
      boost::json::object obj;
      for (auto&& [key, child] : *node.as_table()) {
        std::string k(key.str());
        obj[k] = convert(child, where + "." + k);
      }
      return obj;
    }
    case toml::node_type::array: {
      boost::json::array arr;
      size_t i = 0;
      for (const toml::node& child : *node.as_array()) {
        arr.push_back(convert(child, where + "[" + std::to_string(i++) + "]"));
      }
      return arr;
    }
    case toml::node_type::string: return boost::json::string(node.as_string()->get());
    case toml::node_type::integer: return node.as_integer()->get();
    case toml::node_type::floating_point: {
      double d = node.as_floating_point()->get();
      if (!std::isfinite(d)) throw invalid_argument(where + ": nan and inf have no JSON form");
      return d;
    }
    case toml::node_type::boolean: return node.as_boolean()->get();
    default: {
      std::ostringstream text;
      node.visit([&](const auto& v) { text << v; });
      return boost::json::string(text.str());
    }
  }
}

}  // namespace

std::string toml_table_to_json(const toml::table& table, const std::string& where) {
  return boost::json::serialize(convert(table, where));
}

}  // namespace aph::server
