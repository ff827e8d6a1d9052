// The canonical request JSON (api.h, aph_engine_api.submit) turned into
// validated generation parameters. Sampler-stage fields are validated by the
// sampler chain; the fields here are the engine's own (prompt, length, stop
// conditions, detokenization, adapter).
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/sampling/sampler_chain.hpp"
#include "core/text/tokenizer.hpp"

namespace aph::engine {

struct GenerationParams {
  std::vector<int32_t> prompt_ids;
  int n = 1;
  int max_tokens = 0;  // resolved: never past the context
  int min_tokens = 0;
  bool ignore_eos = false;
  std::vector<std::string> stop;
  std::vector<int32_t> stop_token_ids;
  bool include_stop_str_in_output = false;
  bool skip_special_tokens = true;
  bool spaces_between_special_tokens = true;
  int logprobs = -1;  // -1 none, else top-N
  std::string lora;
  std::string cache_salt;
  std::shared_ptr<sampling::RequestSampling> sampling;
};

struct RequestLimits {
  int64_t max_model_len = 0;
  int32_t vocab_size = 0;
  int max_n = 128;
};

// Throws aph::Error (APH_ERR_INVALID_ARGUMENT) whose message starts with the
// field at fault. Unknown keys are ignored.
GenerationParams parse_request(const boost::json::object& request, const text::Tokenizer& tokenizer,
                               const sampling::SamplerChain& chain, const RequestLimits& limits);

}  // namespace aph::engine
