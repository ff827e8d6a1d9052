// Python's two string formatting languages as templates use them:
// "%s: %d" % (a, b) (and the format filter) and "{}: {name}".format(...).
#include <cmath>
#include <cstdio>

#include "core/chat/runtime.hpp"
#include "core/chat/utf8.hpp"

namespace aph::chat {
namespace {

struct Spec {
  char fill = ' ';
  char align = 0;  // '<', '>', '^', '=' or 0 for the type's default
  char sign = '-';
  bool alternate = false;
  bool zero = false;
  int64_t width = -1;
  int64_t precision = -1;
  char type = 0;
};

std::string pad(std::string body, const Spec& spec, char default_align) {
  int64_t len = static_cast<int64_t>(utf8::length(body));
  if (spec.width <= len) return body;
  if (spec.width > static_cast<int64_t>(kMaxStringBytes)) check_string_size(kMaxStringBytes + 1);
  size_t fill_count = static_cast<size_t>(spec.width - len);
  char align = spec.align ? spec.align : default_align;
  std::string fill(fill_count, spec.fill);
  if (align == '<') return body + fill;
  if (align == '^') return std::string(fill_count / 2, spec.fill) + body + std::string(fill_count - fill_count / 2, spec.fill);
  if (align == '=' && !body.empty() && (body[0] == '-' || body[0] == '+' || body[0] == ' ')) {
    return body.substr(0, 1) + fill + body.substr(1);
  }
  return fill + body;
}

std::string c_format_number(const Value& v, char type, int64_t precision, bool alternate, char sign) {
  std::string flags = "%";
  if (sign == '+') flags += '+';
  if (sign == ' ') flags += ' ';
  if (alternate) flags += '#';
  char buf[512];
  if (type == 'd' || type == 'i' || type == 'u') {
    std::snprintf(buf, sizeof(buf), (flags + "lld").c_str(), static_cast<long long>(v.as_int()));
  } else if (type == 'x' || type == 'X' || type == 'o') {
    long long n = v.as_int();
    std::string body;
    std::snprintf(buf, sizeof(buf), (std::string("%") + (alternate ? "#" : "") + "ll" + type).c_str(),
                  static_cast<unsigned long long>(n < 0 ? -n : n));
    body = buf;
    if (alternate && type == 'o') body = "0o" + body.substr(1);
    if (n < 0) body = "-" + body;
    else if (sign == '+') body = "+" + body;
    else if (sign == ' ') body = " " + body;
    return body;
  } else {
    double d = v.as_double();
    if (std::isinf(d) || std::isnan(d)) {
      std::string s = std::isnan(d) ? "nan" : (d < 0 ? "-inf" : "inf");
      if (type == 'E' || type == 'F' || type == 'G') for (char& c : s) c = static_cast<char>(std::toupper(c));
      if (d > 0 || std::isnan(d)) s = (sign == '+' ? "+" : sign == ' ' ? " " : "") + s;
      return s;
    }
    int p = static_cast<int>(precision < 0 ? 6 : std::min<int64_t>(precision, 300));
    std::snprintf(buf, sizeof(buf), (flags + ".*" + type).c_str(), p, d);
  }
  return buf;
}

bool is_int_like(const Value& v) { return v.is_int() || v.is_bool(); }

// One "%..." conversion applied to one argument.
std::string percent_convert(const Value& arg, Spec spec) {
  std::string body;
  switch (spec.type) {
    case 's':
    case 'r':
    case 'a':
      body = spec.type == 's' ? arg.str() : arg.repr();
      if (spec.precision >= 0) {
        body = get_slice(Value::string(body), Value::none(), Value::integer(spec.precision), Value::none()).as_string();
      }
      return pad(body, spec, spec.align == '<' ? '<' : '>');
    case 'c':
      if (arg.is_string() && utf8::length(arg.as_string()) == 1) return pad(arg.as_string(), spec, '>');
      if (!is_int_like(arg)) fail("%c requires int or char");
      utf8::append(body, static_cast<char32_t>(arg.as_int()));
      return pad(body, spec, '>');
    default:
      break;
  }
  if (arg.is_undefined()) fail_undefined(arg);
  if (!arg.is_number()) {
    const bool int_type = spec.type == 'd' || spec.type == 'i' || spec.type == 'u';
    fail(std::string("%") + spec.type + " format: " + (int_type ? "a real number" : "a real number") +
         " is required, not " + arg.python_type_name());
  }
  Value number = arg;
  if ((spec.type == 'd' || spec.type == 'i' || spec.type == 'u') && arg.is_float()) {
    double d = std::trunc(arg.as_double());
    if (std::fabs(d) >= 9.2e18 || std::isnan(d)) fail("cannot convert float to integer");
    number = Value::integer(static_cast<int64_t>(d));
  }
  if ((spec.type == 'x' || spec.type == 'X' || spec.type == 'o') && arg.is_float()) {
    fail(std::string("%") + spec.type + " format: an integer is required, not float");
  }
  body = c_format_number(number, spec.type, spec.precision, spec.alternate, spec.sign);
  if (spec.zero && spec.align != '<') {
    spec.fill = '0';
    spec.align = '=';
  }
  return pad(body, spec, '>');
}

}  // namespace

std::string percent_format(const std::string& format, const Value& args) {
  List positional;
  const Value* mapping = args.is_dict() ? &args : nullptr;
  if (args.is_tuple()) {
    positional = args.as_list();
  } else {
    positional.push_back(args);
  }
  size_t next = 0;
  bool used_mapping = false;
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out += format[i];
      continue;
    }
    if (++i >= format.size()) fail("incomplete format");
    Spec spec;
    std::optional<Value> keyed;
    if (format[i] == '(') {
      size_t close = format.find(')', i);
      if (close == std::string::npos) fail("incomplete format key");
      if (!mapping) fail("format requires a mapping");
      const Value* v = mapping->as_dict().find(Value::string(format.substr(i + 1, close - i - 1)));
      if (!v) fail("'" + format.substr(i + 1, close - i - 1) + "'");
      keyed = *v;
      used_mapping = true;
      i = close + 1;
    }
    for (; i < format.size(); ++i) {
      char c = format[i];
      if (c == '-') spec.align = '<';
      else if (c == '+') spec.sign = '+';
      else if (c == ' ' && spec.sign != '+') spec.sign = ' ';
      else if (c == '#') spec.alternate = true;
      else if (c == '0') spec.zero = true;
      else break;
    }
    auto take_arg = [&]() -> Value {
      if (next >= positional.size()) fail("not enough arguments for format string");
      return positional[next++];
    };
    auto read_number = [&]() -> int64_t {
      if (i < format.size() && format[i] == '*') {
        ++i;
        Value w = take_arg();
        if (!is_int_like(w)) fail("* wants int");
        return w.as_int();
      }
      int64_t n = 0;
      while (i < format.size() && std::isdigit(static_cast<unsigned char>(format[i]))) {
        n = std::min<int64_t>(n * 10 + (format[i++] - '0'), 1 << 30);
      }
      return n;
    };
    if (i < format.size() && (std::isdigit(static_cast<unsigned char>(format[i])) || format[i] == '*')) {
      spec.width = read_number();
      if (spec.width < 0) {
        spec.align = '<';
        spec.width = -spec.width;
      }
    }
    if (i < format.size() && format[i] == '.') {
      ++i;
      spec.precision = read_number();
    }
    while (i < format.size() && (format[i] == 'h' || format[i] == 'l' || format[i] == 'L')) ++i;
    if (i >= format.size()) fail("incomplete format");
    spec.type = format[i];
    if (spec.type == '%') {
      out += '%';
      continue;
    }
    static const std::string kTypes = "diouxXeEfFgGcrsa";
    if (kTypes.find(spec.type) == std::string::npos) {
      char buf[128];
      std::snprintf(buf, sizeof(buf), "unsupported format character '%c' (0x%x) at index %zu", spec.type,
                    static_cast<unsigned>(static_cast<unsigned char>(spec.type)), i);
      fail(buf);
    }
    // A dict on the right is one argument unless %(key)s conversions name its keys.
    Value arg = keyed ? *keyed : take_arg();
    out += percent_convert(arg, spec);
    check_string_size(out.size());
  }
  if (!used_mapping && !mapping && next < positional.size()) fail("not all arguments converted during string formatting");
  return out;
}

namespace {

Spec parse_format_spec(const std::string& s) {
  Spec spec;
  size_t i = 0;
  if (s.size() >= 2 && (s[1] == '<' || s[1] == '>' || s[1] == '^' || s[1] == '=')) {
    spec.fill = s[0];
    spec.align = s[1];
    i = 2;
  } else if (!s.empty() && (s[0] == '<' || s[0] == '>' || s[0] == '^' || s[0] == '=')) {
    spec.align = s[0];
    i = 1;
  }
  if (i < s.size() && (s[i] == '+' || s[i] == '-' || s[i] == ' ')) spec.sign = s[i++];
  if (i < s.size() && s[i] == '#') {
    spec.alternate = true;
    ++i;
  }
  if (i < s.size() && s[i] == '0') {
    spec.zero = true;
    ++i;
  }
  if (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
    spec.width = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      spec.width = std::min<int64_t>(spec.width * 10 + (s[i++] - '0'), 1 << 30);
    }
  }
  if (i < s.size() && (s[i] == ',' || s[i] == '_')) fail("thousands separators are not supported");
  if (i < s.size() && s[i] == '.') {
    ++i;
    spec.precision = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      spec.precision = std::min<int64_t>(spec.precision * 10 + (s[i++] - '0'), 1 << 20);
    }
  }
  if (i < s.size()) spec.type = s[i++];
  if (i != s.size()) fail("Invalid format specifier '" + s + "'");
  return spec;
}

std::string apply_format_spec(const Value& v, const std::string& text) {
  if (text.empty()) return v.str();
  Spec spec = parse_format_spec(text);
  if (v.is_string() || v.is_none() || v.is_sequence() || v.is_dict() || v.is_undefined()) {
    if (!v.is_string() && !text.empty()) {
      fail("unsupported format string passed to " + v.python_type_name() + ".__format__");
    }
    if (spec.type && spec.type != 's') fail(std::string("Unknown format code '") + spec.type + "' for object of type 'str'");
    spec.type = 's';
    std::string body = v.as_string();
    if (spec.precision >= 0) {
      body = get_slice(v, Value::none(), Value::integer(spec.precision), Value::none()).as_string();
    }
    return pad(body, spec, '<');
  }
  if (!v.is_number()) fail("unsupported format string passed to " + v.python_type_name() + ".__format__");
  char type = spec.type;
  std::string body;
  if (type == 0 && !v.is_float() && spec.precision < 0) {
    body = v.is_bool() && text.empty() ? v.str() : std::to_string(v.as_int());
    if (spec.sign == '+' && v.as_int() >= 0) body = "+" + body;
    if (spec.sign == ' ' && v.as_int() >= 0) body = " " + body;
  } else if (type == 0 && v.is_float() && spec.precision < 0) {
    body = python_float_repr(v.as_double());
    if (spec.sign == '+' && v.as_double() >= 0) body = "+" + body;
  } else if (type == 'd' || type == 'x' || type == 'X' || type == 'o' || type == 'b') {
    if (v.is_float()) fail(std::string("Unknown format code '") + type + "' for object of type 'float'");
    if (type == 'b') {
      uint64_t n = static_cast<uint64_t>(v.as_int() < 0 ? -v.as_int() : v.as_int());
      std::string bits;
      do {
        bits.insert(bits.begin(), static_cast<char>('0' + (n & 1)));
        n >>= 1;
      } while (n);
      body = (v.as_int() < 0 ? "-" : "") + std::string(spec.alternate ? "0b" : "") + bits;
    } else {
      body = c_format_number(v, type, -1, spec.alternate, spec.sign);
    }
  } else if (type == '%') {
    body = c_format_number(Value::floating(v.as_double() * 100), 'f', spec.precision, spec.alternate, spec.sign) + "%";
  } else {
    if (type == 0) type = 'g';
    if (std::string("eEfFgG").find(type) == std::string::npos) {
      fail(std::string("Unknown format code '") + type + "' for object of type '" + v.python_type_name() + "'");
    }
    body = c_format_number(Value::floating(v.as_double()), type, spec.precision, spec.alternate, spec.sign);
  }
  if (spec.zero && !spec.align) {
    spec.fill = '0';
    spec.align = '=';
  }
  return pad(body, spec, '>');
}

}  // namespace

std::string brace_format(const std::string& format, const CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    char c = format[i];
    if (c == '}') {
      if (i + 1 < format.size() && format[i + 1] == '}') {
        out += '}';
        ++i;
        continue;
      }
      fail("Single '}' encountered in format string");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < format.size() && format[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    size_t close = format.find('}', i);
    if (close == std::string::npos) fail("expected '}' before end of string");
    std::string field = format.substr(i + 1, close - i - 1);
    i = close;
    std::string spec, conversion;
    size_t colon = field.find(':');
    if (colon != std::string::npos) {
      spec = field.substr(colon + 1);
      field = field.substr(0, colon);
    }
    size_t bang = field.find('!');
    if (bang != std::string::npos) {
      conversion = field.substr(bang + 1);
      field = field.substr(0, bang);
    }
    size_t head_end = field.find_first_of(".[");
    std::string head = field.substr(0, head_end);
    Value v;
    if (head.empty() || std::isdigit(static_cast<unsigned char>(head[0]))) {
      size_t index = head.empty() ? auto_index++ : static_cast<size_t>(std::stoul(head.substr(0, 9)));
      if (index >= args.positional.size()) fail("Replacement index " + std::to_string(index) + " out of range for positional args tuple");
      v = args.positional[index];
    } else {
      const Value* named = args.find_named(head);
      if (!named) fail("'" + head + "'");
      v = *named;
    }
    // Attribute and index chains: {0.name}, {0[key]}.
    size_t p = head_end;
    while (p != std::string::npos && p < field.size()) {
      if (field[p] == '.') {
        size_t e = field.find_first_of(".[", p + 1);
        v = get_attribute(v, field.substr(p + 1, e == std::string::npos ? std::string::npos : e - p - 1));
        p = e;
      } else {
        size_t e = field.find(']', p);
        if (e == std::string::npos) fail("Missing ']' in format string");
        std::string key = field.substr(p + 1, e - p - 1);
        bool digits = !key.empty() && key.size() < 18 && key.find_first_not_of("0123456789") == std::string::npos;
        v = get_item(v, digits ? Value::integer(std::stoll(key)) : Value::string(key));
        p = e + 1;
      }
    }
    if (conversion == "r" || conversion == "a") {
      v = Value::string(v.repr());
    } else if (conversion == "s") {
      v = Value::string(v.str());
    } else if (!conversion.empty()) {
      fail("Unknown conversion specifier " + conversion);
    }
    out += apply_format_spec(v, spec);
    check_string_size(out.size());
  }
  return out;
}

}  // namespace aph::chat
