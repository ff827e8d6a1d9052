// Python operator semantics and jinja2's sandboxed attribute/item lookup.
#include <cmath>
#include <limits>

#include "core/chat/runtime.hpp"
#include "core/chat/utf8.hpp"

namespace aph::chat {

void fail(const std::string& message) { throw RuntimeFailure(message); }

void fail_undefined(const Value& v) { fail(v.undefined_message()); }

void check_string_size(size_t bytes) {
  if (bytes > kMaxStringBytes) fail("string exceeds " + std::to_string(kMaxStringBytes) + " bytes");
}

BoundArgs::BoundArgs(const CallArgs& args, std::initializer_list<const char*> names, const std::string& function)
    : slots_(names.size(), nullptr) {
  if (args.positional.size() > names.size()) {
    fail(function + "() takes at most " + std::to_string(names.size()) + " argument(s) (" +
         std::to_string(args.positional.size()) + " given)");
  }
  for (size_t i = 0; i < args.positional.size(); ++i) slots_[i] = &args.positional[i];
  for (const auto& [key, value] : args.named) {
    size_t i = 0;
    for (const char* n : names) {
      if (key == n) break;
      ++i;
    }
    if (i == names.size()) fail(function + "() got an unexpected keyword argument '" + key + "'");
    if (slots_[i] != nullptr) fail(function + "() got multiple values for argument '" + key + "'");
    slots_[i] = &value;
  }
}

const Value& BoundArgs::get(size_t i) const {
  static const Value missing;
  return slots_[i] ? *slots_[i] : missing;
}

namespace {

// Methods the immutable sandbox refuses, per container type.
bool is_mutating_method(const Value& object, const std::string& name) {
  if (object.is_list()) {
    return name == "append" || name == "reverse" || name == "insert" || name == "sort" || name == "extend" ||
           name == "remove";
  }
  if (object.is_dict()) {
    return name == "clear" || name == "pop" || name == "popitem" || name == "setdefault" || name == "update";
  }
  return false;
}

Value unsafe(const Value& object, const std::string& name) {
  return Value::undefined("access to attribute '" + name + "' of '" + object.python_type_name() +
                          "' object is unsafe.");
}

Value missing_attribute(const Value& object, const std::string& name) {
  return Value::undefined("'" + object.type_description() + "' has no attribute '" + name + "'");
}

Value missing_element(const Value& object, const Value& key) {
  return Value::undefined(object.type_description() + " has no element " + key.repr());
}

// Python attribute lookup only (no item fallback).
std::optional<Value> python_getattr(const Value& object, const std::string& name) {
  if (is_mutating_method(object, name)) return unsafe(object, name);
  if (object.is_object()) {
    Value v = object.as_object().get_attribute(name);
    if (v.is_undefined()) return std::nullopt;
    return v;
  }
  return find_method(object, name);
}

int64_t normalize_index(int64_t i, size_t size) { return i < 0 ? i + static_cast<int64_t>(size) : i; }

}  // namespace

Value get_attribute(const Value& object, const std::string& name) {
  if (object.is_undefined()) fail_undefined(object);
  if (name.rfind("__", 0) == 0) return unsafe(object, name);
  if (auto v = python_getattr(object, name)) return *v;
  if (object.is_dict()) {
    if (const Value* v = object.as_dict().find(Value::string(name))) return *v;
  }
  return missing_attribute(object, name);
}

Value get_item(const Value& object, const Value& key) {
  if (object.is_undefined()) fail_undefined(object);
  if (object.is_dict()) {
    if (key.is_list() || key.is_dict()) fail("unhashable type: '" + key.python_type_name() + "'");
    if (const Value* v = object.as_dict().find(key)) return *v;
  } else if ((object.is_sequence() || object.is_string()) && (key.is_int() || key.is_bool())) {
    if (object.is_string()) {
      const std::string& s = object.as_string();
      auto bounds = utf8::boundaries(s);
      int64_t i = normalize_index(key.as_int(), bounds.size() - 1);
      if (i >= 0 && static_cast<size_t>(i) + 1 < bounds.size()) {
        return Value::string(s.substr(bounds[i], bounds[i + 1] - bounds[i]));
      }
    } else {
      const List& items = object.as_list();
      int64_t i = normalize_index(key.as_int(), items.size());
      if (i >= 0 && static_cast<size_t>(i) < items.size()) return items[i];
    }
  }
  if (key.is_string()) {
    if (key.as_string().rfind("__", 0) == 0) return unsafe(object, key.as_string());
    if (auto v = python_getattr(object, key.as_string())) return *v;
    return missing_attribute(object, key.as_string());
  }
  return missing_element(object, key);
}

Value get_slice(const Value& object, const Value& start_v, const Value& stop_v, const Value& step_v) {
  if (object.is_undefined()) fail_undefined(object);
  auto as_index = [](const Value& v, const char* what) -> std::optional<int64_t> {
    if (v.is_none()) return std::nullopt;
    if (!v.is_int() && !v.is_bool()) fail("slice indices must be integers or None");
    return v.as_int();
  };
  auto start = as_index(start_v, "start");
  auto stop = as_index(stop_v, "stop");
  int64_t step = as_index(step_v, "step").value_or(1);
  if (step == 0) fail("slice step cannot be zero");

  std::vector<size_t> bounds;
  size_t size;
  if (object.is_string()) {
    bounds = utf8::boundaries(object.as_string());
    size = bounds.size() - 1;
  } else if (object.is_sequence()) {
    size = object.as_list().size();
  } else {
    fail("'" + object.python_type_name() + "' object is not subscriptable");
  }
  const auto n = static_cast<int64_t>(size);
  // CPython's PySlice_AdjustIndices.
  auto adjust = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) {
      x += n;
      if (x < 0) x = step < 0 ? -1 : 0;
    } else if (x >= n) {
      x = step < 0 ? n - 1 : n;
    }
    return x;
  };
  int64_t lo = adjust(start, step < 0 ? n - 1 : 0);
  int64_t hi = adjust(stop, step < 0 ? -1 : n);
  std::vector<int64_t> picks;
  for (int64_t i = lo; step > 0 ? i < hi : i > hi; i += step) picks.push_back(i);
  if (object.is_string()) {
    const std::string& s = object.as_string();
    std::string out;
    for (int64_t i : picks) out += s.substr(bounds[i], bounds[i + 1] - bounds[i]);
    return Value::string(std::move(out));
  }
  List out;
  for (int64_t i : picks) out.push_back(object.as_list()[i]);
  return object.is_list() ? Value::list(std::move(out)) : Value::tuple(std::move(out));
}

Value call_value(const Value& callee, const CallArgs& args) {
  if (callee.is_callable()) return callee.as_callable().call(args);
  if (callee.is_undefined()) fail_undefined(callee);
  if (callee.is_object()) return callee.as_object().call(args);
  fail("'" + callee.python_type_name() + "' object is not callable");
}

namespace {

[[noreturn]] void unsupported(const std::string& op, const Value& l, const Value& r) {
  fail("unsupported operand type(s) for " + op + ": '" + l.python_type_name() + "' and '" +
       r.python_type_name() + "'");
}

// Arguments are evaluated in unspecified order, so the overflow builtins run
// here, before the result is read.
template <typename Op>
int64_t checked(Op op, int64_t a, int64_t b) {
  int64_t result = 0;
  if (op(a, b, &result)) fail("integer overflow");
  return result;
}
constexpr auto add_op = [](int64_t a, int64_t b, int64_t* r) { return __builtin_add_overflow(a, b, r); };
constexpr auto sub_op = [](int64_t a, int64_t b, int64_t* r) { return __builtin_sub_overflow(a, b, r); };
constexpr auto mul_op = [](int64_t a, int64_t b, int64_t* r) { return __builtin_mul_overflow(a, b, r); };

Value repeat(const Value& seq, int64_t times) {
  if (times < 0) times = 0;
  if (seq.is_string()) {
    const std::string& s = seq.as_string();
    if (!s.empty() && static_cast<uint64_t>(times) > kMaxStringBytes / s.size()) check_string_size(kMaxStringBytes + 1);
    std::string out;
    for (int64_t i = 0; i < times; ++i) out += s;
    return Value::string(std::move(out));
  }
  const List& items = seq.as_list();
  if (!items.empty() && static_cast<uint64_t>(times) > (1u << 20) / items.size()) fail("list repetition too large");
  List out;
  for (int64_t i = 0; i < times; ++i) out.insert(out.end(), items.begin(), items.end());
  return seq.is_list() ? Value::list(std::move(out)) : Value::tuple(std::move(out));
}

double float_floor_mod(double a, double b) {
  double m = std::fmod(a, b);
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

Value power(const Value& l, const Value& r) {
  if (l.is_float() || r.is_float() || r.as_int() < 0) {
    double result = std::pow(l.as_double(), r.as_double());
    if (l.as_double() == 0 && r.as_double() < 0) fail("0.0 cannot be raised to a negative power");
    if (std::isinf(result) && !std::isinf(l.as_double())) fail("(34, 'Numerical result out of range')");
    return Value::floating(result);
  }
  int64_t base = l.as_int();
  int64_t exp = r.as_int();
  int64_t result = 1;
  while (exp > 0) {
    if (exp & 1) result = checked(mul_op, result, base);
    exp >>= 1;
    if (exp > 0) base = checked(mul_op, base, base);
  }
  return Value::integer(result);
}

}  // namespace

Value binary_op(const std::string& op, const Value& l, const Value& r) {
  if (op == "~") {
    std::string s = l.str();
    std::string rs = r.str();
    check_string_size(s.size() + rs.size());
    return Value::string(s + rs);
  }
  if (l.is_undefined()) fail_undefined(l);
  if (r.is_undefined()) fail_undefined(r);
  const bool numbers = l.is_number() && r.is_number();
  const bool ints = numbers && !l.is_float() && !r.is_float();
  if (op == "+") {
    if (ints) return Value::integer(checked(add_op, l.as_int(), r.as_int()));
    if (numbers) return Value::floating(l.as_double() + r.as_double());
    if (l.is_string() && r.is_string()) {
      check_string_size(l.as_string().size() + r.as_string().size());
      if (l.is_markup() || r.is_markup()) {
        const std::string left = l.is_markup() ? l.as_string() : html_escape(l.as_string());
        const std::string right = r.is_markup() ? r.as_string() : html_escape(r.as_string());
        check_string_size(left.size() + right.size());
        return Value::markup(left + right);
      }
      return Value::string(l.as_string() + r.as_string());
    }
    if (l.kind() == r.kind() && l.is_sequence()) {
      List items = l.as_list();
      items.insert(items.end(), r.as_list().begin(), r.as_list().end());
      return l.is_list() ? Value::list(std::move(items)) : Value::tuple(std::move(items));
    }
    if (l.is_string() || l.is_list() || l.is_tuple()) {
      fail("can only concatenate " + l.python_type_name() + " (not \"" + r.python_type_name() + "\") to " +
           l.python_type_name());
    }
    unsupported("+", l, r);
  }
  if (op == "-") {
    if (ints) return Value::integer(checked(sub_op, l.as_int(), r.as_int()));
    if (numbers) return Value::floating(l.as_double() - r.as_double());
    unsupported("-", l, r);
  }
  if (op == "*") {
    if (ints) return Value::integer(checked(mul_op, l.as_int(), r.as_int()));
    if (numbers) return Value::floating(l.as_double() * r.as_double());
    if ((l.is_string() || l.is_sequence()) && (r.is_int() || r.is_bool())) return repeat(l, r.as_int());
    if ((r.is_string() || r.is_sequence()) && (l.is_int() || l.is_bool())) return repeat(r, l.as_int());
    if ((l.is_string() || l.is_sequence()) && (r.is_string() || r.is_sequence() || r.is_float())) {
      fail("can't multiply sequence by non-int of type '" + r.python_type_name() + "'");
    }
    unsupported("*", l, r);
  }
  if (op == "/") {
    if (!numbers) unsupported("/", l, r);
    if (r.as_double() == 0) fail(ints ? "division by zero" : "float division by zero");
    return Value::floating(l.as_double() / r.as_double());
  }
  if (op == "//") {
    if (!numbers) unsupported("//", l, r);
    if (ints) {
      if (r.as_int() == 0) fail("integer division or modulo by zero");
      int64_t a = l.as_int(), b = r.as_int();
      if (a == std::numeric_limits<int64_t>::min() && b == -1) fail("integer overflow");
      int64_t q = a / b;
      if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
      return Value::integer(q);
    }
    if (r.as_double() == 0) fail("float floor division by zero");
    return Value::floating(std::floor(l.as_double() / r.as_double()));
  }
  if (op == "%") {
    if (l.is_string()) return Value::string(percent_format(l.as_string(), r));
    if (!numbers) unsupported("%", l, r);
    if (ints) {
      if (r.as_int() == 0) fail("integer modulo by zero");
      int64_t a = l.as_int(), b = r.as_int();
      if (b == -1) return Value::integer(0);
      int64_t m = a % b;
      if (m != 0 && ((m < 0) != (b < 0))) m += b;
      return Value::integer(m);
    }
    if (r.as_double() == 0) fail("float modulo");
    return Value::floating(float_floor_mod(l.as_double(), r.as_double()));
  }
  if (op == "**") {
    if (!numbers) unsupported("** or pow()", l, r);
    return power(l, r);
  }
  fail("unknown operator " + op);
}

Value unary_op(const std::string& op, const Value& v) {
  if (v.is_undefined()) fail_undefined(v);
  if (!v.is_number()) fail("bad operand type for unary " + op + ": '" + v.python_type_name() + "'");
  if (op == "+") return v.is_bool() ? Value::integer(v.as_int()) : v;
  if (v.is_float()) return Value::floating(-v.as_double());
  if (v.as_int() == std::numeric_limits<int64_t>::min()) fail("integer overflow");
  return Value::integer(-v.as_int());
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Kind::String:
      if (!item.is_string()) {
        fail("'in <string>' requires string as left operand, not " + item.python_type_name());
      }
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Kind::List:
    case Kind::Tuple:
      for (const Value& v : container.as_list()) {
        if (values_equal(v, item)) return true;
      }
      return false;
    case Kind::Dict:
      return container.as_dict().find(item) != nullptr;
    case Kind::Undefined:
      return false;
    default:
      if (container.is_object() && container.as_object().iterable()) {
        for (const Value& v : container.as_object().items()) {
          if (values_equal(v, item)) return true;
        }
        return false;
      }
      fail("argument of type '" + container.python_type_name() + "' is not iterable");
  }
}

bool compare_op(const std::string& op, const Value& l, const Value& r) {
  if (op == "==") return values_equal(l, r);
  if (op == "!=") return !values_equal(l, r);
  if (op == "in") return contains(r, l);
  if (op == "not in") return !contains(r, l);
  if (l.is_undefined()) fail_undefined(l);
  if (r.is_undefined()) fail_undefined(r);
  auto ordered = [&](const char* sym) {
    bool comparable = (l.is_number() && r.is_number()) || (l.is_string() && r.is_string()) ||
                      (l.kind() == r.kind() && l.is_sequence());
    if (!comparable) {
      fail(std::string("'") + sym + "' not supported between instances of '" + l.python_type_name() +
           "' and '" + r.python_type_name() + "'");
    }
  };
  if (op == "<") {
    ordered("<");
    return values_less(l, r);
  }
  if (op == ">") {
    ordered(">");
    return values_less(r, l);
  }
  if (op == "<=") {
    ordered("<=");
    return !values_less(r, l);
  }
  if (op == ">=") {
    ordered(">=");
    return !values_less(l, r);
  }
  fail("unknown comparison " + op);
}

}  // namespace aph::chat
