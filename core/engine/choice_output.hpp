// One choice's output side: generated ids -> streamed text, with the stop
// conditions (EOS/EOG unless ignore_eos, stop_token_ids, stop strings held
// back and trimmed, max_tokens, the context's end) applied in vLLM's order:
// nothing but length stops a choice before min_tokens.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/engine/request_params.hpp"
#include "core/text/incremental_detokenizer.hpp"
#include "core/text/stop_matcher.hpp"

namespace aph::engine {

struct ChoiceStep {
  std::string text;  // releasable now
  bool finished = false;
  std::string finish_reason;               // "stop" | "length" when finished
  std::optional<std::string> stop_reason;  // the stop string, or a stop token id in decimal
};

class ChoiceOutput {
 public:
  ChoiceOutput(const text::Tokenizer& tokenizer, const GenerationParams& params,
               std::span<const int32_t> eog_ids, int64_t max_model_len);

  // The token just appended; `seq_len` is prompt + output after it.
  ChoiceStep push(int32_t token, int64_t seq_len);
  int num_output_tokens() const { return n_out_; }

 private:
  std::string finish_text(const std::string& piece);

  const GenerationParams& params_;
  std::vector<int32_t> eog_ids_;
  int64_t max_model_len_;
  text::IncrementalDetokenizer detok_;
  text::StopMatcher stops_;
  int n_out_ = 0;
};

}  // namespace aph::engine
