// The values a template computes with. They mirror the Python objects jinja2
// hands around (str, int, float, bool, None, list, tuple, dict, Undefined),
// because templates print them and the output must match Python's str/repr.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace aph::chat {

class Value;
using List = std::vector<Value>;

// Insertion-ordered like a Python dict; keys compare with Python equality
// (so 1, 1.0 and True are the same key). Chat data keeps dicts small, so a
// linear scan is cheaper than hashing Values.
struct Dict {
  std::vector<std::pair<Value, Value>> entries;
  const Value* find(const Value& key) const;
  void set(const Value& key, Value value);
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> named;
  const Value* find_named(const std::string& name) const;
};

struct Callable {
  std::string name;
  std::function<Value(const CallArgs&)> call;
};

// Objects with attributes that are neither dicts nor lists: namespace(),
// the loop variable, range objects.
class Object {
 public:
  virtual ~Object() = default;
  virtual std::string type_name() const = 0;
  virtual std::string repr() const = 0;
  // Returns an undefined Value when there is no such attribute.
  virtual Value get_attribute(const std::string& name) const;
  // Only namespace() accepts attribute assignment.
  virtual void set_attribute(const std::string& name, Value value);
  // Objects that iterate (range) return their items.
  virtual bool iterable() const { return false; }
  virtual List items() const;
  // Only the loop variable is callable (recursive loops).
  virtual Value call(const CallArgs& args);
  // "jinja2.utils.Namespace object", as jinja2's object_type_repr spells it.
  virtual std::string description() const { return type_name() + " object"; }
};

enum class Kind { Undefined, None, Bool, Int, Float, String, List, Tuple, Dict, Object, Callable };

class Value {
 public:
  Value() = default;  // undefined, unnamed
  static Value undefined(std::string message);
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value floating(double f);
  static Value string(std::string s);
  // A jinja2 Markup string (from |safe or |escape): concatenating a plain
  // string to it HTML-escapes that string, as markupsafe does.
  static Value markup(std::string s);
  static Value list(List items);
  static Value tuple(List items);
  static Value dict(Dict d);
  static Value object(std::shared_ptr<Object> o);
  static Value callable(std::string name, std::function<Value(const CallArgs&)> fn);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::Undefined; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_int() const { return kind_ == Kind::Int; }
  bool is_float() const { return kind_ == Kind::Float; }
  bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float || kind_ == Kind::Bool; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_markup() const { return markup_; }
  bool is_list() const { return kind_ == Kind::List; }
  bool is_tuple() const { return kind_ == Kind::Tuple; }
  bool is_sequence() const { return kind_ == Kind::List || kind_ == Kind::Tuple; }
  bool is_dict() const { return kind_ == Kind::Dict; }
  bool is_object() const { return kind_ == Kind::Object; }
  bool is_callable() const { return kind_ == Kind::Callable; }

  bool as_bool() const { return std::get<bool>(data_); }
  int64_t as_int() const;  // bool counts as int, like Python
  double as_double() const;
  const std::string& as_string() const { return *std::get<std::shared_ptr<std::string>>(data_); }
  // Lists are shared and mutable (list.pop is allowed in the sandbox).
  List& as_list() const { return *std::get<std::shared_ptr<List>>(data_); }
  const Dict& as_dict() const { return *std::get<std::shared_ptr<Dict>>(data_); }
  Object& as_object() const { return *std::get<std::shared_ptr<Object>>(data_); }
  const Callable& as_callable() const { return *std::get<std::shared_ptr<Callable>>(data_); }
  // The jinja2 UndefinedError message for using this undefined value.
  const std::string& undefined_message() const;

  bool truthy() const;
  // Python's str() and repr().
  std::string str() const;
  std::string repr() const;
  // "dict object", "list object"... as jinja2's object_type_repr spells it.
  std::string type_description() const;
  // Python's type(x).__name__.
  std::string python_type_name() const;
  bool same_object(const Value& other) const;

 private:
  Kind kind_ = Kind::Undefined;
  bool markup_ = false;
  std::variant<std::monostate, bool, int64_t, double, std::shared_ptr<std::string>,
               std::shared_ptr<List>, std::shared_ptr<Dict>, std::shared_ptr<Object>,
               std::shared_ptr<Callable>>
      data_;
};

// Python ==, including 1 == 1.0 == True and element-wise containers.
bool values_equal(const Value& a, const Value& b);
// Python <; throws aph::Error when the types do not order (like TypeError).
bool values_less(const Value& a, const Value& b);
// Items of anything Python can iterate: list/tuple items, dict keys, string
// characters, undefined (empty). Throws for others.
List iterate(const Value& v);
// Python's repr of a float ("1.0", "1e-05", "1e+16", "inf", "nan").
std::string python_float_repr(double d);
std::string python_string_repr(const std::string& s);

}  // namespace aph::chat
