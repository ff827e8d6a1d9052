// Mask stages: they remove tokens (or bias them) before the reorderable
// samplers run. All keep their position (APH_SAMPLER_FIXED_POSITION).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "plugins/samplers/stage_shim.hpp"

namespace aph::samplers {

// min_tokens (end-of-generation ids masked until reached), ban_eos_token and
// Kobold's use_default_badwordsids (EOS masked always).
struct MinTokensStage {
  struct Params {
    int64_t min_tokens = 0;
    bool ban_always = false;
    std::vector<int32_t> eog;  // eos + end-of-generation ids from the engine's vocabulary
  };
  static constexpr StageInfo info{"min_tokens", "", -1, 10, APH_SAMPLER_FIXED_POSITION, ""};
  static std::span<const aph_sampler_field> fields();
  static std::unique_ptr<Params> create(const Request& r, PluginState& st);
  static void apply_cpu(PluginState& st, std::span<const CpuRow<Params>> rows);
#ifdef APH_HAVE_CUDA
  static void apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s);
#endif
};

// logit_bias: {"token id": bias} added to the logits.
struct LogitBiasStage {
  struct Params {
    std::vector<int32_t> ids;
    std::vector<float> bias;
  };
  static constexpr StageInfo info{"logit_bias", "", -1, 20, APH_SAMPLER_FIXED_POSITION, ""};
  static std::span<const aph_sampler_field> fields();
  static std::unique_ptr<Params> create(const Request& r, PluginState& st);
  static void apply_cpu(PluginState& st, std::span<const CpuRow<Params>> rows);
#ifdef APH_HAVE_CUDA
  static void apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s);
#endif
};

// custom_token_bans (int list or "1,2,3") and Kobold banned_tokens given as ids.
struct TokenBansStage {
  struct Params {
    std::vector<int32_t> ids;
  };
  static constexpr StageInfo info{"token_bans", "", -1, 30, APH_SAMPLER_FIXED_POSITION, ""};
  static std::span<const aph_sampler_field> fields();
  static std::unique_ptr<Params> create(const Request& r, PluginState& st);
  static void apply_cpu(PluginState& st, std::span<const CpuRow<Params>> rows);
#ifdef APH_HAVE_CUDA
  static void apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s);
#endif
};

// allowed_token_ids: every other token is removed.
struct AllowedTokensStage {
  struct Params {
    std::vector<int32_t> ids;  // sorted, unique
  };
  static constexpr StageInfo info{"allowed_token_ids", "", -1, 40, APH_SAMPLER_FIXED_POSITION, ""};
  static std::span<const aph_sampler_field> fields();
  static std::unique_ptr<Params> create(const Request& r, PluginState& st);
  static void apply_cpu(PluginState& st, std::span<const CpuRow<Params>> rows);
#ifdef APH_HAVE_CUDA
  static void apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s);
#endif
};

// Shared by the mask stages: a token-id field checked against the vocabulary.
int32_t checked_token_id(int64_t id, const char* field, const PluginState& st);

}  // namespace aph::samplers
