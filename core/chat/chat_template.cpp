#include "core/chat/chat_template.hpp"

#include <cstdio>

#include "core/chat/json_value.hpp"
#include "core/chat/parser.hpp"
#include "core/chat/renderer.hpp"
#include "core/common/error.hpp"

namespace aph::chat {
namespace {

class CompiledTemplate final : public ChatTemplate {
 public:
  explicit CompiledTemplate(ParsedTemplate parsed) : parsed_(std::move(parsed)) {}

  using ChatTemplate::render;
  std::string render(const boost::json::object& variables, const RenderOptions& options) const override {
    auto root = std::make_shared<Scope>();
    Dict globals = make_globals(GlobalsOptions{options.fixed_now});
    for (auto& [name, value] : globals.entries) root->vars[name.as_string()] = value;
    // Caller variables shadow the builtins, as jinja2's render(**vars) does.
    for (const auto& [key, value] : variables) root->vars[std::string(key)] = from_json(value);
    RenderLimits limits;
    limits.max_output_bytes = options.max_output_bytes;
    limits.max_steps = options.max_steps;
    Renderer renderer(parsed_, limits);
    try {
      return renderer.render(root);
    } catch (const RuntimeFailure& f) {
      throw invalid_argument(std::string("chat template error: ") + f.what());
    }
  }

 private:
  ParsedTemplate parsed_;
};

}  // namespace

std::unique_ptr<ChatTemplate> ChatTemplate::compile(const std::string& source) {
  return std::make_unique<CompiledTemplate>(parse_template(source));
}

std::tm parse_civil_time(const std::string& text) {
  std::tm tm{};
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  char tail = 0;
  int n = std::sscanf(text.c_str(), "%4d-%2d-%2d%c%2d:%2d:%2d", &year, &month, &day, &tail, &hour, &minute, &second);
  bool ok = (n == 3) || (n == 7 && (tail == 'T' || tail == ' '));
  if (!ok || month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    throw invalid_argument("invalid date '" + text + "': expected YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS");
  }
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  // timegm normalizes and fills tm_wday / tm_yday without consulting the time zone.
  std::time_t t = timegm(&tm);
  gmtime_r(&t, &tm);
  return tm;
}

}  // namespace aph::chat
