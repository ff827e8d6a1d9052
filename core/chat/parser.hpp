// Turns tokens into the statement tree with jinja2's grammar and operator
// precedence (tests and filters bind tighter than `not`, `**` is
// left-associative, comparisons chain).
#pragma once

#include <string>

#include "core/chat/ast.hpp"

namespace aph::chat {

// Nesting deeper than this (expressions or blocks) is rejected, so hostile
// templates cannot exhaust the stack.
inline constexpr int kMaxParseDepth = 256;

// Throws aph::Error naming line:column on a syntax error.
ParsedTemplate parse_template(const std::string& source);

}  // namespace aph::chat
