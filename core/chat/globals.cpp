// Functions a template can call by name: jinja2's range/dict/joiner and the
// two HF adds, raise_exception and strftime_now. (namespace() is installed by
// the renderer, which tracks the objects it creates.)
#include <chrono>
#include <ctime>

#include "core/chat/runtime.hpp"

namespace aph::chat {
namespace {

// The sandbox refuses ranges longer than this (jinja2's MAX_RANGE).
constexpr int64_t kMaxRange = 100000;

Value range(const CallArgs& args) {
  if (!args.named.empty()) fail("range() takes no keyword arguments");
  const auto& p = args.positional;
  if (p.empty() || p.size() > 3) fail("range expected at most 3 arguments, got " + std::to_string(p.size()));
  for (const Value& v : p) {
    if (v.is_undefined()) fail_undefined(v);
    if (!v.is_int() && !v.is_bool()) {
      fail("'" + v.python_type_name() + "' object cannot be interpreted as an integer");
    }
  }
  int64_t start = p.size() == 1 ? 0 : p[0].as_int();
  int64_t stop = p.size() == 1 ? p[0].as_int() : p[1].as_int();
  int64_t step = p.size() == 3 ? p[2].as_int() : 1;
  if (step == 0) fail("range() arg 3 must not be zero");
  // Count without overflowing for extreme bounds.
  long double count = step > 0 ? (static_cast<long double>(stop) - start) / step
                               : (static_cast<long double>(start) - stop) / -step;
  if (count > kMaxRange) {
    fail("Range too big. The sandbox blocks ranges larger than MAX_RANGE (" + std::to_string(kMaxRange) + ").");
  }
  List items;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) items.push_back(Value::integer(i));
  return Value::list(std::move(items));
}

Value make_dict(const CallArgs& args) {
  Dict d;
  if (args.positional.size() > 1) fail("dict expected at most 1 argument, got " + std::to_string(args.positional.size()));
  if (!args.positional.empty()) {
    const Value& src = args.positional[0];
    if (src.is_dict()) {
      d = src.as_dict();
    } else {
      for (const Value& pair : iterate(src)) {
        List kv = iterate(pair);
        if (kv.size() != 2) {
          fail("dictionary update sequence element has length " + std::to_string(kv.size()) + "; 2 is required");
        }
        d.set(kv[0], kv[1]);
      }
    }
  }
  for (const auto& [k, v] : args.named) d.set(Value::string(k), v);
  return Value::dict(std::move(d));
}

Value joiner(const CallArgs& args) {
  BoundArgs a(args, {"sep"}, "joiner");
  std::string sep = a.has(0) ? a.get(0).str() : ", ";
  auto used = std::make_shared<bool>(false);
  return Value::callable("joiner", [sep, used](const CallArgs&) {
    if (!*used) {
      *used = true;
      return Value::string("");
    }
    return Value::string(sep);
  });
}

}  // namespace

Dict make_globals(const GlobalsOptions& options) {
  Dict g;
  g.set(Value::string("range"), Value::callable("range", range));
  g.set(Value::string("dict"), Value::callable("dict", make_dict));
  g.set(Value::string("joiner"), Value::callable("joiner", joiner));
  g.set(Value::string("raise_exception"), Value::callable("raise_exception", [](const CallArgs& args) -> Value {
          BoundArgs a(args, {"message"}, "raise_exception");
          fail(a.get(0).str());
        }));
  auto fixed = options.fixed_now;
  g.set(Value::string("strftime_now"), Value::callable("strftime_now", [fixed](const CallArgs& args) {
          BoundArgs a(args, {"format"}, "strftime_now");
          if (!a.get(0).is_string()) fail("strftime() argument 1 must be str, not " + a.get(0).python_type_name());
          std::tm tm{};
          if (fixed) {
            tm = *fixed;
          } else {
            std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
            localtime_r(&t, &tm);
          }
          const std::string& fmt = a.get(0).as_string();
          if (fmt.empty()) return Value::string("");
          std::string buf(fmt.size() * 8 + 256, '\0');
          size_t n = std::strftime(buf.data(), buf.size(), fmt.c_str(), &tm);
          if (n == 0) fail("strftime format produced no output or is too long");
          buf.resize(n);
          return Value::string(buf);
        }));
  return g;
}

}  // namespace aph::chat
