#include "core/engine/choice_output.hpp"

#include <algorithm>

namespace aph::engine {

ChoiceOutput::ChoiceOutput(const text::Tokenizer& tokenizer, const GenerationParams& params,
                           std::span<const int32_t> eog_ids, int64_t max_model_len)
    : params_(params),
      eog_ids_(eog_ids.begin(), eog_ids.end()),
      max_model_len_(max_model_len),
      detok_(tokenizer,
             {.skip_special_tokens = params.skip_special_tokens,
              .spaces_between_special_tokens = params.spaces_between_special_tokens},
             params.prompt_ids),
      stops_(params.stop, params.include_stop_str_in_output) {}

std::string ChoiceOutput::finish_text(const std::string& piece) {
  std::string text = stops_.push(piece).text;
  if (!stops_.stopped()) text += stops_.push(detok_.flush()).text;
  if (!stops_.stopped()) text += stops_.flush();
  return text;
}

ChoiceStep ChoiceOutput::push(int32_t token, int64_t seq_len) {
  ++n_out_;
  ChoiceStep step;
  const bool may_stop = n_out_ > params_.min_tokens;
  const bool is_eog = std::find(eog_ids_.begin(), eog_ids_.end(), token) != eog_ids_.end();
  const bool is_stop_token = std::find(params_.stop_token_ids.begin(), params_.stop_token_ids.end(),
                                       token) != params_.stop_token_ids.end();
  if (may_stop && ((is_eog && !params_.ignore_eos) || is_stop_token)) {
    // The token that ends the choice is counted but not part of the text.
    step.text = finish_text("");
    step.finished = true;
    step.finish_reason = "stop";
    if (is_stop_token) step.stop_reason = std::to_string(token);
    return step;
  }
  const std::string piece = detok_.push(token);
  const bool at_length = n_out_ >= params_.max_tokens || seq_len >= max_model_len_;
  if (may_stop) {
    auto r = stops_.push(piece);
    step.text = std::move(r.text);
    if (r.stop_index) {
      step.finished = true;
      step.finish_reason = "stop";
      step.stop_reason = params_.stop[*r.stop_index];
      return step;
    }
  } else {
    // Before min_tokens no stop string may end the choice (vLLM skips the
    // check entirely), so the text bypasses the matcher.
    step.text = piece;
  }
  if (at_length) {
    step.text += finish_text("");
    step.finished = true;
    step.finish_reason = "length";
  }
  return step;
}

}  // namespace aph::engine
