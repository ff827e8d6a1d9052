// Logprobs from the raw logits of one row (before any stage): the
// log-partition, and the top-N tokens by logit.
#pragma once

#include <cstdint>
#include <vector>

#include "core/sampling/sampler_chain.hpp"

namespace aph::sampling {

struct RawLogprobs {
  double log_z = 0;              // log sum exp(logits)
  std::vector<float> logits;     // the raw row, for the chosen token's logprob
  std::vector<TokenLogprob> top; // descending logprob, ties by id
};

RawLogprobs raw_logprobs(const float* logits, int64_t vocab, int32_t top_n);

}  // namespace aph::sampling
