// jinja2's builtin filters (plus HF's tojson), with jinja2 3.1's argument
// names and defaults so keyword calls like default(x, true) work.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "core/chat/json_value.hpp"
#include "core/chat/objects.hpp"
#include "core/chat/runtime.hpp"
#include "core/chat/utf8.hpp"

namespace aph::chat {
namespace {

using FilterFn = Value (*)(const Value& v, const CallArgs& args);

Value iterator(const char* type_name, List items) {
  return Value::object(std::make_shared<IteratorObject>(type_name, std::move(items)));
}


int64_t int_param(const Value& v, const char* what) {
  if (!v.is_int() && !v.is_bool()) fail(std::string(what) + " must be an integer, not " + v.python_type_name());
  return v.as_int();
}

size_t python_len(const Value& v) {
  switch (v.kind()) {
    case Kind::Undefined: return 0;
    case Kind::String: return utf8::length(v.as_string());
    case Kind::List:
    case Kind::Tuple: return v.as_list().size();
    case Kind::Dict: return v.as_dict().entries.size();
    default:
      fail("object of type '" + v.python_type_name() + "' has no len()");
  }
}

// make_attrgetter: "a.b.0" walks getitem, digits becoming integers.
Value lookup_path(const Value& item, const Value& attribute) {
  if (!attribute.is_string()) return get_item(item, attribute);
  Value cur = item;
  const std::string& path = attribute.as_string();
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    cur = digits && part.size() < 18 ? get_item(cur, Value::integer(std::stoll(part))) : get_item(cur, Value::string(part));
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

// Sort/unique/min/max key: optional attribute, then lowercase strings unless case-sensitive.
Value sort_key(const Value& item, const Value& attribute, bool case_sensitive) {
  Value k = attribute.is_undefined() || attribute.is_none() ? item : lookup_path(item, attribute);
  if (!case_sensitive && k.is_string()) return Value::string(py_lower(k.as_string()));
  return k;
}

Value f_abs(const Value& v, const CallArgs& args) {
  BoundArgs a(args, {}, "abs");
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_float()) return Value::floating(std::fabs(v.as_double()));
  if (!v.is_number()) fail("bad operand type for abs(): '" + v.python_type_name() + "'");
  return v.as_int() < 0 ? unary_op("-", v) : Value::integer(v.as_int());
}

Value f_attr(const Value& v, const CallArgs& args) {
  BoundArgs a(args, {"name"}, "attr");
  return get_attribute(v, a.get(0).str());
}

Value f_batch(const Value& v, const CallArgs& args) {
  BoundArgs a(args, {"linecount", "fill_with"}, "batch");
  int64_t n = int_param(a.get(0), "linecount");
  if (n <= 0) fail("batch size must be positive");
  List out, row;
  for (const Value& item : iterate(v)) {
    row.push_back(item);
    if (static_cast<int64_t>(row.size()) == n) {
      out.push_back(Value::list(std::move(row)));
      row.clear();
    }
  }
  if (!row.empty()) {
    if (a.has(1) && !a.get(1).is_none()) {
      while (static_cast<int64_t>(row.size()) < n) row.push_back(a.get(1));
    }
    out.push_back(Value::list(std::move(row)));
  }
  return iterator("generator", std::move(out));
}

Value f_capitalize(const Value& v, const CallArgs& args) {
  BoundArgs a(args, {}, "capitalize");
  return Value::string(py_capitalize(v.str()));
}

Value f_center(const Value& v, const CallArgs& args) {
  BoundArgs a(args, {"width"}, "center");
  CallArgs method_args;
  method_args.positional.push_back(a.get_or(0, Value::integer(80)));
  return call_value(*find_method(Value::string(v.str()), "center"), method_args);
}

Value f_default(const Value& v, const CallArgs& args) {
  BoundArgs a(args, {"default_value", "boolean"}, "default");
  bool use_default = v.is_undefined() || (a.get(1).truthy() && !v.truthy());
  return use_default ? a.get_or(0, Value::string("")) : v;
}

Value f_dictsort(const Value& v, const CallArgs& args) {
  BoundArgs a(args, {"case_sensitive", "by", "reverse"}, "dictsort");
  if (!v.is_dict()) fail("You can only sort by either \"key\" or \"value\"");
  std::string by = a.has(1) ? a.get(1).str() : "key";
  if (by != "key" && by != "value") fail("You can only sort by either \"key\" or \"value\"");
  bool cs = a.get(0).truthy();
  List items;
  for (const auto& [k, val] : v.as_dict().entries) items.push_back(Value::tuple({k, val}));
  size_t pos = by == "key" ? 0 : 1;
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    return values_less(sort_key(x.as_list()[pos], Value(), cs), sort_key(y.as_list()[pos], Value(), cs));
  });
  if (a.get(2).truthy()) std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Value f_escape(const Value& v, const CallArgs& args) {
  BoundArgs a(args, {}, "escape");
  if (v.is_markup()) return v;
  return Value::markup(html_escape(v.str()));
}

Value f_first(const Value& v, const CallArgs& args) {
  BoundArgs a(args, {}, "first");
  List items = iterate(v);
  return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
}

Value f_last(const Value& v, const CallArgs& args) {
  BoundArgs a(args, {}, "last");
  List items = iterate(v);
  return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
}

std::optional<double> parse_python_float(const std::string& text) {
  std::string s = py_strip(text, Value::none(), true, true);
  std::string cleaned;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_' && i > 0 && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i - 1])) &&
        std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
      continue;
    }
    cleaned += s[i];
  }
  if (cleaned.empty() || cleaned.find_first_of("xXpP") != std::string::npos) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  double d = std::strtod(cleaned.c_str(), &end);
  if (end != cleaned.c_str() + cleaned.size()) return std::nullopt;
  return d;
}

Value f_float(const Value& v, const CallArgs& args) {
  BoundArgs a(args, {"default"}, "float");
  Value fallback = a.get_or(0, Value::floating(0.0));
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_number()) return Value::floating(v.as_double());
  if (v.is_string()) {
    if (auto d = parse_python_float(v.as_string())) return Value::floating(*d);
  }
  return fallback;
}

Value f_int(const Value& v, const CallArgs& args) {
  BoundArgs a(args, {"default", "base"}, "int");
  Value fallback = a.get_or(0, Value::integer(0));
  int64_t base = a.has(1) ? int_param(a.get(1), "base") : 10;
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_bool() || v.is_int()) return Value::integer(v.as_int());
  if (v.is_float()) {
    double d = v.as_double();
    if (std::isnan(d) || std::isinf(d) || std::fabs(d) >= 9.2e18) return fallback;
    return Value::integer(static_cast<int64_t>(d));
  }
  if (v.is_string()) {
    std::string s = py_strip(v.as_string(), Value::none(), true, true);
    std::string digits;
    for (char c : s) {
      if (c != '_') digits += c;
    }
    if (!digits.empty() && base >= 2 && base <= 36) {
      char* end = nullptr;
      errno = 0;
      long long n = std::strtoll(digits.c_str(), &end, static_cast<int>(base));
      if (end == digits.c_str() + digits.size() && errno == 0 && std::isalnum(static_cast<unsigned char>(digits.back()))) {
        return Value::integer(n);
      }
    }
    if (auto d = parse_python_float(v.as_string())) {
      if (!std::isnan(*d) && !std::isinf(*d) && std::fabs(*d) < 9.2e18) return Value::integer(static_cast<int64_t>(*d));
    }
  }
  return fallback;
}

Value f_format(const Value& v, const CallArgs& args) {
  if (!args.named.empty() && !args.positional.empty()) fail("can't handle positional and keyword arguments at the same time");
  if (!args.named.empty()) {
    Dict d;
    for (const auto& [k, val] : args.named) d.set(Value::string(k), val);
    return Value::string(percent_format(v.str(), Value::dict(std::move(d))));
  }
  return Value::string(percent_format(v.str(), Value::tuple(args.positional)));
}

Value f_indent(const Value& v, const CallArgs& args) {
  BoundArgs a(args, {"width", "first", "blank"}, "indent");
  std::string indention;
  const Value& width = a.get_or(0, Value::integer(4));
  if (width.is_string()) {
    indention = width.as_string();
  } else {
    int64_t w = int_param(width, "width");
    if (w > 1 << 16) fail("indent width too large");
    indention = std::string(w > 0 ? w : 0, ' ');
  }
  // jinja2 appends a newline first so a trailing empty line survives splitlines.
  List lines = py_splitlines(v.str() + "\n", false);
  std::string rv;
  if (a.get(2).truthy()) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i) rv += "\n" + indention;
      rv += lines[i].as_string();
      check_string_size(rv.size());
    }
  } else {
    rv = lines.empty() ? "" : lines[0].as_string();
    for (size_t i = 1; i < lines.size(); ++i) {
      rv += "\n";
      const std::string& line = lines[i].as_string();
      if (!line.empty()) rv += indention + line;
      check_string_size(rv.size());
    }
  }
  if (a.get(1).truthy()) rv = indention + rv;
  return Value::string(rv);
}

Value f_items(const Value& v, const CallArgs& args) {
  BoundArgs a(args, {}, "items");
  if (v.is_undefined()) return iterator("generator", {});
  if (!v.is_dict()) fail("Can only get item pairs from a mapping.");
  List out;
  for (const auto& [k, val] : v.as_dict().entries) out.push_back(Value::tuple({k, val}));
  return iterator("dict_itemiterator", std::move(out));
}

Value f_join(const Value& v, const CallArgs& args) {
  BoundArgs a(args, {"d", "attribute"}, "join");
  std::string sep = a.has(0) ? a.get(0).str() : "";
  std::string out;
  bool first = true;
  for (const Value& item : iterate(v)) {
    if (!first) out += sep;
    first = false;
    out += (a.has(1) && !a.get(1).is_none() ? lookup_path(item, a.get(1)) : item).str();
    check_string_size(out.size());
  }
  return Value::string(out);
}

Value f_length(const Value& v, const CallArgs& args) {
  BoundArgs a(args, {}, "length");
  return Value::integer(static_cast<int64_t>(python_len(v)));
}

Value f_list(const Value& v, const CallArgs& args) {
  BoundArgs a(args, {}, "list");
  return Value::list(iterate(v));
}

Value f_lower(const Value& v, const CallArgs& args) {
  BoundArgs a(args, {}, "lower");
  return v.is_markup() ? Value::markup(py_lower(v.str())) : Value::string(py_lower(v.str()));
}

Value f_upper(const Value& v, const CallArgs& args) {
  BoundArgs a(args, {}, "upper");
  return v.is_markup() ? Value::markup(py_upper(v.str())) : Value::string(py_upper(v.str()));
}

Value f_map(const Value& v, const CallArgs& args) {
  List out;
  // jinja2's map/select are generators guarded by `if value:`, so a falsy
  // input (None, "", []) yields nothing before any argument is checked.
  if (!v.truthy()) return iterator("generator", {});
  if (args.positional.empty() && args.find_named("attribute")) {
    const Value* attribute = args.find_named("attribute");
    const Value* fallback = args.find_named("default");
    for (const auto& [k, val] : args.named) {
      if (k != "attribute" && k != "default") fail("Unexpected keyword argument '" + k + "'");
    }
    for (const Value& item : iterate(v)) {
      Value x = lookup_path(item, *attribute);
      if (fallback && !fallback->is_none() && x.is_undefined()) x = *fallback;
      out.push_back(x);
    }
    return iterator("generator", std::move(out));
  }
  if (args.positional.empty()) fail("map requires a filter argument");
  std::string name = args.positional[0].str();
  if (!has_filter(name)) fail("No filter named '" + name + "'.");
  CallArgs rest{{args.positional.begin() + 1, args.positional.end()}, args.named};
  for (const Value& item : iterate(v)) out.push_back(apply_filter(name, item, rest));
  return iterator("generator", std::move(out));
}

Value select_or_reject(const Value& v, const CallArgs& args, bool select, bool by_attribute) {
  if (!v.truthy()) return iterator("generator", {});
  size_t off = 0;
  Value attribute;
  if (by_attribute) {
    if (args.positional.empty()) fail("Missing parameter for attribute name");
    attribute = args.positional[0];
    off = 1;
  }
  std::optional<std::string> test;
  CallArgs test_args;
  if (args.positional.size() > off) {
    test = args.positional[off].str();
    if (!has_test(*test)) fail("No test named '" + *test + "'.");
    test_args.positional.assign(args.positional.begin() + off + 1, args.positional.end());
    test_args.named = args.named;
  }
  List out;
  for (const Value& item : iterate(v)) {
    Value x = by_attribute ? lookup_path(item, attribute) : item;
    bool ok = test ? apply_test(*test, x, test_args) : x.truthy();
    if (ok == select) out.push_back(item);
  }
  return iterator("generator", std::move(out));
}

Value f_select(const Value& v, const CallArgs& a) { return select_or_reject(v, a, true, false); }
Value f_reject(const Value& v, const CallArgs& a) { return select_or_reject(v, a, false, false); }
Value f_selectattr(const Value& v, const CallArgs& a) { return select_or_reject(v, a, true, true); }
Value f_rejectattr(const Value& v, const CallArgs& a) { return select_or_reject(v, a, false, true); }

Value min_or_max(const Value& v, const CallArgs& args, bool want_max) {
  BoundArgs a(args, {"case_sensitive", "attribute"}, want_max ? "max" : "min");
  List items = iterate(v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  bool cs = a.get(0).truthy();
  size_t best = 0;
  for (size_t i = 1; i < items.size(); ++i) {
    Value ki = sort_key(items[i], a.get(1), cs);
    Value kb = sort_key(items[best], a.get(1), cs);
    if (want_max ? values_less(kb, ki) : values_less(ki, kb)) best = i;
  }
  return items[best];
}

Value f_max(const Value& v, const CallArgs& a) { return min_or_max(v, a, true); }
Value f_min(const Value& v, const CallArgs& a) { return min_or_max(v, a, false); }

Value f_replace(const Value& v, const CallArgs& args) {
  BoundArgs a(args, {"old", "new", "count"}, "replace");
  int64_t count = a.has(2) && !a.get(2).is_none() ? int_param(a.get(2), "count") : -1;
  return Value::string(py_replace(v.str(), a.get(0).str(), a.get(1).str(), count));
}

Value f_reverse(const Value& v, const CallArgs& args) {
  BoundArgs a(args, {}, "reverse");
  if (v.is_string()) return get_slice(v, Value::none(), Value::none(), Value::integer(-1));
  List items = iterate(v);
  std::reverse(items.begin(), items.end());
  return v.is_sequence() ? iterator(v.is_list() ? "list_reverseiterator" : "reversed", std::move(items))
                         : Value::list(std::move(items));
}

Value f_round(const Value& v, const CallArgs& args) {
  BoundArgs a(args, {"precision", "method"}, "round");
  int64_t precision = a.has(0) ? int_param(a.get(0), "precision") : 0;
  std::string method = a.has(1) ? a.get(1).str() : "common";
  if (method != "common" && method != "ceil" && method != "floor") {
    fail("method must be 'common', 'ceil' or 'floor'");
  }
  if (v.is_undefined()) fail_undefined(v);
  if (!v.is_number()) fail("type " + v.python_type_name() + " doesn't define __round__ method");
  if (precision > 300 || precision < -300) fail("precision out of range");
  if (method == "common") {
    if (!v.is_float()) return Value::integer(v.as_int());
    double d = v.as_double();
    if (std::isnan(d) || std::isinf(d)) return v;
    if (precision == 0) return Value::floating(std::nearbyint(d));
    if (precision > 0) {
      // printf rounds the exact binary value half-even, as Python's round() does.
      char buf[512];
      std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(precision), d);
      return Value::floating(std::strtod(buf, nullptr));
    }
    double scale = std::pow(10.0, static_cast<double>(-precision));
    return Value::floating(std::nearbyint(d / scale) * scale);
  }
  double scale = std::pow(10.0, static_cast<double>(precision));
  double x = v.as_double() * scale;
  return Value::floating((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
}

Value f_safe(const Value& v, const CallArgs& args) {
  BoundArgs a(args, {}, "safe");
  return Value::markup(v.str());
}

Value f_sort(const Value& v, const CallArgs& args) {
  BoundArgs a(args, {"reverse", "case_sensitive", "attribute"}, "sort");
  List items = iterate(v);
  bool cs = a.get(1).truthy();
  std::vector<std::pair<Value, Value>> keyed;
  for (const Value& item : items) keyed.emplace_back(sort_key(item, a.get(2), cs), item);
  const bool reverse = a.get(0).truthy();
  // Python's sorted(reverse=True) keeps equal items in their original order.
  std::stable_sort(keyed.begin(), keyed.end(), [reverse](const auto& x, const auto& y) {
    return reverse ? values_less(y.first, x.first) : values_less(x.first, y.first);
  });
  List out;
  for (auto& [k, item] : keyed) out.push_back(item);
  return Value::list(std::move(out));
}

Value f_string(const Value& v, const CallArgs& args) {
  BoundArgs a(args, {}, "string");
  return v.is_markup() ? v : Value::string(v.str());
}

Value f_sum(const Value& v, const CallArgs& args) {
  BoundArgs a(args, {"attribute", "start"}, "sum");
  Value total = a.get_or(1, Value::integer(0));
  for (const Value& item : iterate(v)) {
    Value x = a.has(0) && !a.get(0).is_none() ? lookup_path(item, a.get(0)) : item;
    total = binary_op("+", total, x);
  }
  return total;
}

Value f_title(const Value& v, const CallArgs& args) {
  BoundArgs a(args, {}, "title");
  // jinja2 splits on runs of [-\s({\[<] and capitalizes each piece.
  auto is_delim = [](char32_t c) { return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || utf8::is_space(c); };
  std::string out;
  std::vector<char32_t> piece;
  auto flush = [&]() {
    if (piece.empty()) return;
    std::string p = utf8::encode(piece);
    auto b = utf8::boundaries(p);
    out += py_upper(p.substr(0, b[1])) + py_lower(p.substr(b[1]));
    piece.clear();
  };
  for (char32_t c : utf8::decode(v.str())) {
    if (is_delim(c)) {
      flush();
      utf8::append(out, c);
    } else {
      piece.push_back(c);
    }
  }
  flush();
  return Value::string(out);
}

Value f_tojson(const Value& v, const CallArgs& args) {
  // HF's replacement: tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
  BoundArgs a(args, {"ensure_ascii", "indent", "separators", "sort_keys"}, "tojson");
  JsonDumpOptions o;
  o.ensure_ascii = a.get(0).truthy();
  if (a.has(1) && !a.get(1).is_none()) {
    const Value& indent = a.get(1);
    if (indent.is_string()) {
      o.indent = indent.as_string();
    } else {
      int64_t n = int_param(indent, "indent");
      if (n > 1 << 12) fail("indent too large");
      o.indent = std::string(n > 0 ? n : 0, ' ');
    }
  }
  if (a.has(2) && !a.get(2).is_none()) {
    List seps = iterate(a.get(2));
    if (seps.size() != 2) fail("separators must be a pair (item_separator, key_separator)");
    o.item_separator = seps[0].str();
    o.key_separator = seps[1].str();
  }
  o.sort_keys = a.get(3).truthy();
  return Value::string(to_json(v, o));
}

Value f_trim(const Value& v, const CallArgs& args) {
  BoundArgs a(args, {"chars"}, "trim");
  std::string s = py_strip(v.str(), a.get_or(0, Value::none()), true, true);
  return v.is_markup() ? Value::markup(s) : Value::string(s);
}

Value f_truncate(const Value& v, const CallArgs& args) {
  BoundArgs a(args, {"length", "killwords", "end", "leeway"}, "truncate");
  std::string s = v.str();
  int64_t length = a.has(0) ? int_param(a.get(0), "length") : 255;
  std::string end = a.has(2) ? a.get(2).str() : "...";
  int64_t leeway = a.has(3) && !a.get(3).is_none() ? int_param(a.get(3), "leeway") : 5;
  int64_t end_len = static_cast<int64_t>(utf8::length(end));
  if (length < end_len) fail("expected length >= " + std::to_string(end_len) + ", got " + std::to_string(length));
  if (leeway < 0) fail("expected leeway >= 0, got " + std::to_string(leeway));
  if (static_cast<int64_t>(utf8::length(s)) <= length + leeway) return Value::string(s);
  std::string head = get_slice(Value::string(s), Value::none(), Value::integer(length - end_len), Value::none()).as_string();
  if (a.get(1).truthy()) return Value::string(head + end);
  size_t space = head.rfind(' ');
  if (space != std::string::npos) head = head.substr(0, space);
  return Value::string(head + end);
}

Value f_unique(const Value& v, const CallArgs& args) {
  BoundArgs a(args, {"case_sensitive", "attribute"}, "unique");
  bool cs = a.get(0).truthy();
  List seen, out;
  for (const Value& item : iterate(v)) {
    Value key = sort_key(item, a.get(1), cs);
    bool dup = false;
    for (const Value& s : seen) {
      if (values_equal(s, key)) {
        dup = true;
        break;
      }
    }
    if (!dup) {
      seen.push_back(key);
      out.push_back(item);
    }
  }
  return iterator("generator", std::move(out));
}

Value f_wordcount(const Value& v, const CallArgs& args) {
  BoundArgs a(args, {}, "wordcount");
  int64_t count = 0;
  bool in_word = false;
  for (char32_t c : utf8::decode(v.str())) {
    bool word_char = c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                     (c >= 0xAA && !utf8::is_space(c) && c != 0xD7 && c != 0xF7 && (c < 0x2000 || c > 0x206F) &&
                      (c < 0x3000 || c > 0x303F));
    if (word_char && !in_word) ++count;
    in_word = word_char;
  }
  return Value::integer(count);
}

const std::unordered_map<std::string, FilterFn>& filters() {
  static const std::unordered_map<std::string, FilterFn> table = {
      {"abs", f_abs},          {"attr", f_attr},          {"batch", f_batch},
      {"capitalize", f_capitalize}, {"center", f_center}, {"count", f_length},
      {"d", f_default},        {"default", f_default},    {"dictsort", f_dictsort},
      {"e", f_escape},         {"escape", f_escape},      {"first", f_first},
      {"float", f_float},      {"format", f_format},      {"indent", f_indent},
      {"int", f_int},          {"items", f_items},        {"join", f_join},
      {"last", f_last},        {"length", f_length},      {"list", f_list},
      {"lower", f_lower},      {"map", f_map},            {"max", f_max},
      {"min", f_min},          {"reject", f_reject},      {"rejectattr", f_rejectattr},
      {"replace", f_replace},  {"reverse", f_reverse},    {"round", f_round},
      {"safe", f_safe},        {"select", f_select},      {"selectattr", f_selectattr},
      {"sort", f_sort},        {"string", f_string},      {"sum", f_sum},
      {"title", f_title},      {"tojson", f_tojson},      {"trim", f_trim},
      {"truncate", f_truncate}, {"unique", f_unique},     {"upper", f_upper},
      {"wordcount", f_wordcount},
  };
  return table;
}

}  // namespace

bool has_filter(const std::string& name) { return filters().count(name) != 0; }

Value apply_filter(const std::string& name, const Value& value, const CallArgs& args) {
  auto it = filters().find(name);
  if (it == filters().end()) fail("No filter named '" + name + "'.");
  return it->second(value, args);
}

}  // namespace aph::chat
