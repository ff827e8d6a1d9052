// The targets of one multi-target matvec launch (kernels.hpp MatvecTarget):
// each owns a consecutive range of the grid's CTAs.
#pragma once

#include "plugins/quant-gguf/cuda/kernels.hpp"

namespace aph::gguf::cuda {

struct MatvecTargets {
  MatvecTarget t[kMaxMatvecTargets];
  unsigned first_cta[kMaxMatvecTargets + 1];  // first_cta[count]: the grid size
  int count;
};

// rows_per_cta output rows a CTA.
inline MatvecTargets plan_targets(const MatvecTarget* targets, int count, int rows_per_cta) {
  MatvecTargets ts{};
  ts.count = count;
  unsigned ctas = 0;
  for (int i = 0; i < count; ++i) {
    ts.t[i] = targets[i];
    ts.first_cta[i] = ctas;
    ctas += static_cast<unsigned>((targets[i].n + rows_per_cta - 1) / rows_per_cta);
  }
  ts.first_cta[count] = ctas;
  return ts;
}

// The target of this CTA; *cta becomes the CTA's index within it.
__device__ __forceinline__ const MatvecTarget& target_of(const MatvecTargets& ts, int64_t* cta) {
  int i = 0;
  while (i + 1 < ts.count && blockIdx.x >= ts.first_cta[i + 1]) ++i;
  *cta = blockIdx.x - ts.first_cta[i];
  return ts.t[i];
}

}  // namespace aph::gguf::cuda
