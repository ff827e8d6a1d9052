// The two attribute-bearing objects templates meet: namespace() (the only
// value a template may mutate, by `{% set ns.x = ... %}`) and the `loop`
// variable of a for-loop.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "core/chat/value.hpp"

namespace aph::chat {

class NamespaceObject : public Object {
 public:
  std::string type_name() const override { return "Namespace"; }
  std::string description() const override { return "jinja2.utils.Namespace object"; }
  std::string repr() const override { return "<Namespace " + Value::dict(attributes).repr() + ">"; }
  Value get_attribute(const std::string& name) const override;
  void set_attribute(const std::string& name, Value value) override;
  // Drops every attribute so reference cycles (a namespace holding itself)
  // are broken when rendering ends.
  void clear() { attributes.entries.clear(); }

  Dict attributes;
};

class LoopObject : public Object, public std::enable_shared_from_this<LoopObject> {
 public:
  std::string type_name() const override { return "LoopContext"; }
  std::string description() const override { return "jinja2.runtime.LoopContext object"; }
  Value call(const CallArgs& args) override;
  std::string repr() const override;
  Value get_attribute(const std::string& name) const override;

  List items;
  size_t index0 = 0;
  int depth = 1;
  bool has_changed_value = false;
  Value last_changed_value;
  // Renders the loop body again over new items (recursive loops); empty
  // when the loop is not recursive or has finished.
  std::function<Value(const List&)> recurse;
};

// What select/map/selectattr/items/... return in jinja2: a one-shot iterator.
// Templates must pass it through |list before tojson or |length, exactly as
// with jinja2, so it is not a plain list here either.
class IteratorObject : public Object {
 public:
  IteratorObject(std::string type_name, List items) : type_name_(std::move(type_name)), items_(std::move(items)) {}
  std::string type_name() const override { return type_name_; }
  std::string repr() const override { return "<" + type_name_ + " object>"; }
  bool iterable() const override { return true; }
  // Python iterators are exhausted by the first pass.
  List items() const override { return std::exchange(items_, {}); }

 private:
  std::string type_name_;
  mutable List items_;
};

}  // namespace aph::chat
