#include "core/chat/objects.hpp"

#include "core/chat/runtime.hpp"

namespace aph::chat {

Value NamespaceObject::get_attribute(const std::string& name) const {
  if (const Value* v = attributes.find(Value::string(name))) return *v;
  return Object::get_attribute(name);
}

void NamespaceObject::set_attribute(const std::string& name, Value value) {
  attributes.set(Value::string(name), std::move(value));
}

std::string LoopObject::repr() const {
  return "<LoopContext " + std::to_string(index0 + 1) + "/" + std::to_string(items.size()) + ">";
}

Value LoopObject::get_attribute(const std::string& name) const {
  const auto length = static_cast<int64_t>(items.size());
  const auto i = static_cast<int64_t>(index0);
  if (name == "index") return Value::integer(i + 1);
  if (name == "index0") return Value::integer(i);
  if (name == "revindex") return Value::integer(length - i);
  if (name == "revindex0") return Value::integer(length - i - 1);
  if (name == "first") return Value::boolean(i == 0);
  if (name == "last") return Value::boolean(i + 1 == length);
  if (name == "length") return Value::integer(length);
  if (name == "depth") return Value::integer(depth);
  if (name == "depth0") return Value::integer(depth - 1);
  if (name == "previtem") {
    return i > 0 ? items[index0 - 1] : Value::undefined("there is no previous item");
  }
  if (name == "nextitem") {
    return i + 1 < length ? items[index0 + 1] : Value::undefined("there is no next item");
  }
  if (name == "cycle") {
    size_t at = index0;
    return Value::callable("cycle", [at](const CallArgs& args) {
      if (args.positional.empty()) fail("no items for cycling given");
      return args.positional[at % args.positional.size()];
    });
  }
  if (name == "changed") {
    // The callable keeps the loop alive: it records the last value seen.
    auto self = std::const_pointer_cast<LoopObject>(shared_from_this());
    return Value::callable("changed", [self](const CallArgs& args) {
      Value current = Value::list(args.positional);
      bool changed = !self->has_changed_value || !values_equal(current, self->last_changed_value);
      self->has_changed_value = true;
      self->last_changed_value = current;
      return Value::boolean(changed);
    });
  }
  return Object::get_attribute(name);
}

Value LoopObject::call(const CallArgs& args) {
  if (!recurse) fail("the loop variable can only be called inside a recursive loop");
  if (args.positional.size() != 1 || !args.named.empty()) fail("loop() takes exactly one argument");
  return recurse(iterate(args.positional[0]));
}

}  // namespace aph::chat
