// POST /v1/completions: prompt as a string, a list of strings, token ids or a
// list of token-id lists; echo; integer logprobs; n; streaming with one choice
// per chunk, the usage chunk on request, then [DONE].
#include <chrono>

#include "aphrodite_api/fields.hpp"
#include "aphrodite_api/sse.hpp"
#include "generation_loop.hpp"
#include "logprobs_format.hpp"
#include "openai_plugin.hpp"
#include "request_mapping.hpp"

namespace aph::openai {
namespace {

struct Prompt {
  std::string text;             // set for text prompts
  std::vector<int32_t> tokens;  // set for token prompts
  bool is_tokens = false;
};

std::vector<int32_t> token_list(const boost::json::array& items, int64_t vocab_size) {
  std::vector<int32_t> ids;
  for (const auto& item : items) {
    if (!item.is_int64() || item.as_int64() < 0 || item.as_int64() >= vocab_size) {
      throw api::bad_request(
          "'prompt' token ids must be integers in [0, " + std::to_string(vocab_size) + ")",
          "prompt");
    }
    ids.push_back(static_cast<int32_t>(item.as_int64()));
  }
  if (ids.empty()) throw api::bad_request("'prompt' must not be empty", "prompt");
  return ids;
}

std::vector<Prompt> parse_prompts(const boost::json::object& body, int64_t vocab_size) {
  const auto* value = api::present(body, "prompt");
  if (value == nullptr) throw api::bad_request("'prompt' is required", "prompt");
  if (value->is_string()) return {Prompt{std::string(value->as_string()), {}, false}};
  if (!value->is_array() || value->as_array().empty()) {
    throw api::bad_request("'prompt' must be a string, a list of strings or token ids", "prompt");
  }
  const auto& items = value->as_array();
  std::vector<Prompt> prompts;
  if (items[0].is_string()) {
    for (const auto& item : items) {
      if (!item.is_string()) throw api::bad_request("'prompt' mixes strings and other types", "prompt");
      prompts.push_back(Prompt{std::string(item.as_string()), {}, false});
    }
  } else if (items[0].is_array()) {
    for (const auto& item : items) {
      if (!item.is_array()) throw api::bad_request("'prompt' mixes token lists and other types", "prompt");
      prompts.push_back(Prompt{{}, token_list(item.as_array(), vocab_size), true});
    }
  } else {
    prompts.push_back(Prompt{{}, token_list(items, vocab_size), true});
  }
  if (prompts.size() > 64) throw api::bad_request("'prompt' holds more than 64 prompts", "prompt");
  return prompts;
}

boost::json::object chunk_base(const std::string& id, int64_t created, const std::string& model) {
  return boost::json::object{
      {"id", id}, {"object", "text_completion"}, {"created", created}, {"model", model}};
}

}  // namespace

void handle_completions(Plugin& plugin, const aph_http_request* request,
                        const api::Responder& out) {
  boost::json::object body = api::parse_body_object(api::body_of(request));
  api::ModelInfo info = plugin.engine.model();
  ModelChoice model = resolve_model(info, body);
  std::vector<Prompt> prompts = parse_prompts(body, info.vocab_size);
  const int64_t n = requested_n(body);
  const bool stream = api::get_bool(body, "stream").value_or(false);
  const bool echo = api::get_bool(body, "echo").value_or(false);
  const auto logprobs = api::get_int(body, "logprobs", 0, 20);
  const int64_t max_tokens = api::get_int(body, "max_tokens", 0, info.max_model_len).value_or(16);
  bool include_usage = false;
  if (const auto* options = api::present(body, "stream_options")) {
    if (!options->is_object()) throw api::bad_request("'stream_options' must be an object", "stream_options");
    include_usage = api::get_bool(options->as_object(), "include_usage").value_or(false);
  }

  boost::json::object base = canonical_request(
      body, model,
      {"prompt", "model", "stream", "stream_options", "echo", "suffix", "user", "best_of",
       "logprobs", "max_tokens"});
  base["max_tokens"] = max_tokens;
  base["logprobs"] = logprobs ? boost::json::value(*logprobs) : boost::json::value(nullptr);

  std::vector<std::unique_ptr<api::Generation>> generations;
  std::vector<std::string> echoed;
  for (const Prompt& prompt : prompts) {
    boost::json::object req = base;
    if (prompt.is_tokens) {
      req["prompt_token_ids"] = api::to_json_array(prompt.tokens);
    } else {
      req["prompt"] = prompt.text;
    }
    echoed.push_back(!echo ? std::string()
                           : prompt.is_tokens ? plugin.engine.detokenize(prompt.tokens, false)
                                              : prompt.text);
    generations.push_back(plugin.engine.submit(req));
  }

  const std::string id = std::string("cmpl-") + request->request_id;
  const int64_t created = std::chrono::duration_cast<std::chrono::seconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();

  if (!stream) {
    Collected result = collect(generations, n, out);
    if (result.client_gone) return;
    boost::json::array choices;
    for (size_t g = 0; g < result.choices.size(); ++g) {
      for (size_t c = 0; c < result.choices[g].size(); ++c) {
        const ChoiceResult& r = result.choices[g][c];
        size_t offset = 0;
        boost::json::object choice{{"index", g * n + c},
                                   {"text", echoed[g] + r.text},
                                   {"finish_reason", r.finish_reason.empty() ? "stop" : r.finish_reason}};
        if (logprobs) {
          offset = echoed[g].size();
          choice["logprobs"] = completion_logprobs(r.logprobs, offset);
        } else {
          choice["logprobs"] = nullptr;
        }
        choice["stop_reason"] = r.stop_reason ? boost::json::value(*r.stop_reason) : boost::json::value(nullptr);
        choices.emplace_back(std::move(choice));
      }
    }
    boost::json::object response = chunk_base(id, created, model.name);
    response["choices"] = std::move(choices);
    response["usage"] = result.usage.to_json();
    out.json(200, response);
    return;
  }

  out.header("Cache-Control", "no-cache");
  out.begin_stream(200, "text/event-stream");
  std::vector<std::vector<size_t>> offsets(generations.size(), std::vector<size_t>(n, 0));
  std::vector<std::vector<bool>> started(generations.size(), std::vector<bool>(n, false));
  Usage usage;
  std::vector<uint64_t> prompt_tokens(generations.size(), 0), cached(generations.size(), 0);
  std::vector<std::vector<uint64_t>> completion(generations.size(), std::vector<uint64_t>(n, 0));
  bool finished = false;
  try {
    finished = pump(generations, out, [&](size_t g, const api::GenEvent& event) {
      if (event.choice >= static_cast<uint32_t>(n)) return true;
      const size_t c = event.choice;
      prompt_tokens[g] = event.prompt_tokens;
      cached[g] = event.cached_prompt_tokens;
      completion[g][c] = event.completion_tokens;
      std::string text = event.text;
      if (!started[g][c]) {
        started[g][c] = true;
        text = echoed[g] + text;
      }
      boost::json::object choice{{"index", g * n + c}, {"text", text}};
      if (logprobs && event.has_logprobs) {
        offsets[g][c] += (text.size() - event.text.size());
        choice["logprobs"] = completion_logprobs(event.logprobs, offsets[g][c]);
      } else {
        choice["logprobs"] = nullptr;
      }
      bool last = event.kind == APH_EVENT_FINISHED;
      choice["finish_reason"] = last ? boost::json::value(event.finish_reason.empty() ? "stop" : event.finish_reason)
                                     : boost::json::value(nullptr);
      if (last) {
        choice["stop_reason"] =
            event.has_stop_reason ? boost::json::value(event.stop_reason) : boost::json::value(nullptr);
      }
      boost::json::object chunk = chunk_base(id, created, model.name);
      chunk["choices"] = boost::json::array{std::move(choice)};
      if (include_usage) chunk["usage"] = nullptr;
      return out.write(api::sse_data(chunk));
    });
  } catch (const api::HttpError& e) {
    // Headers are gone: report mid-stream in the shape the SDKs raise on.
    boost::json::object error{{"message", e.what()}, {"type", "BadRequestError"},
                              {"param", nullptr}, {"code", e.status()}};
    out.write(api::sse_data(boost::json::object{{"error", std::move(error)}}));
    out.write("data: [DONE]\n\n");
    return;
  }
  if (!finished) return;
  if (include_usage) {
    for (size_t g = 0; g < generations.size(); ++g) {
      usage.prompt_tokens += prompt_tokens[g];
      usage.cached_prompt_tokens += cached[g];
      for (uint64_t t : completion[g]) usage.completion_tokens += t;
    }
    boost::json::object chunk = chunk_base(id, created, model.name);
    chunk["choices"] = boost::json::array();
    chunk["usage"] = usage.to_json();
    out.write(api::sse_data(chunk));
  }
  out.write("data: [DONE]\n\n");
}

}  // namespace aph::openai
