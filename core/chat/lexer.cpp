#include "core/chat/lexer.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "core/chat/utf8.hpp"
#include "core/common/error.hpp"

namespace aph::chat {

void throw_template_error(SourcePos pos, const std::string& message) {
  throw invalid_argument("chat template error at line " + std::to_string(pos.line) + ", column " +
                         std::to_string(pos.column) + ": " + message);
}

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// jinja2 normalizes \r\n and \r to \n and drops one trailing newline before lexing.
std::string normalize(const std::string& source, bool keep_trailing_newline) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!keep_trailing_newline && !out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

class Lexer {
 public:
  Lexer(const std::string& source, const LexerOptions& options)
      : src_(normalize(source, options.keep_trailing_newline)), options_(options) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  std::vector<Token> run() {
    while (pos_ < src_.size()) {
      size_t tag = find_tag_start(pos_);
      if (tag == std::string::npos) {
        emit_text(src_.substr(pos_), pos_);
        break;
      }
      std::string text = src_.substr(pos_, tag - pos_);
      size_t text_start = pos_;
      char kind = src_[tag + 1];
      char sign = tag + 2 < src_.size() && (src_[tag + 2] == '-' || src_[tag + 2] == '+') ? src_[tag + 2] : 0;
      emit_text(strip_before_tag(text, kind, sign), text_start);
      size_t after_begin = tag + 2 + (sign ? 1 : 0);
      if (kind == '#') {
        lex_comment(tag, after_begin);
      } else if (kind == '%' && raw_begin_end(after_begin) != std::string::npos) {
        lex_raw(tag, raw_begin_end(after_begin));
      } else {
        lex_tag(tag, after_begin, kind);
      }
    }
    tokens_.push_back({TokenType::End, "", position(src_.size())});
    return std::move(tokens_);
  }

 private:
  SourcePos position(size_t offset) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    size_t line = static_cast<size_t>(it - line_starts_.begin());
    return {static_cast<int>(line), static_cast<int>(offset - line_starts_[line - 1] + 1)};
  }

  size_t find_tag_start(size_t from) const {
    for (size_t i = from; i + 1 < src_.size(); ++i) {
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return std::string::npos;
  }

  void emit_text(const std::string& text, size_t offset) {
    if (!text.empty()) tokens_.push_back({TokenType::Text, text, position(offset)});
  }

  // '-' strips all whitespace before the tag; lstrip_blocks strips the
  // indentation of a block or comment tag that starts its line.
  std::string strip_before_tag(const std::string& text, char kind, char sign) const {
    if (sign == '-') {
      size_t end = text.size();
      while (end > 0 && is_space(text[end - 1])) --end;
      return text.substr(0, end);
    }
    if (sign == '+' || !options_.lstrip_blocks || kind == '{') return text;
    size_t line_pos = text.rfind('\n');
    line_pos = line_pos == std::string::npos ? 0 : line_pos + 1;
    if (line_pos == 0 && !line_starting_) return text;
    if (line_pos == text.size()) return text;
    for (size_t i = line_pos; i < text.size(); ++i) {
      if (!is_space(text[i])) return text;
    }
    return text.substr(0, line_pos);
  }

  // After a block or comment end: '-' eats all whitespace, trim_blocks one newline.
  size_t consume_after_end(size_t end, char sign) {
    if (sign == '-') {
      while (end < src_.size() && is_space(src_[end])) ++end;
    } else if (sign != '+' && options_.trim_blocks && end < src_.size() && src_[end] == '\n') {
      ++end;
    }
    line_starting_ = end > 0 && src_[end - 1] == '\n';
    return end;
  }

  void lex_comment(size_t tag, size_t from) {
    size_t close = src_.find("#}", from);
    if (close == std::string::npos) throw_template_error(position(tag), "missing end of comment tag");
    char sign = 0;
    if (close > from && (src_[close - 1] == '-' || src_[close - 1] == '+')) sign = src_[close - 1];
    pos_ = consume_after_end(close + 2, sign);
  }

  // Offset just past "{% raw %}" when the tag at `from` is a raw block start.
  size_t raw_begin_end(size_t from) const {
    size_t i = from;
    while (i < src_.size() && is_space(src_[i])) ++i;
    if (src_.compare(i, 3, "raw") != 0) return std::string::npos;
    i += 3;
    if (i < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[i])) || src_[i] == '_')) {
      return std::string::npos;
    }
    while (i < src_.size() && is_space(src_[i])) ++i;
    if (src_.compare(i, 3, "-%}") == 0) {
      i += 3;
      while (i < src_.size() && is_space(src_[i])) ++i;
      return i;
    }
    if (src_.compare(i, 2, "%}") == 0) return i + 2;
    return std::string::npos;
  }

  void lex_raw(size_t tag, size_t body) {
    line_starting_ = src_[body - 1] == '\n';
    for (size_t i = src_.find("{%", body); i != std::string::npos; i = src_.find("{%", i + 2)) {
      size_t j = i + 2;
      char sign = 0;
      if (j < src_.size() && (src_[j] == '-' || src_[j] == '+')) sign = src_[j++];
      while (j < src_.size() && is_space(src_[j])) ++j;
      if (src_.compare(j, 6, "endraw") != 0) continue;
      j += 6;
      while (j < src_.size() && is_space(src_[j])) ++j;
      char end_sign = 0;
      if (j < src_.size() && (src_[j] == '-' || src_[j] == '+')) end_sign = src_[j++];
      if (src_.compare(j, 2, "%}") != 0) continue;
      emit_text(strip_before_tag(src_.substr(body, i - body), '%', sign), body);
      pos_ = consume_after_end(j + 2, end_sign);
      return;
    }
    throw_template_error(position(tag), "missing end of raw directive");
  }

  void lex_tag(size_t tag, size_t i, char kind) {
    const bool block = kind == '%';
    tokens_.push_back({block ? TokenType::BlockBegin : TokenType::VarBegin, "", position(tag)});
    int depth = 0;  // open brackets: "}}" inside a dict literal is two braces
    const char close = block ? '%' : '}';
    while (true) {
      while (i < src_.size() && is_space(src_[i])) ++i;
      if (i >= src_.size()) throw_template_error(position(tag), "unexpected end of template, tag was never closed");
      if (depth == 0) {
        char sign = 0;
        size_t j = i;
        if (src_[j] == '-' || (block && src_[j] == '+')) sign = src_[j++];
        if (j + 1 < src_.size() && src_[j] == close && src_[j + 1] == '}') {
          tokens_.push_back({block ? TokenType::BlockEnd : TokenType::VarEnd, "", position(i)});
          if (block || sign == '-') {
            pos_ = consume_after_end(j + 2, block ? sign : '-');
          } else {
            pos_ = j + 2;
            line_starting_ = false;
          }
          return;
        }
      }
      i = lex_expression_token(i, depth);
    }
  }

  size_t lex_expression_token(size_t i, int& depth) {
    const SourcePos at = position(i);
    const char c = src_[i];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[j])) || src_[j] == '_')) ++j;
      tokens_.push_back({TokenType::Name, src_.substr(i, j - i), at});
      return j;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) return lex_number(i);
    if (c == '\'' || c == '"') return lex_string(i);
    static const char* const two_char[] = {"//", "**", "==", "!=", "<=", ">="};
    for (const char* op : two_char) {
      if (src_.compare(i, 2, op) == 0) {
        tokens_.push_back({TokenType::Operator, op, at});
        return i + 2;
      }
    }
    if (std::strchr("+-*/%~[](){}<>=.:|,;", c) != nullptr && c != '\0') {
      if (c == '(' || c == '[' || c == '{') ++depth;
      if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
      tokens_.push_back({TokenType::Operator, std::string(1, c), at});
      return i + 1;
    }
    throw_template_error(at, std::string("unexpected character '") + c + "'");
  }

  size_t skip_digits(size_t j) const {
    while (j < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[j])) ||
                               (src_[j] == '_' && j + 1 < src_.size() &&
                                std::isdigit(static_cast<unsigned char>(src_[j + 1]))))) {
      ++j;
    }
    return j;
  }

  size_t lex_number(size_t i) {
    size_t j = skip_digits(i);
    bool is_float = false;
    if (j + 1 < src_.size() && src_[j] == '.' && std::isdigit(static_cast<unsigned char>(src_[j + 1]))) {
      j = skip_digits(j + 1);
      is_float = true;
    }
    if (j < src_.size() && (src_[j] == 'e' || src_[j] == 'E')) {
      size_t k = j + 1;
      if (k < src_.size() && (src_[k] == '+' || src_[k] == '-')) ++k;
      if (k < src_.size() && std::isdigit(static_cast<unsigned char>(src_[k]))) {
        j = skip_digits(k);
        is_float = true;
      }
    }
    std::string text;
    for (size_t k = i; k < j; ++k) {
      if (src_[k] != '_') text += src_[k];
    }
    tokens_.push_back({is_float ? TokenType::Float : TokenType::Integer, text, position(i)});
    return j;
  }

  // Python's unicode-escape decoding, which jinja2 applies to string literals.
  size_t lex_string(size_t i) {
    const char quote = src_[i];
    std::string value;
    size_t j = i + 1;
    while (true) {
      if (j >= src_.size()) throw_template_error(position(i), "unterminated string literal");
      char c = src_[j];
      if (c == quote) break;
      if (c != '\\' || j + 1 >= src_.size()) {
        value += c;
        ++j;
        continue;
      }
      char e = src_[j + 1];
      j += 2;
      switch (e) {
        case 'n': value += '\n'; break;
        case 't': value += '\t'; break;
        case 'r': value += '\r'; break;
        case '\\': value += '\\'; break;
        case '\'': value += '\''; break;
        case '"': value += '"'; break;
        case 'a': value += '\a'; break;
        case 'b': value += '\b'; break;
        case 'f': value += '\f'; break;
        case 'v': value += '\v'; break;
        case '\n': break;
        case 'x':
        case 'u':
        case 'U': {
          size_t digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          if (j + digits > src_.size()) throw_template_error(position(j - 2), "truncated \\" + std::string(1, e) + " escape");
          char32_t cp = 0;
          for (size_t k = 0; k < digits; ++k) {
            char h = src_[j + k];
            if (!std::isxdigit(static_cast<unsigned char>(h))) {
              throw_template_error(position(j - 2), "truncated \\" + std::string(1, e) + " escape");
            }
            cp = cp * 16 + static_cast<char32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
          }
          if (cp > 0x10FFFF) throw_template_error(position(j - 2), "illegal Unicode character");
          j += digits;
          utf8::append(value, cp);
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            char32_t cp = static_cast<char32_t>(e - '0');
            for (int k = 0; k < 2 && j < src_.size() && src_[j] >= '0' && src_[j] <= '7'; ++k) cp = cp * 8 + static_cast<char32_t>(src_[j++] - '0');
            utf8::append(value, cp);
          } else {
            value += '\\';
            value += e;
          }
      }
    }
    tokens_.push_back({TokenType::String, value, position(i)});
    return j + 1;
  }

  std::string src_;
  LexerOptions options_;
  std::vector<size_t> line_starts_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  bool line_starting_ = true;
};

}  // namespace

std::vector<Token> tokenize(const std::string& source, const LexerOptions& options) {
  return Lexer(source, options).run();
}

}  // namespace aph::chat
