#include "core/chat/value.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "core/chat/utf8.hpp"
#include "core/chat/runtime.hpp"

namespace aph::chat {

const Value* Dict::find(const Value& key) const {
  for (const auto& [k, v] : entries) {
    if (values_equal(k, key)) return &v;
  }
  return nullptr;
}

void Dict::set(const Value& key, Value value) {
  for (auto& [k, v] : entries) {
    if (values_equal(k, key)) {
      v = std::move(value);
      return;
    }
  }
  entries.emplace_back(key, std::move(value));
}

const Value* CallArgs::find_named(const std::string& name) const {
  for (const auto& [k, v] : named) {
    if (k == name) return &v;
  }
  return nullptr;
}

Value Object::get_attribute(const std::string& name) const {
  return Value::undefined("'" + description() + "' has no attribute '" + name + "'");
}

void Object::set_attribute(const std::string& name, Value value) {
  fail("cannot assign attribute on non-namespace object");
}

List Object::items() const { fail("'" + type_name() + "' object is not iterable"); }

Value Object::call(const CallArgs& args) { fail("'" + type_name() + "' object is not callable"); }

Value Value::undefined(std::string message) {
  Value v;
  v.data_ = std::make_shared<std::string>(std::move(message));
  return v;
}
Value Value::none() {
  Value v;
  v.kind_ = Kind::None;
  return v;
}
Value Value::boolean(bool b) {
  Value v;
  v.kind_ = Kind::Bool;
  v.data_ = b;
  return v;
}
Value Value::integer(int64_t i) {
  Value v;
  v.kind_ = Kind::Int;
  v.data_ = i;
  return v;
}
Value Value::floating(double f) {
  Value v;
  v.kind_ = Kind::Float;
  v.data_ = f;
  return v;
}
Value Value::string(std::string s) {
  Value v;
  v.kind_ = Kind::String;
  v.data_ = std::make_shared<std::string>(std::move(s));
  return v;
}
Value Value::markup(std::string s) {
  Value v = string(std::move(s));
  v.markup_ = true;
  return v;
}
Value Value::list(List items) {
  Value v;
  v.kind_ = Kind::List;
  v.data_ = std::make_shared<List>(std::move(items));
  return v;
}
Value Value::tuple(List items) {
  Value v;
  v.kind_ = Kind::Tuple;
  v.data_ = std::make_shared<List>(std::move(items));
  return v;
}
Value Value::dict(Dict d) {
  Value v;
  v.kind_ = Kind::Dict;
  v.data_ = std::make_shared<Dict>(std::move(d));
  return v;
}
Value Value::object(std::shared_ptr<Object> o) {
  Value v;
  v.kind_ = Kind::Object;
  v.data_ = std::move(o);
  return v;
}
Value Value::callable(std::string name, std::function<Value(const CallArgs&)> fn) {
  Value v;
  v.kind_ = Kind::Callable;
  v.data_ = std::make_shared<Callable>(Callable{std::move(name), std::move(fn)});
  return v;
}

int64_t Value::as_int() const {
  if (kind_ == Kind::Bool) return std::get<bool>(data_) ? 1 : 0;
  return std::get<int64_t>(data_);
}

double Value::as_double() const {
  if (kind_ == Kind::Float) return std::get<double>(data_);
  return static_cast<double>(as_int());
}

const std::string& Value::undefined_message() const {
  static const std::string unnamed = "undefined value";
  if (auto p = std::get_if<std::shared_ptr<std::string>>(&data_)) return **p;
  return unnamed;
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None:
      return false;
    case Kind::Bool:
      return as_bool();
    case Kind::Int:
      return as_int() != 0;
    case Kind::Float:
      return as_double() != 0.0;
    case Kind::String:
      return !as_string().empty();
    case Kind::List:
    case Kind::Tuple:
      return !as_list().empty();
    case Kind::Dict:
      return !as_dict().entries.empty();
    case Kind::Object:  // Python objects without __len__ or __bool__ are truthy
    case Kind::Callable:
      return true;
  }
  return false;
}

std::string python_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  std::string sign;
  if (sci[0] == '-') {
    sign = "-";
    sci.erase(0, 1);
  }
  size_t e = sci.find('e');
  std::string digits = sci.substr(0, e);
  if (digits.size() > 1) digits.erase(1, 1);  // drop the '.'
  int exponent = std::stoi(sci.substr(e + 1));
  // Python switches to exponent form when the point would sit outside (-4, 16].
  int point = exponent + 1;
  std::string out;
  if (point > -4 && point <= 16) {
    if (point <= 0) {
      out = "0." + std::string(-point, '0') + digits;
    } else if (static_cast<size_t>(point) >= digits.size()) {
      out = digits + std::string(point - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, point) + "." + digits.substr(point);
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char ebuf[16];
    std::snprintf(ebuf, sizeof(ebuf), "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    out += ebuf;
  }
  return sign + out;
}

std::string python_string_repr(const std::string& s) {
  bool has_single = s.find('\'') != std::string::npos;
  bool has_double = s.find('"') != std::string::npos;
  char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (char32_t cp : utf8::decode(s)) {
    char buf[16];
    if (cp == static_cast<char32_t>(quote) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp < 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0xAD) {
      std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned>(cp));
      out += buf;
    } else if (cp >= 0xDC80 && cp <= 0xDCFF) {
      std::snprintf(buf, sizeof(buf), "\\udc%02x", static_cast<unsigned>(cp - 0xDC00));
      out += buf;
    } else if ((cp >= 0x2000 && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202F) ||
               (cp >= 0x205F && cp <= 0x2064) || cp == 0xFEFF || cp == 0x3000) {
      std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(cp));
      out += buf;
    } else {
      utf8::append(out, cp);
    }
  }
  out += quote;
  return out;
}

std::string Value::str() const {
  switch (kind_) {
    case Kind::Undefined:
      return "";
    case Kind::String:
      return as_string();
    default:
      return repr();
  }
}

std::string Value::repr() const {
  switch (kind_) {
    case Kind::Undefined:
      return "Undefined";
    case Kind::None:
      return "None";
    case Kind::Bool:
      return as_bool() ? "True" : "False";
    case Kind::Int:
      return std::to_string(as_int());
    case Kind::Float:
      return python_float_repr(as_double());
    case Kind::String:
      return python_string_repr(as_string());
    case Kind::List:
    case Kind::Tuple: {
      const List& items = as_list();
      std::string out = kind_ == Kind::List ? "[" : "(";
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += ", ";
        out += items[i].repr();
      }
      if (kind_ == Kind::Tuple && items.size() == 1) out += ",";
      out += kind_ == Kind::List ? "]" : ")";
      return out;
    }
    case Kind::Dict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, v] : as_dict().entries) {
        if (!first) out += ", ";
        first = false;
        out += k.repr() + ": " + v.repr();
      }
      return out + "}";
    }
    case Kind::Object:
      return as_object().repr();
    case Kind::Callable:
      return "<built-in function " + as_callable().name + ">";
  }
  return "";
}

std::string Value::python_type_name() const {
  switch (kind_) {
    case Kind::Undefined:
      return "Undefined";
    case Kind::None:
      return "NoneType";
    case Kind::Bool:
      return "bool";
    case Kind::Int:
      return "int";
    case Kind::Float:
      return "float";
    case Kind::String:
      return "str";
    case Kind::List:
      return "list";
    case Kind::Tuple:
      return "tuple";
    case Kind::Dict:
      return "dict";
    case Kind::Object:
      return as_object().type_name();
    case Kind::Callable:
      return "function";
  }
  return "object";
}

std::string Value::type_description() const {
  if (kind_ == Kind::None) return "None";
  if (kind_ == Kind::Object) return as_object().description();
  return python_type_name() + " object";
}

bool Value::same_object(const Value& other) const {
  if (kind_ != other.kind_) return false;
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None:
      return true;
    case Kind::Bool:
    case Kind::Int:
    case Kind::Float:
      // CPython caches small ints and bools; equal scalars count as identical.
      return values_equal(*this, other);
    default:
      return data_ == other.data_;
  }
}

bool values_equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::Undefined:
    case Kind::None:
      return true;
    case Kind::String:
      return a.as_string() == b.as_string();
    case Kind::List:
    case Kind::Tuple: {
      const List& x = a.as_list();
      const List& y = b.as_list();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!values_equal(x[i], y[i])) return false;
      }
      return true;
    }
    case Kind::Dict: {
      const Dict& x = a.as_dict();
      const Dict& y = b.as_dict();
      if (x.entries.size() != y.entries.size()) return false;
      for (const auto& [k, v] : x.entries) {
        const Value* other = y.find(k);
        if (!other || !values_equal(v, *other)) return false;
      }
      return true;
    }
    default:
      return a.same_object(b);
  }
}

bool values_less(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() < b.as_double();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();
  if (a.kind() == b.kind() && a.is_sequence()) {
    const List& x = a.as_list();
    const List& y = b.as_list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!values_equal(x[i], y[i])) return values_less(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  fail("'<' not supported between instances of '" + a.python_type_name() +
                         "' and '" + b.python_type_name() + "'");
}

List iterate(const Value& v) {
  switch (v.kind()) {
    case Kind::Undefined:
      return {};
    case Kind::List:
    case Kind::Tuple:
      return v.as_list();
    case Kind::Dict: {
      List keys;
      for (const auto& [k, val] : v.as_dict().entries) keys.push_back(k);
      return keys;
    }
    case Kind::String: {
      List chars;
      const std::string& s = v.as_string();
      auto bounds = utf8::boundaries(s);
      for (size_t i = 0; i + 1 < bounds.size(); ++i) {
        chars.push_back(Value::string(s.substr(bounds[i], bounds[i + 1] - bounds[i])));
      }
      return chars;
    }
    case Kind::Object:
      if (v.as_object().iterable()) return v.as_object().items();
      break;
    default:
      break;
  }
  fail("'" + v.python_type_name() + "' object is not iterable");
}

}  // namespace aph::chat
