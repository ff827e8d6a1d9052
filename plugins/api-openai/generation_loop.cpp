#include "generation_loop.hpp"

#include "aphrodite_api/http_error.hpp"

namespace aph::openai {

boost::json::object Usage::to_json() const {
  boost::json::object usage{{"prompt_tokens", prompt_tokens},
                            {"completion_tokens", completion_tokens},
                            {"total_tokens", prompt_tokens + completion_tokens}};
  if (cached_prompt_tokens > 0) {
    usage["prompt_tokens_details"] = boost::json::object{{"cached_tokens", cached_prompt_tokens}};
  }
  return usage;
}

bool pump(std::vector<std::unique_ptr<api::Generation>>& generations, const api::Responder& out,
          const EventSink& sink) {
  std::vector<bool> done(generations.size(), false);
  size_t remaining = generations.size();
  // One generation: block on it; several: poll round-robin so every prompt
  // streams as it goes.
  const int32_t timeout_ms = generations.size() == 1 ? 50 : 5;
  auto cancel_all = [&] {
    for (auto& g : generations) g->cancel();
  };
  while (remaining > 0) {
    // Every round, not only when no event came: while tokens arrive faster
    // than the timeout a non-streaming request writes nothing, so only this
    // check notices that its client left.
    if (out.client_gone()) {
      cancel_all();
      return false;
    }
    for (size_t i = 0; i < generations.size(); ++i) {
      if (done[i]) continue;
      api::GenEvent event = generations[i]->next(timeout_ms);
      if (event.kind == APH_EVENT_NONE) continue;
      if (event.kind == APH_EVENT_ERROR) {
        cancel_all();
        throw api::HttpError(api::http_status_for(static_cast<aph_status>(event.error_code), 429),
                             event.error);
      }
      if (event.kind == APH_EVENT_DONE) {
        done[i] = true;
        --remaining;
        continue;
      }
      if (!sink(i, event)) {
        cancel_all();
        return false;
      }
    }
  }
  return true;
}

Collected collect(std::vector<std::unique_ptr<api::Generation>>& generations, int64_t n,
                  const api::Responder& out) {
  Collected result;
  result.choices.assign(generations.size(), std::vector<ChoiceResult>(static_cast<size_t>(n)));
  std::vector<uint64_t> prompt_tokens(generations.size(), 0);
  std::vector<uint64_t> cached_tokens(generations.size(), 0);
  bool finished = pump(generations, out, [&](size_t g, const api::GenEvent& event) {
    if (event.choice >= result.choices[g].size()) return true;
    ChoiceResult& choice = result.choices[g][event.choice];
    choice.text += event.text;
    for (const auto& entry : event.logprobs) choice.logprobs.push_back(entry);
    choice.completion_tokens = event.completion_tokens;
    prompt_tokens[g] = event.prompt_tokens;
    cached_tokens[g] = event.cached_prompt_tokens;
    if (event.kind == APH_EVENT_FINISHED) {
      choice.finish_reason = event.finish_reason;
      if (event.has_stop_reason) choice.stop_reason = event.stop_reason;
    }
    return true;
  });
  result.client_gone = !finished;
  for (size_t g = 0; g < generations.size(); ++g) {
    result.usage.prompt_tokens += prompt_tokens[g];
    result.usage.cached_prompt_tokens += cached_tokens[g];
    for (const auto& c : result.choices[g]) result.usage.completion_tokens += c.completion_tokens;
  }
  return result;
}

}  // namespace aph::openai
