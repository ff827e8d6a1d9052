// A Kobold generate body -> the engine's canonical request, with koboldcpp's
// semantics: defaults for omitted fields, max_context_length clamped to the
// model, `memory` prepended and kept when the prompt is truncated, BOS as the
// tokenizer wants, temperature 0 = greedy.
#pragma once

#include <boost/json.hpp>
#include <string>

#include "aphrodite_api/engine_client.hpp"

namespace aph::kobold {

struct GenerateRequest {
  boost::json::object engine_request;
  std::string genkey;
  int64_t n = 1;
  uint64_t prompt_tokens = 0;
  bool want_logprobs = false;
};

GenerateRequest build_generate_request(const api::EngineClient& engine,
                                       const boost::json::object& body);

}  // namespace aph::kobold
