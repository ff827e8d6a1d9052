// Temperature, and dynamic temperature: T = min + (max - min) * (H / log N)^exp
// from the entropy H of the current distribution over its N live tokens.
#pragma once

#include <span>

#include "plugins/samplers/stage_shim.hpp"

namespace aph::samplers {

struct TemperatureStage {
  struct Params {
    float temperature = 1.0f;
    bool dynamic = false;
    float min = 0.0f, max = 0.0f, exponent = 1.0f;
  };
  static constexpr StageInfo info{"temperature", "", 5, 400, 0,
                                  "dynatemp_low=dynatemp_min,dynatemp_high=dynatemp_max"};
  static std::span<const aph_sampler_field> fields();
  static std::unique_ptr<Params> create(const Request& r, PluginState& st);
  static void apply_cpu(PluginState& st, std::span<const CpuRow<Params>> rows);
#ifdef APH_HAVE_CUDA
  static void apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s);
#endif
};

// Below this a temperature means greedy selection (Aphrodite's _SAMPLING_EPS);
// the smallest divisor used otherwise.
constexpr float kGreedyTemperature = 1e-5f;
constexpr float kMinTemperature = 2e-5f;

// The temperature a row uses this step (dynatemp needs the logits).
float effective_temperature(const TemperatureStage::Params& p, const float* logits, int64_t vocab);

}  // namespace aph::samplers
