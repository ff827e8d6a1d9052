// Executes a parsed template: statements write to an output buffer,
// expressions evaluate to Values. Scoping follows jinja2 (a for-loop
// iteration and a macro call get their own scope; if-blocks do not).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "core/chat/ast.hpp"
#include "core/chat/runtime.hpp"

namespace aph::chat {

struct RenderLimits {
  size_t max_output_bytes = 64u << 20;  // total text produced, captures included
  uint64_t max_steps = 5'000'000;       // statements + expressions evaluated
  int max_call_depth = 100;             // macro / recursive-loop nesting
  int max_eval_depth = 600;             // C++ recursion of the evaluator
};

struct Scope {
  std::unordered_map<std::string, Value> vars;
  std::shared_ptr<Scope> parent;
  const Value* find(const std::string& name) const;
};

class Renderer {
 public:
  Renderer(const ParsedTemplate& tmpl, RenderLimits limits) : template_(tmpl), limits_(limits) {}
  // `globals` is the root scope (builtins plus the caller's variables).
  std::string render(std::shared_ptr<Scope> globals);

 private:
  enum class Flow { Normal, Break, Continue };
  struct DepthGuard;

  Flow exec_body(const Body& body, const std::shared_ptr<Scope>& scope, std::string& out);
  Flow exec(const Stmt& s, const std::shared_ptr<Scope>& scope, std::string& out);
  Flow exec_for(const Stmt& s, const std::shared_ptr<Scope>& scope, std::string& out);
  void exec_for_items(const Stmt& s, const List& items, const std::shared_ptr<Scope>& scope,
                      std::string& out, int depth);
  void exec_set(const Stmt& s, const std::shared_ptr<Scope>& scope, std::string& out);
  Value make_macro(const Stmt& s, const std::shared_ptr<Scope>& scope, Value caller);
  void assign(const Target& t, const Value& v, Scope& scope, SourcePos pos);
  std::string capture(const Body& body, const std::shared_ptr<Scope>& scope);
  Value apply_filters(const std::vector<ExprPtr>& filters, Value v, const std::shared_ptr<Scope>& scope);

  // Keeps a scope alive until rendering ends; closures hold it weakly so a
  // macro stored in its own scope is not a reference cycle.
  std::weak_ptr<Scope> retain(const std::shared_ptr<Scope>& scope);
  static std::shared_ptr<Scope> lock(const std::weak_ptr<Scope>& scope);

  Value eval(const Expr& e, const std::shared_ptr<Scope>& scope);
  Value eval_node(const Expr& e, const std::shared_ptr<Scope>& scope);
  CallArgs eval_args(const Expr& e, const std::shared_ptr<Scope>& scope);
  void append(std::string& out, const std::string& text);
  void step();

  const ParsedTemplate& template_;
  RenderLimits limits_;
  uint64_t steps_ = 0;
  size_t produced_ = 0;
  int call_depth_ = 0;
  int eval_depth_ = 0;
  std::vector<std::shared_ptr<Scope>> retained_scopes_;
};

}  // namespace aph::chat
