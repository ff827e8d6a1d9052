// POST /v1/chat/completions: messages through the model's chat template,
// streaming with delta.role first and a real finish_reason last per choice.
#include <chrono>

#include "aphrodite_api/fields.hpp"
#include "aphrodite_api/sse.hpp"
#include "generation_loop.hpp"
#include "logprobs_format.hpp"
#include "openai_plugin.hpp"
#include "request_mapping.hpp"

namespace aph::openai {
namespace {

const boost::json::array& validated_messages(const boost::json::object& body) {
  const auto* value = api::present(body, "messages");
  if (value == nullptr || !value->is_array() || value->as_array().empty()) {
    throw api::bad_request("'messages' must be a non-empty list", "messages");
  }
  size_t index = 0;
  for (const auto& m : value->as_array()) {
    std::string where = "messages[" + std::to_string(index++) + "]";
    if (!m.is_object()) throw api::bad_request("'" + where + "' must be an object", "messages");
    const auto& message = m.as_object();
    auto role = message.find("role");
    if (role == message.end() || !role->value().is_string()) {
      throw api::bad_request("'" + where + ".role' must be a string", "messages");
    }
    auto content = message.find("content");
    if (content != message.end() && !content->value().is_string() &&
        !content->value().is_array() && !content->value().is_null()) {
      throw api::bad_request("'" + where + ".content' must be a string, a list of parts or null",
                             "messages");
    }
    if (content != message.end() && content->value().is_array()) {
      for (const auto& part : content->value().as_array()) {
        if (!part.is_object() || !part.as_object().contains("type")) {
          throw api::bad_request("'" + where + ".content' parts must be objects with a 'type'",
                                 "messages");
        }
      }
    }
  }
  return value->as_array();
}

boost::json::object template_options(const boost::json::object& body,
                                     const boost::json::array& messages) {
  bool continue_final = api::get_bool(body, "continue_final_message").value_or(false);
  bool add_generation_prompt = api::get_bool(body, "add_generation_prompt").value_or(!continue_final);
  if (continue_final && add_generation_prompt) {
    throw api::bad_request(
        "'continue_final_message' and 'add_generation_prompt' cannot both be true",
        "continue_final_message");
  }
  if (continue_final) {
    const auto& last = messages.back().as_object();
    if (last.at("role").as_string() != "assistant") {
      throw api::bad_request("'continue_final_message' needs a final assistant message",
                             "continue_final_message");
    }
  }
  boost::json::object options{{"add_generation_prompt", add_generation_prompt},
                              {"continue_final_message", continue_final}};
  std::string tool_choice = "auto";
  if (const auto* choice = api::present(body, "tool_choice")) {
    if (choice->is_string()) tool_choice = std::string(choice->as_string());
  }
  if (const auto* tools = api::present(body, "tools")) {
    if (!tools->is_array()) throw api::bad_request("'tools' must be a list", "tools");
    if (tool_choice != "none") options["tools"] = *tools;
  }
  if (auto chat_template = api::get_string(body, "chat_template")) {
    options["chat_template"] = *chat_template;
  }
  if (const auto* kwargs = api::present(body, "chat_template_kwargs")) {
    if (!kwargs->is_object()) {
      throw api::bad_request("'chat_template_kwargs' must be an object", "chat_template_kwargs");
    }
    options["chat_template_kwargs"] = *kwargs;
  }
  return options;
}

void reject_unsupported_format(const boost::json::object& body) {
  const auto* format = api::present(body, "response_format");
  if (format == nullptr) return;
  if (!format->is_object()) throw api::bad_request("'response_format' must be an object", "response_format");
  auto type = api::get_string(format->as_object(), "type").value_or("text");
  if (type != "text") {
    throw api::bad_request("response_format type '" + type + "' (constrained decoding) is not supported",
                           "response_format");
  }
}

boost::json::object chunk_base(const std::string& id, int64_t created, const std::string& model,
                               const char* object) {
  return boost::json::object{{"id", id}, {"object", object}, {"created", created}, {"model", model}};
}

}  // namespace

void handle_chat(Plugin& plugin, const aph_http_request* request, const api::Responder& out) {
  boost::json::object body = api::parse_body_object(api::body_of(request));
  api::ModelInfo info = plugin.engine.model();
  ModelChoice model = resolve_model(info, body);
  const boost::json::array& messages = validated_messages(body);
  boost::json::object options = template_options(body, messages);
  reject_unsupported_format(body);
  const int64_t n = requested_n(body);
  const bool stream = api::get_bool(body, "stream").value_or(false);
  const bool want_logprobs = api::get_bool(body, "logprobs").value_or(false);
  const auto top_logprobs = api::get_int(body, "top_logprobs", 0, 20);
  if (top_logprobs && !want_logprobs) {
    throw api::bad_request("'top_logprobs' needs 'logprobs': true", "top_logprobs");
  }
  auto max_tokens = api::get_int(body, "max_completion_tokens", 0, info.max_model_len);
  if (!max_tokens) max_tokens = api::get_int(body, "max_tokens", 0, info.max_model_len);
  bool include_usage = false;
  if (const auto* so = api::present(body, "stream_options")) {
    if (!so->is_object()) throw api::bad_request("'stream_options' must be an object", "stream_options");
    include_usage = api::get_bool(so->as_object(), "include_usage").value_or(false);
  }

  std::string prompt = plugin.engine.apply_chat_template(messages, options);
  boost::json::object req = canonical_request(
      body, model,
      {"messages", "model", "stream", "stream_options", "logprobs", "top_logprobs", "max_tokens",
       "max_completion_tokens", "tools", "tool_choice", "response_format", "chat_template",
       "chat_template_kwargs", "add_generation_prompt", "continue_final_message", "user",
       "parallel_tool_calls", "functions", "function_call"});
  req["prompt"] = prompt;
  if (!req.contains("add_special_tokens")) req["add_special_tokens"] = false;
  req["max_tokens"] = max_tokens ? boost::json::value(*max_tokens) : boost::json::value(nullptr);
  req["logprobs"] = want_logprobs ? boost::json::value(top_logprobs.value_or(0)) : boost::json::value(nullptr);

  std::vector<std::unique_ptr<api::Generation>> generations;
  generations.push_back(plugin.engine.submit(req));
  const std::string id = std::string("chatcmpl-") + request->request_id;
  const int64_t created = std::chrono::duration_cast<std::chrono::seconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();

  if (!stream) {
    Collected result = collect(generations, n, out);
    if (result.client_gone) return;
    boost::json::array choices;
    for (size_t c = 0; c < result.choices[0].size(); ++c) {
      const ChoiceResult& r = result.choices[0][c];
      boost::json::object choice{
          {"index", c},
          {"message", boost::json::object{{"role", "assistant"}, {"content", r.text}}},
          {"logprobs", want_logprobs ? boost::json::value(chat_logprobs(r.logprobs)) : boost::json::value(nullptr)},
          {"finish_reason", r.finish_reason.empty() ? "stop" : r.finish_reason},
          {"stop_reason", r.stop_reason ? boost::json::value(*r.stop_reason) : boost::json::value(nullptr)}};
      choices.emplace_back(std::move(choice));
    }
    boost::json::object response = chunk_base(id, created, model.name, "chat.completion");
    response["choices"] = std::move(choices);
    response["usage"] = result.usage.to_json();
    out.json(200, response);
    return;
  }

  out.header("Cache-Control", "no-cache");
  out.begin_stream(200, "text/event-stream");
  std::vector<bool> role_sent(n, false);
  std::vector<uint64_t> completion(n, 0);
  uint64_t prompt_tokens = 0, cached = 0;
  auto emit = [&](boost::json::object choice) {
    boost::json::object chunk = chunk_base(id, created, model.name, "chat.completion.chunk");
    chunk["choices"] = boost::json::array{std::move(choice)};
    if (include_usage) chunk["usage"] = nullptr;
    return out.write(api::sse_data(chunk));
  };
  bool finished = false;
  try {
    finished = pump(generations, out, [&](size_t, const api::GenEvent& event) {
      if (event.choice >= static_cast<uint32_t>(n)) return true;
      const size_t c = event.choice;
      prompt_tokens = event.prompt_tokens;
      cached = event.cached_prompt_tokens;
      completion[c] = event.completion_tokens;
      if (!role_sent[c]) {
        role_sent[c] = true;
        if (!emit(boost::json::object{{"index", c},
                                      {"delta", boost::json::object{{"role", "assistant"}, {"content", ""}}},
                                      {"logprobs", nullptr},
                                      {"finish_reason", nullptr}})) {
          return false;
        }
      }
      bool last = event.kind == APH_EVENT_FINISHED;
      if (event.text.empty() && !last && !event.has_logprobs) return true;
      boost::json::object delta;
      if (!event.text.empty()) delta["content"] = event.text;
      boost::json::object choice{
          {"index", c},
          {"delta", std::move(delta)},
          {"logprobs", want_logprobs && event.has_logprobs ? boost::json::value(chat_logprobs(event.logprobs))
                                                           : boost::json::value(nullptr)},
          {"finish_reason", last ? boost::json::value(event.finish_reason.empty() ? "stop" : event.finish_reason)
                                 : boost::json::value(nullptr)}};
      if (last) {
        choice["stop_reason"] =
            event.has_stop_reason ? boost::json::value(event.stop_reason) : boost::json::value(nullptr);
      }
      return emit(std::move(choice));
    });
  } catch (const api::HttpError& e) {
    boost::json::object error{{"message", e.what()}, {"type", "BadRequestError"},
                              {"param", nullptr}, {"code", e.status()}};
    out.write(api::sse_data(boost::json::object{{"error", std::move(error)}}));
    out.write("data: [DONE]\n\n");
    return;
  }
  if (!finished) return;
  if (include_usage) {
    Usage usage;
    usage.prompt_tokens = prompt_tokens;
    usage.cached_prompt_tokens = cached;
    for (uint64_t t : completion) usage.completion_tokens += t;
    boost::json::object chunk = chunk_base(id, created, model.name, "chat.completion.chunk");
    chunk["choices"] = boost::json::array();
    chunk["usage"] = usage.to_json();
    out.write(api::sse_data(chunk));
  }
  out.write("data: [DONE]\n\n");
}

}  // namespace aph::openai
