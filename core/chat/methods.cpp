// Methods templates call on str, list, tuple and dict values
// (message.content.strip(), tool.get('x'), ids.pop(0), ...).
#include <algorithm>

#include "core/chat/runtime.hpp"
#include "core/chat/utf8.hpp"

namespace aph::chat {
namespace {

using Method = Value (*)(const Value& self, const CallArgs& args);

int64_t int_arg(const Value& v, const std::string& what) {
  if (!v.is_int() && !v.is_bool()) fail("'" + v.python_type_name() + "' object cannot be interpreted as an integer");
  return v.as_int();
}

const std::string& str_arg(const Value& v, const std::string& method) {
  if (!v.is_string()) fail(method + " arg must be str, not " + v.python_type_name());
  return v.as_string();
}

// s[start:end] in code points, for the optional start/end of find/count/...
std::string window(const Value& self, const BoundArgs& a, size_t start_slot) {
  if (!a.has(start_slot) && !a.has(start_slot + 1)) return self.as_string();
  Value start = a.get_or(start_slot, Value::none());
  Value end = a.get_or(start_slot + 1, Value::none());
  return get_slice(self, start, end, Value::none()).as_string();
}

int64_t codepoint_index(const std::string& s, size_t byte_offset) {
  return static_cast<int64_t>(utf8::length(s.substr(0, byte_offset)));
}

bool affix_match(const Value& self, const CallArgs& args, bool prefix) {
  const char* name = prefix ? "startswith" : "endswith";
  BoundArgs a(args, {"prefix", "start", "end"}, name);
  std::string s = window(self, a, 1);
  List candidates;
  if (a.get(0).is_tuple()) {
    candidates = a.get(0).as_list();
  } else if (a.get(0).is_string()) {
    candidates.push_back(a.get(0));
  } else {
    fail(std::string(name) + " first arg must be str or a tuple of str, not " + a.get(0).python_type_name());
  }
  for (const Value& c : candidates) {
    const std::string& x = str_arg(c, name);
    if (x.size() > s.size()) continue;
    if (prefix ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0) return true;
  }
  return false;
}

Value str_find(const Value& self, const CallArgs& args, bool reverse, bool raise, const char* name) {
  BoundArgs a(args, {"sub", "start", "end"}, name);
  const std::string& sub = str_arg(a.get(0), name);
  std::string s = window(self, a, 1);
  size_t at = reverse ? s.rfind(sub) : s.find(sub);
  if (at == std::string::npos) {
    if (raise) fail("substring not found");
    return Value::integer(-1);
  }
  int64_t offset = 0;
  if (a.has(1) && !a.get(1).is_none()) {
    int64_t start = int_arg(a.get(1), "start");
    int64_t n = static_cast<int64_t>(utf8::length(self.as_string()));
    offset = start < 0 ? std::max<int64_t>(0, start + n) : std::min(start, n);
  }
  return Value::integer(offset + codepoint_index(s, at));
}

Value str_pad(const Value& self, const CallArgs& args, int mode, const char* name) {
  BoundArgs a(args, {"width", "fillchar"}, name);
  int64_t width = int_arg(a.get(0), "width");
  std::string fill = a.has(1) ? str_arg(a.get(1), name) : " ";
  if (utf8::length(fill) != 1) fail("The fill character must be exactly one character long");
  const std::string& s = self.as_string();
  int64_t len = static_cast<int64_t>(utf8::length(s));
  if (width <= len) return self;
  if (width > static_cast<int64_t>(kMaxStringBytes)) check_string_size(kMaxStringBytes + 1);
  int64_t total = width - len;
  int64_t left = mode < 0 ? 0 : mode > 0 ? total : total / 2 + (total & width & 1);
  std::string out;
  for (int64_t i = 0; i < left; ++i) out += fill;
  out += s;
  for (int64_t i = 0; i < total - left; ++i) out += fill;
  return Value::string(out);
}

bool all_chars(const std::string& s, bool (*pred)(char32_t)) {
  auto cps = utf8::decode(s);
  if (cps.empty()) return false;
  return std::all_of(cps.begin(), cps.end(), pred);
}

bool is_digit(char32_t c) { return c >= '0' && c <= '9'; }
bool is_alpha(char32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= 0xC0 && c != 0xD7 && c != 0xF7 && !utf8::is_space(c) && py_is_cased(c)); }
bool is_alnum(char32_t c) { return is_digit(c) || is_alpha(c); }

Value str_method(const std::string& name, const Value& self, const CallArgs& args) {
  const std::string& s = self.as_string();
  if (name == "startswith") return Value::boolean(affix_match(self, args, true));
  if (name == "endswith") return Value::boolean(affix_match(self, args, false));
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    BoundArgs a(args, {"chars"}, name);
    return Value::string(py_strip(s, a.get_or(0, Value::none()), name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit") {
    BoundArgs a(args, {"sep", "maxsplit"}, name);
    int64_t maxsplit = a.has(1) ? int_arg(a.get(1), "maxsplit") : -1;
    return Value::list(py_split(s, a.get_or(0, Value::none()), maxsplit, name == "rsplit"));
  }
  if (name == "splitlines") {
    BoundArgs a(args, {"keepends"}, name);
    return Value::list(py_splitlines(s, a.get(0).truthy()));
  }
  if (name == "upper" || name == "lower" || name == "title" || name == "capitalize" || name == "casefold") {
    BoundArgs a(args, {}, name);
    if (name == "upper") return Value::string(py_upper(s));
    if (name == "title") return Value::string(py_title(s));
    if (name == "capitalize") return Value::string(py_capitalize(s));
    return Value::string(py_lower(s));
  }
  if (name == "replace") {
    BoundArgs a(args, {"old", "new", "count"}, name);
    int64_t count = a.has(2) ? int_arg(a.get(2), "count") : -1;
    return Value::string(py_replace(s, str_arg(a.get(0), name), str_arg(a.get(1), name), count));
  }
  if (name == "find") return str_find(self, args, false, false, "find");
  if (name == "rfind") return str_find(self, args, true, false, "rfind");
  if (name == "index") return str_find(self, args, false, true, "index");
  if (name == "rindex") return str_find(self, args, true, true, "rindex");
  if (name == "count") {
    BoundArgs a(args, {"sub", "start", "end"}, name);
    const std::string& sub = str_arg(a.get(0), name);
    std::string w = window(self, a, 1);
    if (sub.empty()) return Value::integer(static_cast<int64_t>(utf8::length(w)) + 1);
    int64_t n = 0;
    for (size_t at = w.find(sub); at != std::string::npos; at = w.find(sub, at + sub.size())) ++n;
    return Value::integer(n);
  }
  if (name == "format") return Value::string(brace_format(s, args));
  if (name == "join") {
    BoundArgs a(args, {"iterable"}, name);
    std::string out;
    bool first = true;
    for (const Value& item : iterate(a.get(0))) {
      if (!item.is_string()) fail("sequence item: expected str instance, " + item.python_type_name() + " found");
      if (!first) out += s;
      first = false;
      out += item.as_string();
      check_string_size(out.size());
    }
    return Value::string(out);
  }
  if (name == "isdigit" || name == "isdecimal" || name == "isnumeric") return Value::boolean(all_chars(s, is_digit));
  if (name == "isalpha") return Value::boolean(all_chars(s, is_alpha));
  if (name == "isalnum") return Value::boolean(all_chars(s, is_alnum));
  if (name == "isspace") return Value::boolean(all_chars(s, utf8::is_space));
  if (name == "islower" || name == "isupper") {
    bool any_cased = false;
    for (char32_t c : utf8::decode(s)) {
      if (!py_is_cased(c)) continue;
      any_cased = true;
      std::string one;
      utf8::append(one, c);
      if ((name == "islower" ? py_lower(one) : py_upper(one)) != one) return Value::boolean(false);
    }
    return Value::boolean(any_cased);
  }
  if (name == "center") return str_pad(self, args, 0, "center");
  if (name == "ljust") return str_pad(self, args, -1, "ljust");
  if (name == "rjust") return str_pad(self, args, 1, "rjust");
  if (name == "zfill") {
    BoundArgs a(args, {"width"}, name);
    int64_t width = int_arg(a.get(0), "width");
    int64_t len = static_cast<int64_t>(utf8::length(s));
    if (width <= len) return self;
    if (width > static_cast<int64_t>(kMaxStringBytes)) check_string_size(kMaxStringBytes + 1);
    size_t sign = !s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0;
    return Value::string(s.substr(0, sign) + std::string(width - len, '0') + s.substr(sign));
  }
  if (name == "partition" || name == "rpartition") {
    BoundArgs a(args, {"sep"}, name);
    const std::string& sep = str_arg(a.get(0), name);
    if (sep.empty()) fail("empty separator");
    size_t at = name == "partition" ? s.find(sep) : s.rfind(sep);
    if (at == std::string::npos) {
      return name == "partition" ? Value::tuple({self, Value::string(""), Value::string("")})
                                 : Value::tuple({Value::string(""), Value::string(""), self});
    }
    return Value::tuple({Value::string(s.substr(0, at)), a.get(0), Value::string(s.substr(at + sep.size()))});
  }
  if (name == "removeprefix" || name == "removesuffix") {
    BoundArgs a(args, {"affix"}, name);
    const std::string& x = str_arg(a.get(0), name);
    if (name == "removeprefix" && s.compare(0, x.size(), x) == 0) return Value::string(s.substr(x.size()));
    if (name == "removesuffix" && !x.empty() && x.size() <= s.size() && s.compare(s.size() - x.size(), x.size(), x) == 0) {
      return Value::string(s.substr(0, s.size() - x.size()));
    }
    return self;
  }
  fail("'str' object has no attribute '" + name + "'");
}

Value list_method(const std::string& name, const Value& self, const CallArgs& args) {
  List& items = self.as_list();
  if (name == "pop" && self.is_list()) {
    BoundArgs a(args, {"index"}, name);
    if (items.empty()) fail("pop from empty list");
    int64_t i = a.has(0) ? int_arg(a.get(0), "index") : -1;
    if (i < 0) i += static_cast<int64_t>(items.size());
    if (i < 0 || static_cast<size_t>(i) >= items.size()) fail("pop index out of range");
    Value v = items[i];
    items.erase(items.begin() + i);
    return v;
  }
  if (name == "index") {
    BoundArgs a(args, {"value", "start", "stop"}, name);
    for (size_t i = 0; i < items.size(); ++i) {
      if (values_equal(items[i], a.get(0))) return Value::integer(static_cast<int64_t>(i));
    }
    fail(self.is_list() ? a.get(0).repr() + " is not in list" : "tuple.index(x): x not in tuple");
  }
  if (name == "count") {
    BoundArgs a(args, {"value"}, name);
    int64_t n = 0;
    for (const Value& v : items) n += values_equal(v, a.get(0)) ? 1 : 0;
    return Value::integer(n);
  }
  if (name == "copy" && self.is_list()) return Value::list(items);
  fail("'" + self.python_type_name() + "' object has no attribute '" + name + "'");
}

Value dict_method(const std::string& name, const Value& self, const CallArgs& args) {
  const Dict& d = self.as_dict();
  if (name == "items" || name == "keys" || name == "values") {
    BoundArgs a(args, {}, name);
    List out;
    for (const auto& [k, v] : d.entries) {
      out.push_back(name == "items" ? Value::tuple({k, v}) : name == "keys" ? k : v);
    }
    return Value::list(std::move(out));
  }
  if (name == "get") {
    BoundArgs a(args, {"key", "default"}, name);
    if (const Value* v = d.find(a.get(0))) return *v;
    return a.get_or(1, Value::none());
  }
  if (name == "copy") return Value::dict(d);
  fail("'dict' object has no attribute '" + name + "'");
}

bool is_str_method(const std::string& n) {
  static const char* const names[] = {
      "startswith", "endswith", "strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "upper",
      "lower", "title", "capitalize", "casefold", "replace", "find", "rfind", "index", "rindex", "count",
      "format", "join", "isdigit", "isdecimal", "isnumeric", "isalpha", "isalnum", "isspace", "islower",
      "isupper", "center", "ljust", "rjust", "zfill", "partition", "rpartition", "removeprefix", "removesuffix"};
  return std::find(std::begin(names), std::end(names), n) != std::end(names);
}

}  // namespace

std::optional<Value> find_method(const Value& object, const std::string& name) {
  Value self = object;
  if (object.is_string() && is_str_method(name)) {
    return Value::callable(name, [self, name](const CallArgs& args) { return str_method(name, self, args); });
  }
  if (object.is_sequence() &&
      ((object.is_list() && (name == "pop" || name == "copy")) || name == "index" || name == "count")) {
    return Value::callable(name, [self, name](const CallArgs& args) { return list_method(name, self, args); });
  }
  if (object.is_dict() && (name == "items" || name == "keys" || name == "values" || name == "get" || name == "copy")) {
    return Value::callable(name, [self, name](const CallArgs& args) { return dict_method(name, self, args); });
  }
  return std::nullopt;
}

}  // namespace aph::chat
