// Shaping stages: they move probability around instead of cutting a tail.
#pragma once

#include <span>

#include "plugins/samplers/stage_shim.hpp"

namespace aph::samplers {

// Quadratic / cubic smoothing around the max logit m with d = x - m:
// x' = m - k d^2 + s d^3, k = f (3 - c) / 2, s = f (c - 1) / 2.
struct QuadraticStage {
  struct Params {
    float factor = 0, curve = 1;
  };
  static constexpr StageInfo info{"quadratic", "quadratic,smoothing", 12, 1300, 0, ""};
  static std::span<const aph_sampler_field> fields();
  static std::unique_ptr<Params> create(const Request& r, PluginState& st);
  static void apply_cpu(PluginState& st, std::span<const CpuRow<Params>> rows);
#ifdef APH_HAVE_CUDA
  static void apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s);
#endif
};

// Exclude Top Choices: with probability xtc_probability per step, when two or
// more tokens have p >= xtc_threshold, removes all of them but the least
// likely ones.
struct XtcStage {
  struct Params {
    float threshold = 0.1f, probability = 0;
  };
  static constexpr StageInfo info{"xtc", "", 13, 1400, 0, ""};
  static std::span<const aph_sampler_field> fields();
  static std::unique_ptr<Params> create(const Request& r, PluginState& st);
  static void apply_cpu(PluginState& st, std::span<const CpuRow<Params>> rows);
#ifdef APH_HAVE_CUDA
  static void apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s);
#endif
};

// Whether XTC acts on this row this step: a pure function of (seed, step).
bool xtc_fires(const aph_sampler_row& row, float probability);

// Skew (exllamav2): with probabilities sorted descending (ties by ascending
// id) and their running sum C, the new probabilities are the differences of
// C^exp(skew).
struct SkewStage {
  struct Params {
    double exponent = 1;
  };
  static constexpr StageInfo info{"skew", "", -1, 1500, APH_SAMPLER_FIXED_POSITION, ""};
  static std::span<const aph_sampler_field> fields();
  static std::unique_ptr<Params> create(const Request& r, PluginState& st);
  static void apply_cpu(PluginState& st, std::span<const CpuRow<Params>> rows);
#ifdef APH_HAVE_CUDA
  static void apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s);
#endif
};

}  // namespace aph::samplers
