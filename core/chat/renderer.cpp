#include "core/chat/renderer.hpp"

#include "core/chat/objects.hpp"
#include "core/common/error.hpp"

namespace aph::chat {

const Value* Scope::find(const std::string& name) const {
  for (const Scope* s = this; s != nullptr; s = s->parent.get()) {
    auto it = s->vars.find(name);
    if (it != s->vars.end()) return &it->second;
  }
  return nullptr;
}

struct Renderer::DepthGuard {
  DepthGuard(int& depth, int limit, const char* what) : depth_(depth) {
    if (++depth_ > limit) {
      --depth_;
      throw invalid_argument(std::string("chat template error: ") + what + " exceeds the limit of " +
                             std::to_string(limit));
    }
  }
  ~DepthGuard() { --depth_; }
  int& depth_;
};

namespace {

std::shared_ptr<Scope> child_of(const std::shared_ptr<Scope>& parent) {
  auto s = std::make_shared<Scope>();
  s->parent = parent;
  return s;
}

}  // namespace

std::string Renderer::render(std::shared_ptr<Scope> globals) {
  // namespace() objects are tracked so cycles through them are broken at the end.
  auto namespaces = std::make_shared<std::vector<std::shared_ptr<NamespaceObject>>>();
  globals->vars["namespace"] = Value::callable("namespace", [namespaces](const CallArgs& args) {
    auto ns = std::make_shared<NamespaceObject>();
    if (args.positional.size() > 1) fail("namespace() takes at most one positional argument");
    if (!args.positional.empty()) {
      const Value& init = args.positional[0];
      if (!init.is_dict()) fail("namespace() positional argument must be a dict");
      for (const auto& [k, v] : init.as_dict().entries) ns->attributes.set(k, v);
    }
    for (const auto& [k, v] : args.named) ns->attributes.set(Value::string(k), v);
    namespaces->push_back(ns);
    return Value::object(ns);
  });
  std::string out;
  struct Cleanup {
    std::shared_ptr<std::vector<std::shared_ptr<NamespaceObject>>> namespaces;
    std::vector<std::shared_ptr<Scope>>* retained;
    std::shared_ptr<Scope> globals;
    ~Cleanup() {
      for (auto& ns : *namespaces) ns->clear();
      for (auto& s : *retained) s->vars.clear();
      retained->clear();
      globals->vars.clear();
    }
  } cleanup{namespaces, &retained_scopes_, globals};
  exec_body(template_.body, globals, out);
  return out;
}

void Renderer::step() {
  if (++steps_ > limits_.max_steps) {
    throw invalid_argument("chat template error: rendering exceeded " + std::to_string(limits_.max_steps) +
                           " steps");
  }
}

void Renderer::append(std::string& out, const std::string& text) {
  produced_ += text.size();
  if (produced_ > limits_.max_output_bytes || out.size() + text.size() > kMaxStringBytes) {
    throw invalid_argument("chat template error: rendered output exceeds " +
                           std::to_string(limits_.max_output_bytes) + " bytes");
  }
  out += text;
}

std::string Renderer::capture(const Body& body, const std::shared_ptr<Scope>& scope) {
  std::string buffer;
  exec_body(body, scope, buffer);
  return buffer;
}

Renderer::Flow Renderer::exec_body(const Body& body, const std::shared_ptr<Scope>& scope, std::string& out) {
  DepthGuard guard(eval_depth_, limits_.max_eval_depth, "template nesting");
  for (const auto& stmt : body) {
    Flow flow = exec(*stmt, scope, out);
    if (flow != Flow::Normal) return flow;
  }
  return Flow::Normal;
}

Renderer::Flow Renderer::exec(const Stmt& s, const std::shared_ptr<Scope>& scope, std::string& out) {
  step();
  switch (s.kind) {
    case StmtKind::Text:
      append(out, s.text);
      return Flow::Normal;
    case StmtKind::Print:
      append(out, eval(*s.expr, scope).str());
      return Flow::Normal;
    case StmtKind::If:
      for (const auto& [condition, body] : s.branches) {
        if (eval(*condition, scope).truthy()) return exec_body(body, scope, out);
      }
      return exec_body(s.else_body, scope, out);
    case StmtKind::For:
      return exec_for(s, scope, out);
    case StmtKind::Set:
    case StmtKind::SetBlock:
      exec_set(s, scope, out);
      return Flow::Normal;
    case StmtKind::Macro:
      scope->vars[s.name] = make_macro(s, scope, Value());
      return Flow::Normal;
    case StmtKind::CallBlock: {
      // The block becomes `caller`, passed to the called macro by keyword.
      Value caller = make_macro(s, scope, Value());
      const Expr& call = *s.expr;
      Value callee = eval(*call.object, scope);
      CallArgs args = eval_args(call, scope);
      args.named.emplace_back("caller", caller);
      try {
        append(out, call_value(callee, args).str());
      } catch (const RuntimeFailure& f) {
        throw_template_error(s.pos, f.what());
      }
      return Flow::Normal;
    }
    case StmtKind::FilterBlock: {
      Value text = Value::string(capture(s.body, scope));
      append(out, apply_filters(s.filters, text, scope).str());
      return Flow::Normal;
    }
    case StmtKind::With: {
      auto inner = child_of(scope);
      for (const auto& [name, expr] : s.with_values) inner->vars[name] = eval(*expr, scope);
      return exec_body(s.body, inner, out);
    }
    case StmtKind::Break:
      return Flow::Break;
    case StmtKind::Continue:
      return Flow::Continue;
  }
  return Flow::Normal;
}

Value Renderer::apply_filters(const std::vector<ExprPtr>& filters, Value v, const std::shared_ptr<Scope>& scope) {
  for (const auto& f : filters) {
    CallArgs args = eval_args(*f, scope);
    try {
      if (!has_filter(f->name)) fail("No filter named '" + f->name + "'.");
      v = apply_filter(f->name, v, args);
    } catch (const RuntimeFailure& e) {
      throw_template_error(f->pos, e.what());
    }
  }
  return v;
}

void Renderer::exec_set(const Stmt& s, const std::shared_ptr<Scope>& scope, std::string& out) {
  Value v;
  if (s.kind == StmtKind::Set) {
    v = eval(*s.expr, scope);
  } else {
    v = apply_filters(s.filters, Value::string(capture(s.body, scope)), scope);
  }
  assign(s.target, v, *scope, s.pos);
}

void Renderer::assign(const Target& t, const Value& v, Scope& scope, SourcePos pos) {
  try {
    if (!t.attribute.empty()) {
      const Value* ns = scope.find(t.names[0]);
      if (ns == nullptr || !ns->is_object() || ns->as_object().type_name() != "Namespace") {
        fail("cannot assign attribute on non-namespace object");
      }
      ns->as_object().set_attribute(t.attribute, v);
      return;
    }
    if (!t.is_tuple) {
      scope.vars[t.names[0]] = v;
      return;
    }
    List items = iterate(v);
    if (items.size() < t.names.size()) {
      fail("not enough values to unpack (expected " + std::to_string(t.names.size()) + ", got " +
           std::to_string(items.size()) + ")");
    }
    if (items.size() > t.names.size()) {
      fail("too many values to unpack (expected " + std::to_string(t.names.size()) + ")");
    }
    for (size_t i = 0; i < items.size(); ++i) scope.vars[t.names[i]] = items[i];
  } catch (const RuntimeFailure& f) {
    throw_template_error(pos, f.what());
  }
}

Renderer::Flow Renderer::exec_for(const Stmt& s, const std::shared_ptr<Scope>& scope, std::string& out) {
  Value iterable = eval(*s.expr, scope);
  List items;
  try {
    items = iterate(iterable);
  } catch (const RuntimeFailure& f) {
    throw_template_error(s.expr->pos, f.what());
  }
  exec_for_items(s, items, scope, out, 1);
  return Flow::Normal;
}

void Renderer::exec_for_items(const Stmt& s, const List& all_items, const std::shared_ptr<Scope>& scope,
                              std::string& out, int depth) {
  DepthGuard calls(call_depth_, limits_.max_call_depth, "recursion depth");
  List items;
  if (s.filter) {
    // `for x in y if cond`: filtered before the loop so loop.length counts survivors.
    for (const Value& item : all_items) {
      step();
      auto probe = child_of(scope);
      assign(s.target, item, *probe, s.pos);
      if (eval(*s.filter, probe).truthy()) items.push_back(item);
    }
  } else {
    items = all_items;
  }
  if (items.empty()) {
    exec_body(s.else_body, scope, out);
    return;
  }
  auto loop = std::make_shared<LoopObject>();
  loop->items = items;
  loop->depth = depth;
  if (s.recursive) {
    std::weak_ptr<Scope> home = retain(scope);
    const Stmt* stmt = &s;
    loop->recurse = [this, stmt, home, depth](const List& inner) {
      std::string buffer;
      exec_for_items(*stmt, inner, lock(home), buffer, depth + 1);
      return Value::string(buffer);
    };
  }
  Value loop_value = Value::object(loop);
  for (size_t i = 0; i < items.size(); ++i) {
    step();
    loop->index0 = i;
    auto iteration = child_of(scope);
    assign(s.target, items[i], *iteration, s.pos);
    iteration->vars["loop"] = loop_value;
    if (exec_body(s.body, iteration, out) == Flow::Break) break;
  }
  loop->recurse = nullptr;
}

std::weak_ptr<Scope> Renderer::retain(const std::shared_ptr<Scope>& scope) {
  if (retained_scopes_.empty() || retained_scopes_.back() != scope) retained_scopes_.push_back(scope);
  return scope;
}

std::shared_ptr<Scope> Renderer::lock(const std::weak_ptr<Scope>& scope) {
  auto s = scope.lock();
  if (!s) fail("a macro outlived the template it was defined in");
  return s;
}

Value Renderer::make_macro(const Stmt& s, const std::shared_ptr<Scope>& scope, Value) {
  // The defining scope is owned by the renderer, not the closure, so a macro
  // stored in its own scope does not form a reference cycle.
  std::weak_ptr<Scope> home = retain(scope);
  const Stmt* stmt = &s;
  std::string name = s.kind == StmtKind::Macro ? s.name : "caller";
  return Value::callable(name, [this, stmt, home, name](const CallArgs& args) {
    DepthGuard calls(call_depth_, limits_.max_call_depth, "macro recursion depth");
    auto local = child_of(lock(home));
    const size_t n = stmt->params.size();
    const size_t first_default = n - stmt->defaults.size();
    List varargs;
    for (size_t i = 0; i < args.positional.size(); ++i) {
      if (i < n) {
        local->vars[stmt->params[i]] = args.positional[i];
      } else {
        varargs.push_back(args.positional[i]);
      }
    }
    Dict kwargs;
    for (const auto& [key, value] : args.named) {
      bool is_param = false;
      for (size_t i = 0; i < n; ++i) {
        if (stmt->params[i] == key) {
          if (i < args.positional.size()) fail("macro '" + name + "' got multiple values for argument '" + key + "'");
          local->vars[key] = value;
          is_param = true;
        }
      }
      if (!is_param && key == "caller") {
        local->vars["caller"] = value;
      } else if (!is_param) {
        kwargs.set(Value::string(key), value);
      }
    }
    for (size_t i = 0; i < n; ++i) {
      if (local->vars.count(stmt->params[i])) continue;
      if (i >= first_default) {
        local->vars[stmt->params[i]] = eval(*stmt->defaults[i - first_default], local);
      } else {
        local->vars[stmt->params[i]] = Value::undefined("parameter '" + stmt->params[i] + "' was not provided");
      }
    }
    local->vars["varargs"] = Value::tuple(std::move(varargs));
    local->vars["kwargs"] = Value::dict(std::move(kwargs));
    std::string buffer;
    exec_body(stmt->body, local, buffer);
    return Value::string(std::move(buffer));
  });
}

CallArgs Renderer::eval_args(const Expr& e, const std::shared_ptr<Scope>& scope) {
  CallArgs args;
  for (const auto& item : e.items) args.positional.push_back(eval(*item, scope));
  for (const auto& [key, expr] : e.kwargs) args.named.emplace_back(key, eval(*expr, scope));
  if (e.dyn_args) {
    Value extra = eval(*e.dyn_args, scope);
    try {
      for (auto& v : iterate(extra)) args.positional.push_back(v);
    } catch (const RuntimeFailure& f) {
      throw_template_error(e.dyn_args->pos, f.what());
    }
  }
  if (e.dyn_kwargs) {
    Value extra = eval(*e.dyn_kwargs, scope);
    if (!extra.is_dict()) throw_template_error(e.dyn_kwargs->pos, "argument after ** must be a mapping");
    for (const auto& [k, v] : extra.as_dict().entries) {
      if (!k.is_string()) throw_template_error(e.dyn_kwargs->pos, "keywords must be strings");
      args.named.emplace_back(k.as_string(), v);
    }
  }
  return args;
}

Value Renderer::eval(const Expr& e, const std::shared_ptr<Scope>& scope) {
  DepthGuard guard(eval_depth_, limits_.max_eval_depth, "expression nesting");
  step();
  try {
    Value v = eval_node(e, scope);
    // Big strings cost time to build and copy: one step per KiB keeps
    // `'x' * 30000000` in a loop inside the same budget as the loop itself.
    if (v.is_string() && v.as_string().size() >= 1024) {
      steps_ += v.as_string().size() >> 10;
      step();
    }
    return v;
  } catch (const RuntimeFailure& f) {
    throw_template_error(e.pos, f.what());
  }
}

Value Renderer::eval_node(const Expr& e, const std::shared_ptr<Scope>& scope) {
  switch (e.kind) {
    case ExprKind::Literal:
      return e.value;
    case ExprKind::Name: {
      if (const Value* v = scope->find(e.name)) return *v;
      return Value::undefined("'" + e.name + "' is undefined");
    }
    case ExprKind::ListLit:
    case ExprKind::TupleLit: {
      List items;
      for (const auto& item : e.items) items.push_back(eval(*item, scope));
      return e.kind == ExprKind::ListLit ? Value::list(std::move(items)) : Value::tuple(std::move(items));
    }
    case ExprKind::DictLit: {
      Dict d;
      for (size_t i = 0; i + 1 < e.items.size(); i += 2) {
        Value key = eval(*e.items[i], scope);
        if (key.is_list() || key.is_dict()) fail("unhashable type: '" + key.python_type_name() + "'");
        d.set(key, eval(*e.items[i + 1], scope));
      }
      return Value::dict(std::move(d));
    }
    case ExprKind::GetAttr:
      return get_attribute(eval(*e.object, scope), e.name);
    case ExprKind::GetItem: {
      Value object = eval(*e.object, scope);
      return get_item(object, eval(*e.right, scope));
    }
    case ExprKind::Slice: {
      Value object = eval(*e.object, scope);
      Value parts[3];
      for (int i = 0; i < 3; ++i) parts[i] = e.slice_parts[i] ? eval(*e.slice_parts[i], scope) : Value::none();
      return get_slice(object, parts[0], parts[1], parts[2]);
    }
    case ExprKind::Call: {
      Value callee = eval(*e.object, scope);
      CallArgs args = eval_args(e, scope);
      return call_value(callee, args);
    }
    case ExprKind::Filter: {
      Value v = eval(*e.object, scope);
      CallArgs args = eval_args(e, scope);
      if (!has_filter(e.name)) fail("No filter named '" + e.name + "'.");
      return apply_filter(e.name, v, args);
    }
    case ExprKind::Test: {
      Value v = eval(*e.object, scope);
      CallArgs args = eval_args(e, scope);
      if (!has_test(e.name)) fail("No test named '" + e.name + "'.");
      return Value::boolean(apply_test(e.name, v, args) != e.negated);
    }
    case ExprKind::Unary: {
      Value v = eval(*e.object, scope);
      if (e.name == "not") return Value::boolean(!v.truthy());
      return unary_op(e.name, v);
    }
    case ExprKind::Binary: {
      Value left = eval(*e.left, scope);
      Value right = eval(*e.right, scope);
      return binary_op(e.name, left, right);
    }
    case ExprKind::And: {
      Value left = eval(*e.left, scope);
      return left.truthy() ? eval(*e.right, scope) : left;
    }
    case ExprKind::Or: {
      Value left = eval(*e.left, scope);
      return left.truthy() ? left : eval(*e.right, scope);
    }
    case ExprKind::Compare: {
      Value left = eval(*e.items[0], scope);
      for (size_t i = 0; i < e.compare_ops.size(); ++i) {
        Value right = eval(*e.items[i + 1], scope);
        if (!compare_op(e.compare_ops[i], left, right)) return Value::boolean(false);
        left = std::move(right);
      }
      return Value::boolean(true);
    }
    case ExprKind::Conditional:
      if (eval(*e.condition, scope).truthy()) return eval(*e.then_expr, scope);
      if (e.else_expr) return eval(*e.else_expr, scope);
      return Value::undefined("the inline if-expression on line " + std::to_string(e.pos.line) +
                              " evaluated to false and no else section was defined.");
  }
  return Value();
}

}  // namespace aph::chat
