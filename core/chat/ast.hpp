// The parsed template: expression and statement nodes, each remembering where
// it came from so runtime errors can name line:column.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/chat/lexer.hpp"
#include "core/chat/value.hpp"

namespace aph::chat {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprKind {
  Literal,    // value
  Name,       // name
  ListLit,    // items
  TupleLit,   // items
  DictLit,    // items as key,value pairs (even = key)
  GetAttr,    // object, name
  GetItem,    // object, index
  Slice,      // object, slice_parts (start, stop, step; null when absent)
  Call,       // callee, args, kwargs
  Filter,     // object (null inside a filter block), name, args, kwargs
  Test,       // object, name, args, negated
  Unary,      // op ("-", "+", "not"), operand
  Binary,     // op, left, right  (+ - * / // % ** ~ in, not in)
  And,        // left, right
  Or,         // left, right
  Compare,    // operands, compare_ops (chained like Python)
  Conditional,  // then_expr, condition, else_expr (may be null)
};

struct Expr {
  ExprKind kind;
  SourcePos pos;
  Value value;                      // Literal
  std::string name;                 // Name, GetAttr, Filter, Test, Unary/Binary operator
  ExprPtr object;                   // GetAttr/GetItem/Slice/Call callee/Filter/Test/Unary operand
  ExprPtr left, right;              // Binary, And, Or; GetItem index in `right`
  std::vector<ExprPtr> items;       // literals, call/filter/test positional args, compare operands
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> compare_ops;
  ExprPtr slice_parts[3];
  ExprPtr condition, then_expr, else_expr;
  bool negated = false;
  ExprPtr dyn_args, dyn_kwargs;  // *args / **kwargs in calls
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class StmtKind {
  Text,         // text
  Print,        // expr
  If,           // branches (condition, body), else_body
  For,          // target, iterable, filter, body, else_body, recursive
  Set,          // target, expr
  SetBlock,     // target, body, filters (applied to the captured text)
  Macro,        // name, params, defaults, body
  CallBlock,    // expr (the call), params (caller's), body
  FilterBlock,  // filters, body
  With,         // targets/values, body
  Break,
  Continue,
};

// An assignment target: a name, `ns.attr`, or a tuple of names.
struct Target {
  std::vector<std::string> names;  // one name, or several for tuple unpacking
  std::string attribute;           // set for `ns.attr`
  bool is_tuple = false;
};

struct Stmt {
  StmtKind kind;
  SourcePos pos;
  std::string text;
  ExprPtr expr;
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body, else_body;
  Target target;
  ExprPtr filter;
  bool recursive = false;
  std::vector<ExprPtr> filters;  // Filter exprs with a null object, applied in order
  std::string name;
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;  // aligned with the last params
  std::vector<std::pair<std::string, ExprPtr>> with_values;
};

struct ParsedTemplate {
  Body body;
};

}  // namespace aph::chat
