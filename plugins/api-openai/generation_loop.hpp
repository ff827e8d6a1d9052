// Driving one or more engine generations to completion, for both endpoints.
#pragma once

#include <boost/json.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "aphrodite_api/engine_client.hpp"
#include "aphrodite_api/responder.hpp"

namespace aph::openai {

struct ChoiceResult {
  std::string text;
  boost::json::array logprobs;  // engine entries, in order
  std::string finish_reason;
  std::optional<std::string> stop_reason;
  uint64_t completion_tokens = 0;
};

struct Usage {
  uint64_t prompt_tokens = 0;
  uint64_t completion_tokens = 0;
  uint64_t cached_prompt_tokens = 0;
  boost::json::object to_json() const;
};

// Called for every TOKENS/FINISHED event with the index of its generation.
// Returns false to stop (the client went away).
using EventSink = std::function<bool(size_t generation, const api::GenEvent& event)>;

// Pumps every generation until each reports DONE. Cancels all of them and
// returns false when the sink refuses an event or the client disconnects.
// An engine error becomes an HttpError (before anything was streamed) or is
// passed to on_error (after).
bool pump(std::vector<std::unique_ptr<api::Generation>>& generations, const api::Responder& out,
          const EventSink& sink);

// Non-streaming: gathers each generation's n choices.
struct Collected {
  std::vector<std::vector<ChoiceResult>> choices;  // [generation][choice]
  Usage usage;
  bool client_gone = false;
};
Collected collect(std::vector<std::unique_ptr<api::Generation>>& generations, int64_t n,
                  const api::Responder& out);

}  // namespace aph::openai
