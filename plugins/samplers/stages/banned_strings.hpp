// banned_strings (and Kobold banned_tokens given as strings), by masking: a
// token is removed when emitting it would complete a banned phrase in the
// text (history tail + the token's bytes), or when its own bytes contain one.
// No backtracking: the model may still write a phrase's first tokens and is
// forced off it at the last one. Exact, case-sensitive byte matching.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "plugins/samplers/stage_shim.hpp"

namespace aph::samplers {

struct BannedStringsStage {
  struct Params {
    std::vector<std::string> phrases;
    std::vector<int32_t> containing;  // tokens whose bytes contain a phrase
    std::shared_ptr<const Vocab> vocab;
  };
  static constexpr StageInfo info{"banned_strings", "", -1, 50,
                                  APH_SAMPLER_FIXED_POSITION | APH_SAMPLER_NEEDS_HISTORY, ""};
  static std::span<const aph_sampler_field> fields();
  static std::unique_ptr<Params> create(const Request& r, PluginState& st);
  static void apply_cpu(PluginState& st, std::span<const CpuRow<Params>> rows);
#ifdef APH_HAVE_CUDA
  static void apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s);
#endif
};

// The tokens a row must not emit next.
std::vector<int32_t> banned_string_tokens(const BannedStringsStage::Params& p, const int32_t* tokens,
                                          int64_t n_tokens);

}  // namespace aph::samplers
