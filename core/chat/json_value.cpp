#include "core/chat/json_value.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/chat/runtime.hpp"
#include "core/chat/utf8.hpp"

namespace aph::chat {

Value from_json(const boost::json::value& json) {
  switch (json.kind()) {
    case boost::json::kind::null:
      return Value::none();
    case boost::json::kind::bool_:
      return Value::boolean(json.get_bool());
    case boost::json::kind::int64:
      return Value::integer(json.get_int64());
    case boost::json::kind::uint64: {
      uint64_t u = json.get_uint64();
      if (u <= static_cast<uint64_t>(INT64_MAX)) return Value::integer(static_cast<int64_t>(u));
      return Value::floating(static_cast<double>(u));
    }
    case boost::json::kind::double_:
      return Value::floating(json.get_double());
    case boost::json::kind::string:
      return Value::string(std::string(json.get_string()));
    case boost::json::kind::array: {
      List items;
      items.reserve(json.get_array().size());
      for (const auto& item : json.get_array()) items.push_back(from_json(item));
      return Value::list(std::move(items));
    }
    case boost::json::kind::object: {
      Dict d;
      for (const auto& [key, item] : json.get_object()) {
        d.entries.emplace_back(Value::string(std::string(key)), from_json(item));
      }
      return Value::dict(std::move(d));
    }
  }
  return Value::none();
}

namespace {

void append_json_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  for (char32_t cp : utf8::decode(s)) {
    char buf[16];
    switch (cp) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (cp < 0x20 || (ensure_ascii && cp >= 0x7F)) {
          if (cp >= 0x10000) {
            char32_t v = cp - 0x10000;
            std::snprintf(buf, sizeof(buf), "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 + (v >> 10)),
                          static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
          } else {
            std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(cp));
          }
          out += buf;
        } else {
          utf8::append(out, cp);
        }
    }
  }
  out += '"';
}

std::string json_float(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
  return python_float_repr(d);
}

class Dumper {
 public:
  explicit Dumper(const JsonDumpOptions& o) : o_(o) {
    item_sep_ = o.item_separator.value_or(o.indent ? "," : ", ");
    key_sep_ = o.key_separator.value_or(": ");
  }

  void dump(const Value& v, int level) {
    if (level > 200) fail("maximum recursion depth exceeded while encoding a JSON object");
    check_string_size(out.size());
    switch (v.kind()) {
      case Kind::None: out += "null"; return;
      case Kind::Bool: out += v.as_bool() ? "true" : "false"; return;
      case Kind::Int: out += std::to_string(v.as_int()); return;
      case Kind::Float: out += json_float(v.as_double()); return;
      case Kind::String: append_json_string(out, v.as_string(), o_.ensure_ascii); return;
      case Kind::List:
      case Kind::Tuple: {
        const List& items = v.as_list();
        if (items.empty()) {
          out += "[]";
          return;
        }
        out += '[';
        for (size_t i = 0; i < items.size(); ++i) {
          if (i) out += item_sep_;
          newline(level + 1);
          dump(items[i], level + 1);
        }
        newline(level);
        out += ']';
        return;
      }
      case Kind::Dict: {
        std::vector<std::pair<std::string, const Value*>> entries;
        for (const auto& [k, val] : v.as_dict().entries) entries.emplace_back(key_text(k), &val);
        if (o_.sort_keys) {
          std::stable_sort(entries.begin(), entries.end(),
                           [](const auto& a, const auto& b) { return a.first < b.first; });
        }
        if (entries.empty()) {
          out += "{}";
          return;
        }
        out += '{';
        for (size_t i = 0; i < entries.size(); ++i) {
          if (i) out += item_sep_;
          newline(level + 1);
          append_json_string(out, entries[i].first, o_.ensure_ascii);
          out += key_sep_;
          dump(*entries[i].second, level + 1);
        }
        newline(level);
        out += '}';
        return;
      }
      default:
        fail("Object of type " + v.python_type_name() + " is not JSON serializable");
    }
  }

  std::string out;

 private:
  static std::string key_text(const Value& k) {
    switch (k.kind()) {
      case Kind::String: return k.as_string();
      case Kind::Bool: return k.as_bool() ? "true" : "false";
      case Kind::None: return "null";
      case Kind::Int: return std::to_string(k.as_int());
      case Kind::Float: return json_float(k.as_double());
      default: fail("keys must be str, int, float, bool or None, not " + k.python_type_name());
    }
  }

  void newline(int level) {
    if (!o_.indent) return;
    out += '\n';
    for (int i = 0; i < level; ++i) out += *o_.indent;
  }

  const JsonDumpOptions& o_;
  std::string item_sep_, key_sep_;
};

}  // namespace

std::string to_json(const Value& v, const JsonDumpOptions& options) {
  Dumper d(options);
  d.dump(v, 0);
  check_string_size(d.out.size());
  return std::move(d.out);
}

}  // namespace aph::chat
