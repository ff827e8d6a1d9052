#include "core/chat/parser.hpp"

#include <cerrno>
#include <cstdlib>
#include <initializer_list>

#include "core/common/error.hpp"

namespace aph::chat {
namespace {

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  ParsedTemplate run() {
    ParsedTemplate out;
    std::string end_tag;
    out.body = parse_body({}, &end_tag);
    return out;
  }

 private:
  // Guards recursion: every recursive production takes one.
  // Left-nested chains (a + b + c, x|f|g, a.b.c) grow the tree without
  // recursing in the parser; each link counts toward the depth limit too.
  struct ChainCounter {
    explicit ChainCounter(Parser& p) : parser(p) {}
    void step() {
      ++added;
      if (++parser.depth_ > kMaxParseDepth) {
        throw_template_error(parser.current().pos, "expression is too long or nests too deeply (limit " +
                                                       std::to_string(kMaxParseDepth) + ")");
      }
    }
    ~ChainCounter() { parser.depth_ -= added; }
    Parser& parser;
    int added = 0;
  };

  struct DepthGuard {
    explicit DepthGuard(Parser& p) : parser(p) {
      if (++parser.depth_ > kMaxParseDepth) {
        throw_template_error(parser.current().pos, "template nests too deeply (limit " +
                                                       std::to_string(kMaxParseDepth) + ")");
      }
    }
    ~DepthGuard() { --parser.depth_; }
    Parser& parser;
  };

  const Token& current() const { return tokens_[index_]; }
  const Token& peek(size_t ahead = 1) const {
    return tokens_[std::min(index_ + ahead, tokens_.size() - 1)];
  }
  const Token& advance() {
    const Token& t = tokens_[index_];
    if (index_ + 1 < tokens_.size()) ++index_;
    return t;
  }
  bool is_op(const char* op) const { return current().type == TokenType::Operator && current().value == op; }
  bool is_name(const char* name) const { return current().type == TokenType::Name && current().value == name; }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    advance();
    return true;
  }
  bool skip_name(const char* name) {
    if (!is_name(name)) return false;
    advance();
    return true;
  }
  static std::string describe(const Token& t) {
    switch (t.type) {
      case TokenType::End: return "end of template";
      case TokenType::BlockEnd: return "end of statement block";
      case TokenType::VarEnd: return "end of print statement";
      case TokenType::BlockBegin: return "begin of statement block";
      case TokenType::VarBegin: return "begin of print statement";
      case TokenType::Text: return "template data";
      case TokenType::String: return "string";
      default: return "'" + t.value + "'";
    }
  }
  [[noreturn]] void fail_unexpected(const std::string& expected) const {
    throw_template_error(current().pos, "expected " + expected + ", got " + describe(current()));
  }
  void expect_op(const char* op) {
    if (!skip_op(op)) fail_unexpected(std::string("'") + op + "'");
  }
  std::string expect_name() {
    if (current().type != TokenType::Name) fail_unexpected("a name");
    return advance().value;
  }
  void expect_block_end() {
    if (current().type != TokenType::BlockEnd) fail_unexpected("end of statement block");
    advance();
  }

  ExprPtr make(ExprKind kind, SourcePos pos) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->pos = pos;
    return e;
  }

  // ---- statements ----

  // Parses until a block tag whose name is in `end_names`; leaves that name in
  // *end_tag with the tokens positioned after the name.
  Body parse_body(std::initializer_list<const char*> end_names, std::string* end_tag) {
    DepthGuard guard(*this);
    Body body;
    while (true) {
      const Token& t = current();
      if (t.type == TokenType::End) {
        if (end_names.size() == 0) return body;
        std::string names;
        for (const char* n : end_names) names += std::string(names.empty() ? "" : " or ") + "'" + n + "'";
        throw_template_error(t.pos, "unexpected end of template, expected " + names);
      }
      if (t.type == TokenType::Text) {
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::Text;
        s->pos = t.pos;
        s->text = t.value;
        body.push_back(std::move(s));
        advance();
      } else if (t.type == TokenType::VarBegin) {
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::Print;
        s->pos = t.pos;
        advance();
        s->expr = parse_tuple(true);
        if (current().type != TokenType::VarEnd) fail_unexpected("end of print statement");
        advance();
        body.push_back(std::move(s));
      } else if (t.type == TokenType::BlockBegin) {
        advance();
        if (current().type != TokenType::Name) fail_unexpected("a statement name");
        for (const char* n : end_names) {
          if (current().value == n) {
            *end_tag = advance().value;
            return body;
          }
        }
        body.push_back(parse_statement());
      } else {
        fail_unexpected("template data or a tag");
      }
    }
  }

  StmtPtr parse_statement() {
    const Token& t = current();
    const std::string name = t.value;
    auto s = std::make_unique<Stmt>();
    s->pos = t.pos;
    advance();
    if (name == "if") {
      s->kind = StmtKind::If;
      parse_if(*s);
    } else if (name == "for") {
      s->kind = StmtKind::For;
      parse_for(*s);
    } else if (name == "set") {
      parse_set(*s);
    } else if (name == "macro") {
      s->kind = StmtKind::Macro;
      s->name = expect_name();
      parse_signature(*s);
      expect_block_end();
      std::string end;
      s->body = parse_body({"endmacro"}, &end);
      expect_block_end();
    } else if (name == "call") {
      s->kind = StmtKind::CallBlock;
      if (is_op("(")) parse_signature(*s);
      s->expr = parse_expression(true);
      if (s->expr->kind != ExprKind::Call) throw_template_error(s->pos, "expected call");
      expect_block_end();
      std::string end;
      s->body = parse_body({"endcall"}, &end);
      expect_block_end();
    } else if (name == "filter") {
      s->kind = StmtKind::FilterBlock;
      parse_filter_chain(s->filters);
      expect_block_end();
      std::string end;
      s->body = parse_body({"endfilter"}, &end);
      expect_block_end();
    } else if (name == "with") {
      s->kind = StmtKind::With;
      while (current().type != TokenType::BlockEnd) {
        if (!s->with_values.empty()) expect_op(",");
        std::string var = expect_name();
        expect_op("=");
        s->with_values.emplace_back(var, parse_expression(true));
      }
      expect_block_end();
      std::string end;
      s->body = parse_body({"endwith"}, &end);
      expect_block_end();
    } else if (name == "generation") {
      // HF's AssistantTracker tag only marks spans; rendering is unchanged.
      s->kind = StmtKind::With;
      expect_block_end();
      std::string end;
      s->body = parse_body({"endgeneration"}, &end);
      expect_block_end();
    } else if (name == "break" || name == "continue") {
      if (loop_depth_ == 0) throw_template_error(s->pos, "'" + name + "' outside of a loop");
      s->kind = name == "break" ? StmtKind::Break : StmtKind::Continue;
      expect_block_end();
    } else {
      throw_template_error(s->pos, "encountered unknown tag '" + name + "'");
    }
    return s;
  }

  void parse_if(Stmt& s) {
    while (true) {
      ExprPtr cond = parse_tuple(false);
      expect_block_end();
      std::string end;
      Body body = parse_body({"elif", "else", "endif"}, &end);
      s.branches.emplace_back(std::move(cond), std::move(body));
      if (end == "elif") continue;
      if (end == "else") {
        expect_block_end();
        s.else_body = parse_body({"endif"}, &end);
      }
      expect_block_end();
      return;
    }
  }

  void parse_for(Stmt& s) {
    s.target = parse_target(false);
    if (!skip_name("in")) fail_unexpected("'in'");
    s.expr = parse_tuple(false, /*stop_at_recursive=*/true);
    if (skip_name("if")) s.filter = parse_expression(true);
    if (skip_name("recursive")) s.recursive = true;
    expect_block_end();
    std::string end;
    ++loop_depth_;
    s.body = parse_body({"else", "endfor"}, &end);
    --loop_depth_;
    if (end == "else") {
      expect_block_end();
      s.else_body = parse_body({"endfor"}, &end);
    }
    expect_block_end();
  }

  void parse_set(Stmt& s) {
    s.target = parse_target(true);
    if (skip_op("=")) {
      s.kind = StmtKind::Set;
      s.expr = parse_tuple(true);
      expect_block_end();
      return;
    }
    s.kind = StmtKind::SetBlock;
    if (skip_op("|")) parse_filter_chain(s.filters);
    expect_block_end();
    std::string end;
    s.body = parse_body({"endset"}, &end);
    expect_block_end();
  }

  Target parse_target(bool allow_attribute) {
    Target target;
    bool parenthesized = skip_op("(");
    target.names.push_back(expect_name());
    if (allow_attribute && !parenthesized && is_op(".")) {
      advance();
      target.attribute = expect_name();
      return target;
    }
    while (skip_op(",")) {
      target.is_tuple = true;
      if (current().type != TokenType::Name || is_name("in")) break;
      target.names.push_back(expect_name());
    }
    if (parenthesized) expect_op(")");
    return target;
  }

  void parse_signature(Stmt& s) {
    expect_op("(");
    while (!is_op(")")) {
      if (!s.params.empty()) expect_op(",");
      if (is_op(")")) break;
      s.params.push_back(expect_name());
      if (skip_op("=")) {
        s.defaults.push_back(parse_expression(true));
      } else if (!s.defaults.empty()) {
        throw_template_error(current().pos, "non-default argument follows default argument");
      }
    }
    advance();
  }

  void parse_filter_chain(std::vector<ExprPtr>& filters) {
    bool first = true;
    while (first || is_op("|")) {
      if (!first) advance();
      first = false;
      auto f = make(ExprKind::Filter, current().pos);
      f->name = expect_name();
      while (skip_op(".")) f->name += "." + expect_name();
      if (is_op("(")) parse_call_args(*f);
      filters.push_back(std::move(f));
    }
  }

  // ---- expressions ----

  // A comma-separated list becomes a tuple, as jinja2 does for `{{ a, b }}`.
  ExprPtr parse_tuple(bool with_condexpr, bool stop_at_recursive = false) {
    SourcePos pos = current().pos;
    std::vector<ExprPtr> items;
    bool saw_comma = false;
    while (true) {
      if (!items.empty()) {
        if (!skip_op(",")) break;
        saw_comma = true;
      }
      if (is_tuple_end(stop_at_recursive)) break;
      items.push_back(with_condexpr ? parse_expression(true) : parse_or());
    }
    if (!saw_comma) {
      if (items.empty()) fail_unexpected("an expression");
      return std::move(items[0]);
    }
    auto t = make(ExprKind::TupleLit, pos);
    t->items = std::move(items);
    return t;
  }

  bool is_tuple_end(bool stop_at_recursive) const {
    const Token& t = current();
    if (t.type == TokenType::VarEnd || t.type == TokenType::BlockEnd || t.type == TokenType::End) return true;
    if (t.type == TokenType::Operator && t.value == ")") return true;
    if (t.type == TokenType::Name && (t.value == "in" || t.value == "if" || (stop_at_recursive && t.value == "recursive"))) {
      return true;
    }
    return false;
  }

  ExprPtr parse_expression(bool with_condexpr) {
    DepthGuard guard(*this);
    return with_condexpr ? parse_condexpr() : parse_or();
  }

  ExprPtr parse_condexpr() {
    ExprPtr expr = parse_or();
    ChainCounter chain(*this);
    while (is_name("if")) {
      chain.step();
      auto c = make(ExprKind::Conditional, current().pos);
      advance();
      c->condition = parse_or();
      if (skip_name("else")) c->else_expr = parse_condexpr();
      c->then_expr = std::move(expr);
      expr = std::move(c);
    }
    return expr;
  }

  ExprPtr binary(ExprKind kind, std::string op, ExprPtr left, ExprPtr right, SourcePos pos) {
    auto e = make(kind, pos);
    e->name = std::move(op);
    e->left = std::move(left);
    e->right = std::move(right);
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    ChainCounter chain(*this);
    while (is_name("or")) {
      chain.step();
      SourcePos pos = advance().pos;
      left = binary(ExprKind::Or, "or", std::move(left), parse_and(), pos);
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    ChainCounter chain(*this);
    while (is_name("and")) {
      chain.step();
      SourcePos pos = advance().pos;
      left = binary(ExprKind::And, "and", std::move(left), parse_not(), pos);
    }
    return left;
  }

  ExprPtr parse_not() {
    DepthGuard guard(*this);
    if (is_name("not")) {
      auto e = make(ExprKind::Unary, advance().pos);
      e->name = "not";
      e->object = parse_not();
      return e;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    SourcePos pos = current().pos;
    ExprPtr first = parse_math1();
    std::vector<std::string> ops;
    std::vector<ExprPtr> operands;
    while (true) {
      if (current().type == TokenType::Operator &&
          (is_op("==") || is_op("!=") || is_op("<") || is_op(">") || is_op("<=") || is_op(">="))) {
        ops.push_back(advance().value);
      } else if (is_name("in")) {
        advance();
        ops.push_back("in");
      } else if (is_name("not") && peek().type == TokenType::Name && peek().value == "in") {
        advance();
        advance();
        ops.push_back("not in");
      } else {
        break;
      }
      operands.push_back(parse_math1());
    }
    if (ops.empty()) return first;
    auto c = make(ExprKind::Compare, pos);
    c->items.push_back(std::move(first));
    for (auto& o : operands) c->items.push_back(std::move(o));
    c->compare_ops = std::move(ops);
    return c;
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    ChainCounter chain(*this);
    while (is_op("+") || is_op("-")) {
      chain.step();
      const Token& t = advance();
      std::string op = t.value;
      left = binary(ExprKind::Binary, op, std::move(left), parse_concat(), t.pos);
    }
    return left;
  }

  ExprPtr parse_concat() {
    ExprPtr left = parse_math2();
    ChainCounter chain(*this);
    while (is_op("~")) {
      chain.step();
      SourcePos pos = advance().pos;
      left = binary(ExprKind::Binary, "~", std::move(left), parse_math2(), pos);
    }
    return left;
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    ChainCounter chain(*this);
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      chain.step();
      const Token& t = advance();
      std::string op = t.value;
      left = binary(ExprKind::Binary, op, std::move(left), parse_pow(), t.pos);
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    ChainCounter chain(*this);
    while (is_op("**")) {
      chain.step();
      SourcePos pos = advance().pos;
      left = binary(ExprKind::Binary, "**", std::move(left), parse_unary(true), pos);
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(*this);
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
      auto e = make(ExprKind::Unary, current().pos);
      e->name = advance().value;
      e->object = parse_unary(false);
      node = std::move(e);
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr parse_primary() {
    const Token& t = current();
    SourcePos pos = t.pos;
    if (t.type == TokenType::Name) {
      advance();
      if (t.value == "true" || t.value == "True" || t.value == "false" || t.value == "False") {
        auto e = make(ExprKind::Literal, pos);
        e->value = Value::boolean(t.value == "true" || t.value == "True");
        return e;
      }
      if (t.value == "none" || t.value == "None") {
        auto e = make(ExprKind::Literal, pos);
        e->value = Value::none();
        return e;
      }
      auto e = make(ExprKind::Name, pos);
      e->name = t.value;
      return e;
    }
    if (t.type == TokenType::String) {
      std::string s;
      while (current().type == TokenType::String) s += advance().value;
      auto e = make(ExprKind::Literal, pos);
      e->value = Value::string(std::move(s));
      return e;
    }
    if (t.type == TokenType::Integer) {
      advance();
      errno = 0;
      long long v = std::strtoll(t.value.c_str(), nullptr, 10);
      if (errno == ERANGE) throw_template_error(pos, "integer literal too large");
      auto e = make(ExprKind::Literal, pos);
      e->value = Value::integer(v);
      return e;
    }
    if (t.type == TokenType::Float) {
      advance();
      auto e = make(ExprKind::Literal, pos);
      e->value = Value::floating(std::strtod(t.value.c_str(), nullptr));
      return e;
    }
    if (is_op("(")) {
      advance();
      if (skip_op(")")) {
        auto e = make(ExprKind::TupleLit, pos);
        return e;
      }
      ExprPtr inner = parse_tuple(true);
      expect_op(")");
      return inner;
    }
    if (is_op("[")) {
      advance();
      auto e = make(ExprKind::ListLit, pos);
      while (!is_op("]")) {
        if (!e->items.empty()) expect_op(",");
        if (is_op("]")) break;
        e->items.push_back(parse_expression(true));
      }
      advance();
      return e;
    }
    if (is_op("{")) {
      advance();
      auto e = make(ExprKind::DictLit, pos);
      while (!is_op("}")) {
        if (!e->items.empty()) expect_op(",");
        if (is_op("}")) break;
        e->items.push_back(parse_expression(true));
        expect_op(":");
        e->items.push_back(parse_expression(true));
      }
      advance();
      return e;
    }
    fail_unexpected("an expression");
  }

  ExprPtr parse_postfix(ExprPtr node) {
    ChainCounter chain(*this);
    while (true) {
      chain.step();
      if (is_op(".")) {
        SourcePos pos = advance().pos;
        if (current().type == TokenType::Integer) {
          auto e = make(ExprKind::GetItem, pos);
          e->object = std::move(node);
          auto idx = make(ExprKind::Literal, current().pos);
          idx->value = Value::integer(std::strtoll(advance().value.c_str(), nullptr, 10));
          e->right = std::move(idx);
          node = std::move(e);
        } else {
          auto e = make(ExprKind::GetAttr, pos);
          e->object = std::move(node);
          e->name = expect_name();
          node = std::move(e);
        }
      } else if (is_op("[")) {
        node = parse_subscript(std::move(node));
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr node) {
    SourcePos pos = advance().pos;  // '['
    DepthGuard guard(*this);
    ExprPtr parts[3];
    bool is_slice = false;
    int part = 0;
    std::vector<ExprPtr> tuple_items;
    while (true) {
      if (is_op(":")) {
        advance();
        is_slice = true;
        if (++part > 2) throw_template_error(current().pos, "too many ':' in slice");
        continue;
      }
      if (is_op("]")) break;
      if (is_op(",") && !is_slice) {
        // `x[, a]` and `x[a,, b]` have an empty element: an error, not a null node.
        if (!parts[0]) fail_unexpected("an index before ','");
        advance();
        tuple_items.push_back(std::move(parts[0]));
        continue;
      }
      if (parts[part]) fail_unexpected("']'");
      parts[part] = parse_expression(true);
    }
    advance();
    if (is_slice && !tuple_items.empty()) throw_template_error(pos, "a slice inside a tuple index is not supported");
    if (is_slice) {
      auto e = make(ExprKind::Slice, pos);
      e->object = std::move(node);
      for (int i = 0; i < 3; ++i) e->slice_parts[i] = std::move(parts[i]);
      return e;
    }
    auto e = make(ExprKind::GetItem, pos);
    e->object = std::move(node);
    if (!tuple_items.empty()) {
      auto t = make(ExprKind::TupleLit, pos);
      t->items = std::move(tuple_items);
      if (parts[0]) t->items.push_back(std::move(parts[0]));
      e->right = std::move(t);
    } else {
      if (!parts[0]) throw_template_error(pos, "expected an index");
      e->right = std::move(parts[0]);
    }
    return e;
  }

  ExprPtr parse_call(ExprPtr callee) {
    auto e = make(ExprKind::Call, current().pos);
    e->object = std::move(callee);
    parse_call_args(*e);
    return e;
  }

  void parse_call_args(Expr& e) {
    DepthGuard guard(*this);
    expect_op("(");
    bool first = true;
    while (!is_op(")")) {
      if (!first) {
        expect_op(",");
        if (is_op(")")) break;
      }
      first = false;
      if (is_op("*")) {
        advance();
        e.dyn_args = parse_expression(true);
      } else if (is_op("**")) {
        advance();
        e.dyn_kwargs = parse_expression(true);
      } else if (current().type == TokenType::Name && peek().type == TokenType::Operator && peek().value == "=") {
        std::string key = advance().value;
        advance();
        e.kwargs.emplace_back(key, parse_expression(true));
      } else {
        if (!e.kwargs.empty()) throw_template_error(current().pos, "positional argument follows keyword argument");
        e.items.push_back(parse_expression(true));
      }
    }
    advance();
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    ChainCounter chain(*this);
    while (true) {
      chain.step();
      if (is_op("|")) {
        auto f = make(ExprKind::Filter, advance().pos);
        f->name = expect_name();
        while (skip_op(".")) f->name += "." + expect_name();
        if (is_op("(")) parse_call_args(*f);
        f->object = std::move(node);
        node = std::move(f);
      } else if (is_name("is")) {
        node = parse_test(std::move(node));
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_test(ExprPtr node) {
    auto t = make(ExprKind::Test, advance().pos);  // 'is'
    if (skip_name("not")) t->negated = true;
    t->name = expect_name();
    while (skip_op(".")) t->name += "." + expect_name();
    if (is_op("(")) {
      parse_call_args(*t);
    } else {
      const Token& c = current();
      bool starts_argument = c.type == TokenType::Name || c.type == TokenType::String || c.type == TokenType::Integer ||
                             c.type == TokenType::Float || is_op("(") || is_op("[") || is_op("{");
      if (starts_argument && !is_name("else") && !is_name("or") && !is_name("and")) {
        if (is_name("is")) throw_template_error(c.pos, "you cannot chain multiple tests with is");
        DepthGuard guard(*this);
        t->items.push_back(parse_postfix(parse_primary()));
      }
    }
    t->object = std::move(node);
    return t;
  }

  std::vector<Token> tokens_;
  size_t index_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

ParsedTemplate parse_template(const std::string& source) { return Parser(tokenize(source)).run(); }

}  // namespace aph::chat
