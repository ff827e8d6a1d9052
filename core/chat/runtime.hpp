// What the renderer and the builtins (filters, tests, methods, globals,
// operators) share: a position-less failure the renderer stamps with
// line:column, argument binding, and the environment's lookup rules.
#pragma once

#include <cstddef>
#include <ctime>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>

#include "core/chat/value.hpp"

namespace aph::chat {

// Thrown by builtins; the renderer turns it into aph::Error naming the
// line:column of the expression that failed.
class RuntimeFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
[[noreturn]] void fail(const std::string& message);
// Using an undefined value where jinja2 raises UndefinedError.
[[noreturn]] void fail_undefined(const Value& v);

// Any single string a template builds stays below this.
inline constexpr size_t kMaxStringBytes = 32u << 20;
void check_string_size(size_t bytes);

// Binds positional and keyword arguments to parameter names, Python style.
class BoundArgs {
 public:
  BoundArgs(const CallArgs& args, std::initializer_list<const char*> names, const std::string& function);
  bool has(size_t i) const { return slots_[i] != nullptr; }
  const Value& get(size_t i) const;  // undefined when not given
  Value get_or(size_t i, Value fallback) const { return has(i) ? *slots_[i] : fallback; }

 private:
  std::vector<const Value*> slots_;
};

// jinja2's Environment.getattr / getitem under ImmutableSandboxedEnvironment:
// attribute first then item (getattr), item first then attribute (getitem);
// methods that mutate a list or dict come back as an "unsafe" undefined.
Value get_attribute(const Value& object, const std::string& name);
Value get_item(const Value& object, const Value& key);
Value get_slice(const Value& object, const Value& start, const Value& stop, const Value& step);
Value call_value(const Value& callee, const CallArgs& args);

// Operators with Python semantics.
Value binary_op(const std::string& op, const Value& left, const Value& right);
Value unary_op(const std::string& op, const Value& operand);
bool compare_op(const std::string& op, const Value& left, const Value& right);
bool contains(const Value& container, const Value& item);

// Builtin tables. Return false / nullopt when the name is unknown.
bool has_filter(const std::string& name);
Value apply_filter(const std::string& name, const Value& value, const CallArgs& args);
bool has_test(const std::string& name);
bool apply_test(const std::string& name, const Value& value, const CallArgs& args);
// A bound method of a str/list/dict, or nullopt when the type has none by that name.
std::optional<Value> find_method(const Value& object, const std::string& name);

struct GlobalsOptions {
  std::optional<std::tm> fixed_now;  // strftime_now reads this instead of the clock
};
// range, dict, namespace, raise_exception, strftime_now, cycler, joiner.
Dict make_globals(const GlobalsOptions& options);

// Python formatting: "fmt" % args and "fmt".format(*args, **kwargs).
std::string percent_format(const std::string& format, const Value& args);
std::string brace_format(const std::string& format, const CallArgs& args);

// Python str helpers shared by filters and methods.
std::string py_strip(const std::string& s, const Value& chars, bool left, bool right);
std::string py_upper(const std::string& s);
std::string py_lower(const std::string& s);
std::string py_capitalize(const std::string& s);
std::string py_title(const std::string& s);  // str.title(), not jinja's title filter
bool py_is_cased(char32_t c);
List py_split(const std::string& s, const Value& sep, int64_t maxsplit, bool from_right);
List py_splitlines(const std::string& s, bool keepends);
// markupsafe.escape: & < > " ' as HTML entities.
std::string html_escape(const std::string& s);
std::string py_replace(const std::string& s, const std::string& old, const std::string& replacement, int64_t count);

}  // namespace aph::chat
