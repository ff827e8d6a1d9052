// POST /api/v1/generate (sync) and POST /api/extra/generate/stream (SSE in the
// exact shape Lite's regex needs, ending with a finish_reason event).
#include "aphrodite_api/fields.hpp"
#include "aphrodite_api/sse.hpp"
#include "generate_request.hpp"
#include "kobold_plugin.hpp"

namespace aph::kobold {
namespace {

struct ActiveGuard {
  std::atomic<int>& counter;
  explicit ActiveGuard(std::atomic<int>& c) : counter(c) { ++counter; }
  ~ActiveGuard() { --counter; }
};

boost::json::object chat_style_logprob(const boost::json::value& entry) {
  boost::json::object out;
  if (!entry.is_object()) return out;
  const auto& e = entry.as_object();
  out["token"] = e.contains("token") ? e.at("token") : boost::json::value("");
  out["logprob"] = e.contains("logprob") ? e.at("logprob") : boost::json::value(nullptr);
  out["bytes"] = e.contains("bytes") ? e.at("bytes") : boost::json::value(boost::json::array());
  boost::json::array top;
  if (e.contains("top") && e.at("top").is_array()) {
    for (const auto& t : e.at("top").as_array()) {
      if (!t.is_object()) continue;
      const auto& to = t.as_object();
      top.emplace_back(boost::json::object{
          {"token", to.contains("token") ? to.at("token") : boost::json::value("")},
          {"logprob", to.contains("logprob") ? to.at("logprob") : boost::json::value(nullptr)},
          {"bytes", to.contains("bytes") ? to.at("bytes") : boost::json::value(boost::json::array())}});
    }
  }
  out["top_logprobs"] = std::move(top);
  return out;
}

struct ChoiceState {
  std::string text;
  std::string finish_reason;
  uint64_t completion_tokens = 0;
  boost::json::array logprobs;
};

// Runs the generation, feeding `on_text` (choice 0's new text) as it comes.
// Returns false when the client left or an abort arrived.
template <typename OnText>
bool run(Plugin& plugin, api::Generation& generation, Job& job, const api::Responder& out,
         std::vector<ChoiceState>& choices, OnText&& on_text) {
  using clock = std::chrono::steady_clock;
  auto start = clock::now();
  auto first_token = start;
  bool got_first = false;
  while (true) {
    if (job.abort_requested || out.client_gone()) {
      generation.cancel();
      // Drain so the engine has released the request before we return.
      for (int i = 0; i < 100; ++i) {
        if (generation.next(20).kind == APH_EVENT_DONE) break;
      }
      return false;
    }
    api::GenEvent event = generation.next(50);
    if (event.kind == APH_EVENT_NONE) continue;
    if (event.kind == APH_EVENT_ERROR) {
      throw api::HttpError(api::http_status_for(static_cast<aph_status>(event.error_code), 503),
                           event.error);
    }
    if (event.kind == APH_EVENT_DONE) break;
    if (event.choice >= choices.size()) continue;
    if (!got_first) {
      got_first = true;
      first_token = clock::now();
    }
    ChoiceState& c = choices[event.choice];
    c.text += event.text;
    c.completion_tokens = event.completion_tokens;
    for (const auto& lp : event.logprobs) c.logprobs.push_back(chat_style_logprob(lp));
    if (event.kind == APH_EVENT_FINISHED) c.finish_reason = event.finish_reason;
    if (event.choice == 0) {
      {
        std::lock_guard<std::mutex> lock(job.mutex);
        job.text = c.text;
        for (const auto& lp : event.logprobs) job.logprobs.push_back(chat_style_logprob(lp));
      }
      if (!on_text(event)) {
        generation.cancel();
        return false;
      }
    }
  }
  auto end = clock::now();
  std::lock_guard<std::mutex> lock(plugin.perf.mutex);
  plugin.perf.last_process_seconds = std::chrono::duration<double>(first_token - start).count();
  plugin.perf.last_eval_seconds = std::chrono::duration<double>(end - first_token).count();
  plugin.perf.last_token_count = choices.empty() ? 0 : choices[0].completion_tokens;
  plugin.perf.total_gens += 1;
  plugin.perf.last_stop_reason = choices.empty() ? "" : choices[0].finish_reason;
  return true;
}

}  // namespace

void handle_generate(Plugin& plugin, const aph_http_request* request, const api::Responder& out) {
  boost::json::object body = api::parse_body_object(api::body_of(request));
  GenerateRequest gen = build_generate_request(plugin.engine, body);
  ActiveGuard active(plugin.active);
  auto generation = plugin.engine.submit(gen.engine_request);
  auto job = plugin.jobs.start(caller_scope(request), gen.genkey);
  std::vector<ChoiceState> choices(static_cast<size_t>(gen.n));
  bool completed = run(plugin, *generation, *job, out, choices, [](const api::GenEvent&) { return true; });
  {
    std::lock_guard<std::mutex> lock(job->mutex);
    job->finished = true;
  }
  if (!completed && out.client_gone()) return;
  plugin.perf.last_input_count = gen.prompt_tokens;
  boost::json::array results;
  for (const ChoiceState& c : choices) {
    boost::json::object r{{"text", c.text},
                          {"finish_reason", c.finish_reason.empty() ? "stop" : c.finish_reason},
                          {"prompt_tokens", gen.prompt_tokens},
                          {"completion_tokens", c.completion_tokens}};
    if (gen.want_logprobs) r["logprobs"] = boost::json::object{{"content", c.logprobs}};
    results.emplace_back(std::move(r));
  }
  out.json(200, boost::json::object{{"results", std::move(results)}});
}

void handle_generate_stream(Plugin& plugin, const aph_http_request* request,
                            const api::Responder& out) {
  boost::json::object body = api::parse_body_object(api::body_of(request));
  body["n"] = 1;  // a stream carries one text
  GenerateRequest gen = build_generate_request(plugin.engine, body);
  ActiveGuard active(plugin.active);
  auto generation = plugin.engine.submit(gen.engine_request);
  auto job = plugin.jobs.start(caller_scope(request), gen.genkey);
  out.header("Cache-Control", "no-cache");
  out.begin_stream(200, "text/event-stream");
  std::vector<ChoiceState> choices(1);
  bool completed = false;
  try {
    completed = run(plugin, *generation, *job, out, choices, [&](const api::GenEvent& event) {
      if (event.text.empty()) return true;
      return out.write(api::sse_event(
          "message", boost::json::object{{"token", event.text}, {"finish_reason", nullptr}}));
    });
  } catch (const api::HttpError& e) {
    out.write(api::sse_event("error", boost::json::object{{"detail", boost::json::object{
                                                             {"msg", e.what()}, {"type", "server_error"}}}}));
  }
  {
    std::lock_guard<std::mutex> lock(job->mutex);
    job->finished = true;
  }
  plugin.perf.last_input_count = gen.prompt_tokens;
  if (completed) {
    const std::string& reason = choices[0].finish_reason.empty() ? "stop" : choices[0].finish_reason;
    out.write(api::sse_event("message", boost::json::object{{"token", ""}, {"finish_reason", reason}}));
  }
}

}  // namespace aph::kobold
