// Chat templates: a Jinja interpreter configured as HF transformers configures
// jinja2 (trim_blocks, lstrip_blocks, keep_trailing_newline off, tojson with
// ensure_ascii off, raise_exception, strftime_now, loop controls).
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <ctime>
#include <memory>
#include <optional>
#include <string>

namespace aph::chat {

struct RenderOptions {
  // strftime_now() formats this civil time instead of the local clock, so
  // tests and reproducible prompts can pin the date.
  std::optional<std::tm> fixed_now;
  // Total text a render may produce (captures and macro output included).
  size_t max_output_bytes = 64u << 20;
  // Statements and expressions a render may evaluate; a real chat template
  // over a long conversation needs well under a million.
  uint64_t max_steps = 5'000'000;
};

class ChatTemplate {
 public:
  virtual ~ChatTemplate() = default;
  // Parses once; throws aph::Error (APH_ERR_INVALID_ARGUMENT) naming line and
  // column on a syntax error.
  static std::unique_ptr<ChatTemplate> compile(const std::string& source);
  // Renders with the given variables (messages, tools, add_generation_prompt,
  // bos_token, eos_token, ... any JSON). Throws aph::Error
  // (APH_ERR_INVALID_ARGUMENT) naming line and column on raise_exception or a
  // runtime error. Thread-safe: a compiled template is immutable.
  virtual std::string render(const boost::json::object& variables, const RenderOptions& options) const = 0;
  std::string render(const boost::json::object& variables) const { return render(variables, RenderOptions{}); }
};

// "2024-07-26" or "2024-07-26T13:45:00" as a civil time (weekday filled in).
// Throws aph::Error on another shape.
std::tm parse_civil_time(const std::string& text);

}  // namespace aph::chat
