// DRY ("don't repeat yourself"): a token that would extend a repetition of an
// earlier part of the context is penalized by multiplier * base^(L - allowed),
// L being the length of the repeated suffix it would extend.
#pragma once

#include <span>
#include <vector>

#include "plugins/samplers/stage_shim.hpp"

namespace aph::samplers {

struct DryStage {
  struct Params {
    float multiplier = 0.0f;
    float base = 1.75f;
    int32_t allowed_length = 2;
    int32_t range = 0;            // 0 = whole history
    int32_t max_ngram = 12;       // L is capped here
    int32_t max_occurrences = 8;  // only the newest occurrences of the last token
    std::vector<int32_t> breakers;  // sorted token ids that end a match
  };
  static constexpr StageInfo info{"dry", "", 7, 100, APH_SAMPLER_NEEDS_HISTORY,
                                  "dry_penalty_last_n=dry_range"};
  static std::span<const aph_sampler_field> fields();
  static std::unique_ptr<Params> create(const Request& r, PluginState& st);
  static void apply_cpu(PluginState& st, std::span<const CpuRow<Params>> rows);
#ifdef APH_HAVE_CUDA
  static void apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s);
#endif
};

struct DryPenalty {
  int32_t token;
  int32_t length;  // repeated suffix length L (>= allowed_length)
};

// The penalized tokens of one row and their L, newest occurrence first, each
// token once (its longest L). Linear in the history: one backward scan for the
// newest occurrences of the last token, then at most max_ngram compares each.
std::vector<DryPenalty> dry_matches(const DryStage::Params& p, const int32_t* tokens, int64_t n_tokens);

}  // namespace aph::samplers
