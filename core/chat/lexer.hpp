// Splits template source into text and tag tokens, applying jinja2's
// whitespace control the way HF configures it (trim_blocks, lstrip_blocks,
// keep_trailing_newline off) so the parser never deals with whitespace.
#pragma once

#include <string>
#include <vector>

namespace aph::chat {

enum class TokenType {
  Text,        // literal output (also the body of {% raw %})
  VarBegin,    // {{
  VarEnd,      // }}
  BlockBegin,  // {%
  BlockEnd,    // %}
  Name,
  String,  // value already unescaped
  Integer,
  Float,
  Operator,
  End,
};

struct SourcePos {
  int line = 1;
  int column = 1;
};

struct Token {
  TokenType type;
  std::string value;
  SourcePos pos;
};

struct LexerOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  bool keep_trailing_newline = false;
};

// Throws aph::Error naming line:column on an unterminated tag, comment,
// string or an unexpected character.
std::vector<Token> tokenize(const std::string& source, const LexerOptions& options = {});

// "chat template error at line L, column C: <message>"
[[noreturn]] void throw_template_error(SourcePos pos, const std::string& message);

}  // namespace aph::chat
