// Repetition-type penalties that read the token history.
#pragma once

#include <span>
#include <vector>

#include "plugins/samplers/stage_shim.hpp"

namespace aph::samplers {

// repetition_penalty (multiplicative, prompt + output, optionally only the last
// rep_pen_range tokens with Kobold's rep_pen_slope ramp), frequency_penalty and
// presence_penalty (OpenAI definition, output tokens only). Applied once.
struct PenaltiesStage {
  struct Params {
    float repetition = 1.0f;
    float frequency = 0.0f;
    float presence = 0.0f;
    int64_t range = 0;   // 0 = whole history
    float slope = 0.0f;  // 0 = flat
  };
  static constexpr StageInfo info{"penalties", "", 6, 200,
                                  APH_SAMPLER_NEEDS_HISTORY,
                                  "rep_pen=repetition_penalty,repetition_penalty_range=rep_pen_range,"
                                  "repetition_penalty_slope=rep_pen_slope"};
  static std::span<const aph_sampler_field> fields();
  static std::unique_ptr<Params> create(const Request& r, PluginState& st);
  static void apply_cpu(PluginState& st, std::span<const CpuRow<Params>> rows);
#ifdef APH_HAVE_CUDA
  static void apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s);
#endif
};

// no_repeat_ngram_size: bans every token that would complete an n-gram that
// already occurs in the history.
struct NoRepeatNgramStage {
  struct Params {
    int64_t n = 0;
  };
  static constexpr StageInfo info{"no_repeat_ngram", "", 8, 300, APH_SAMPLER_NEEDS_HISTORY, ""};
  static std::span<const aph_sampler_field> fields();
  static std::unique_ptr<Params> create(const Request& r, PluginState& st);
  static void apply_cpu(PluginState& st, std::span<const CpuRow<Params>> rows);
#ifdef APH_HAVE_CUDA
  static void apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s);
#endif
};

// Tokens that would repeat an n-gram of `tokens` (shared with the GPU path).
std::vector<int32_t> ngram_banned_tokens(const int32_t* tokens, int64_t n_tokens, int64_t n);

}  // namespace aph::samplers
