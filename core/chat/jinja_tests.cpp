// jinja2's tests: `x is defined`, `x is string`, `n is divisibleby 3`, ...
#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "core/chat/runtime.hpp"

namespace aph::chat {
namespace {

using TestFn = bool (*)(const Value& v, const CallArgs& args);

const Value& only_arg(const CallArgs& args, const char* test) {
  BoundArgs a(args, {"other"}, test);
  return a.get(0);
}

// str(value).islower() / .isupper(): needs at least one cased character.
bool is_lower_text(const Value& v) {
  return call_value(*find_method(Value::string(v.str()), "islower"), CallArgs{}).as_bool();
}
bool is_upper_text(const Value& v) {
  return call_value(*find_method(Value::string(v.str()), "isupper"), CallArgs{}).as_bool();
}

const std::unordered_map<std::string, TestFn>& tests() {
  static const std::unordered_map<std::string, TestFn> table = {
      {"defined", [](const Value& v, const CallArgs&) { return !v.is_undefined(); }},
      {"undefined", [](const Value& v, const CallArgs&) { return v.is_undefined(); }},
      {"none", [](const Value& v, const CallArgs&) { return v.is_none(); }},
      {"boolean", [](const Value& v, const CallArgs&) { return v.is_bool(); }},
      {"false", [](const Value& v, const CallArgs&) { return v.is_bool() && !v.as_bool(); }},
      {"true", [](const Value& v, const CallArgs&) { return v.is_bool() && v.as_bool(); }},
      {"integer", [](const Value& v, const CallArgs&) { return v.is_int(); }},
      {"float", [](const Value& v, const CallArgs&) { return v.is_float(); }},
      {"number", [](const Value& v, const CallArgs&) { return v.is_number(); }},
      {"string", [](const Value& v, const CallArgs&) { return v.is_string(); }},
      {"mapping", [](const Value& v, const CallArgs&) { return v.is_dict(); }},
      {"sequence",
       [](const Value& v, const CallArgs&) {
         return v.is_sequence() || v.is_string() || v.is_dict() || v.is_undefined();
       }},
      {"iterable",
       [](const Value& v, const CallArgs&) {
         return v.is_sequence() || v.is_string() || v.is_dict() || v.is_undefined() ||
                (v.is_object() && v.as_object().iterable());
       }},
      {"callable",
       [](const Value& v, const CallArgs&) {
         return v.is_callable() || (v.is_object() && v.as_object().type_name() == "LoopContext");
       }},
      {"odd",
       [](const Value& v, const CallArgs&) {
         if (!v.is_number() || v.is_float()) fail("not all arguments converted during string formatting");
         return (v.as_int() % 2) != 0;
       }},
      {"even",
       [](const Value& v, const CallArgs&) {
         if (!v.is_number() || v.is_float()) fail("not all arguments converted during string formatting");
         return (v.as_int() % 2) == 0;
       }},
      {"divisibleby",
       [](const Value& v, const CallArgs& args) {
         BoundArgs a(args, {"num"}, "divisibleby");
         const Value& n = a.get(0);
         Value rem = binary_op("%", v, n);
         return values_equal(rem, Value::integer(0));
       }},
      {"eq", [](const Value& v, const CallArgs& args) { return values_equal(v, only_arg(args, "eq")); }},
      {"ne", [](const Value& v, const CallArgs& args) { return !values_equal(v, only_arg(args, "ne")); }},
      {"lt", [](const Value& v, const CallArgs& args) { return compare_op("<", v, only_arg(args, "lt")); }},
      {"le", [](const Value& v, const CallArgs& args) { return compare_op("<=", v, only_arg(args, "le")); }},
      {"gt", [](const Value& v, const CallArgs& args) { return compare_op(">", v, only_arg(args, "gt")); }},
      {"ge", [](const Value& v, const CallArgs& args) { return compare_op(">=", v, only_arg(args, "ge")); }},
      {"in",
       [](const Value& v, const CallArgs& args) {
         BoundArgs a(args, {"seq"}, "in");
         return contains(a.get(0), v);
       }},
      {"sameas", [](const Value& v, const CallArgs& args) { return v.same_object(only_arg(args, "sameas")); }},
      {"lower", [](const Value& v, const CallArgs&) { return is_lower_text(v); }},
      {"upper", [](const Value& v, const CallArgs&) { return is_upper_text(v); }},
      {"escaped", [](const Value&, const CallArgs&) { return false; }},
      {"filter", [](const Value& v, const CallArgs&) { return v.is_string() && has_filter(v.as_string()); }},
      {"test", [](const Value& v, const CallArgs&) { return v.is_string() && has_test(v.as_string()); }},
  };
  return table;
}

const std::unordered_map<std::string, std::string>& aliases() {
  static const std::unordered_map<std::string, std::string> table = {
      {"equalto", "eq"}, {"==", "eq"}, {"!=", "ne"}, {"<", "lt"}, {"lessthan", "lt"}, {"<=", "le"},
      {">", "gt"},       {"greaterthan", "gt"},      {">=", "ge"}};
  return table;
}

const std::string& canonical(const std::string& name) {
  auto it = aliases().find(name);
  return it == aliases().end() ? name : it->second;
}

}  // namespace

bool has_test(const std::string& name) { return tests().count(canonical(name)) != 0; }

bool apply_test(const std::string& name, const Value& value, const CallArgs& args) {
  auto it = tests().find(canonical(name));
  if (it == tests().end()) fail("No test named '" + name + "'.");
  return it->second(value, args);
}

}  // namespace aph::chat
