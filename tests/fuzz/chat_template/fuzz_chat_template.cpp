// Fuzzes template source through compile and render with a fixed chat
// context. Any input must end in output or aph::Error: never a crash, a hang
// past the step budget, or unbounded memory.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/chat/chat_template.hpp"
#include "core/common/error.hpp"

namespace {

const boost::json::object& context() {
  static const boost::json::object ctx = boost::json::parse(R"({
    "messages": [
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
      {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"x": 1.5}}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "42"}
    ],
    "tools": [{"type": "function", "function": {"name": "f", "description": "d",
               "parameters": {"type": "object", "properties": {"x": {"type": "number"}}}}}],
    "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>"
  })").as_object();
  return ctx;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string source(reinterpret_cast<const char*>(data), size);
  aph::chat::RenderOptions options;
  options.max_output_bytes = 1u << 20;
  // Keeps every input well under libFuzzer's -timeout under ASan.
  options.max_steps = 200000;
  options.fixed_now = aph::chat::parse_civil_time("2024-07-26");
  try {
    auto tmpl = aph::chat::ChatTemplate::compile(source);
    tmpl->render(context(), options);
  } catch (const aph::Error&) {
  }
  return 0;
}
