// OpenAI request bodies -> the engine's canonical request JSON.
#pragma once

#include <boost/json.hpp>
#include <string>
#include <vector>

#include "aphrodite_api/engine_client.hpp"

namespace aph::openai {

// The model a request names: the served model, or a LoRA adapter (whose name
// goes into the engine request). An unknown name is a 404.
struct ModelChoice {
  std::string name;  // echoed back in responses
  std::string lora;  // "" for the base model
};
ModelChoice resolve_model(const api::ModelInfo& info, const boost::json::object& body);

// Copies every key the dialect does not own (sampler fields pass straight to
// the engine, which validates them) and sets the common generation fields.
boost::json::object canonical_request(const boost::json::object& body, const ModelChoice& model,
                                      std::initializer_list<const char*> dialect_keys);

int64_t requested_n(const boost::json::object& body);

}  // namespace aph::openai
