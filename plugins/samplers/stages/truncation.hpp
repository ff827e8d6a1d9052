// Truncation stages: each removes (sets to -inf) the tokens outside its kept
// set and always keeps at least the most likely token. Kept sets include ties
// at the boundary, so they do not depend on sort order.
#pragma once

#include <span>

#include "plugins/samplers/stage_shim.hpp"

namespace aph::samplers {

#ifdef APH_HAVE_CUDA
#define APH_CUDA_APPLY static void apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s);
#else
#define APH_CUDA_APPLY
#endif

// Cuda: APH_CUDA_APPLY (every truncation stage has a kernel).
#define APH_TRUNCATION_STAGE(Type, Name, Priority, Kobold, Position, Aliases, Cuda, ParamBody) \
  struct Type {                                                                               \
    struct Params ParamBody;                                                                  \
    static constexpr StageInfo info{Name, Priority, Kobold, Position, 0, Aliases};           \
    static std::span<const aph_sampler_field> fields();                                       \
    static std::unique_ptr<Params> create(const Request& r, PluginState& st);                 \
    static void apply_cpu(PluginState& st, std::span<const CpuRow<Params>> rows);             \
    Cuda                                                                                      \
  }

// Keeps logits >= max - nsigma * std (std over the live logits).
APH_TRUNCATION_STAGE(TopNsigmaStage, "top_nsigma", "", 9, 500, "top_n_sigma=nsigma", APH_CUDA_APPLY, { float nsigma = 0; });
// Keeps logits >= the k-th largest.
APH_TRUNCATION_STAGE(TopKStage, "top_k", "top_p_top_k", 0, 600, "", APH_CUDA_APPLY, { int64_t k = 0; });
// Keeps tokens whose strictly-more-likely mass is < top_p.
APH_TRUNCATION_STAGE(TopPStage, "top_p", "top_p_top_k", 2, 610, "", APH_CUDA_APPLY, { float p = 1; });
// Keeps p >= top_a * p_max^2.
APH_TRUNCATION_STAGE(TopAStage, "top_a", "", 1, 700, "", APH_CUDA_APPLY, { float a = 0; });
// Keeps p >= min_p * p_max, i.e. logit - max >= log(min_p).
APH_TRUNCATION_STAGE(MinPStage, "min_p", "", 2, 800, "", APH_CUDA_APPLY, { float log_min_p = 0; });
// Tail-free: cuts where the normalized |second difference| of the sorted
// probabilities accumulates past tfs. Sorted by value, ties by ascending id:
// a cut may split a tie group, so the order is part of the definition.
APH_TRUNCATION_STAGE(TfsStage, "tfs", "", 3, 900, "", APH_CUDA_APPLY, { float z = 1; });
// Keeps p >= min(eta, sqrt(eta) * exp(-H)); eta in units of 1e-4.
APH_TRUNCATION_STAGE(EtaCutoffStage, "eta_cutoff", "", 10, 1000, "", APH_CUDA_APPLY, { double eta = 0; });
// Keeps p >= epsilon; epsilon in units of 1e-4.
APH_TRUNCATION_STAGE(EpsilonCutoffStage, "epsilon_cutoff", "", 11, 1100, "eps_cutoff=epsilon_cutoff", APH_CUDA_APPLY,
                     { double epsilon = 0; });
// Locally typical: keeps tokens whose strictly-more-typical mass (by
// |-log p - H|) is < typical_p.
APH_TRUNCATION_STAGE(TypicalPStage, "typical_p", "", 4, 1200, "typical=typical_p", APH_CUDA_APPLY, { float p = 1; });

#undef APH_TRUNCATION_STAGE
#undef APH_CUDA_APPLY

}  // namespace aph::samplers
