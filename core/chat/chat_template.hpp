// Chat templates: a Jinja interpreter configured as HF transformers configures
// jinja2 (trim_blocks, lstrip_blocks, keep_trailing_newline off, tojson with
// ensure_ascii off, raise_exception, strftime_now).
#pragma once

#include <boost/json.hpp>
#include <memory>
#include <string>

namespace aph::chat {

class ChatTemplate {
 public:
  virtual ~ChatTemplate() = default;
  // Parses once; throws aph::Error (APH_ERR_INVALID_ARGUMENT) naming line and
  // column on a syntax error.
  static std::unique_ptr<ChatTemplate> compile(const std::string& source);
  // Renders with the given variables (messages, tools, add_generation_prompt,
  // bos_token, eos_token, ... any JSON). Throws aph::Error
  // (APH_ERR_INVALID_ARGUMENT) on raise_exception or a runtime error.
  virtual std::string render(const boost::json::object& variables) const = 0;
};

}  // namespace aph::chat
