// The targets of one multi-target matvec launch (kernels.hpp MatvecTarget):
// each owns a consecutive range of the grid's CTAs.
#pragma once

#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <utility>

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

// The target of work item v (a CTA's worth of rows); *cta becomes the
// item's index within it.
__device__ __forceinline__ const MatvecTarget& target_at(const MatvecTargets& ts, unsigned v, int64_t* cta) {
  int i = 0;
  while (i + 1 < ts.count && v >= ts.first_cta[i + 1]) ++i;
  *cta = v - ts.first_cta[i];
  return ts.t[i];
}

// The grid of a matvec that quantizes x in every CTA: no more CTAs than are
// resident at once, each looping over work items, so that x is quantized
// once per CTA rather than once per item. The occupancy is a driver query
// and eager decode launches a matvec per linear per step, so its answer is
// kept per (kernel, shared memory); it depends on the kernel's registers and
// the SM's limits, the same on every GPU of a server.
template <typename Kernel>
unsigned resident_grid(Kernel kernel, int threads, size_t smem, int sm_count, unsigned items) {
  static std::mutex mu;
  static std::map<std::pair<const void*, size_t>, int> per_sm_of;
  int per_sm = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    const auto key = std::make_pair(reinterpret_cast<const void*>(kernel), smem);
    auto it = per_sm_of.find(key);
    if (it == per_sm_of.end()) {
      if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem) != cudaSuccess || per_sm < 1)
        per_sm = 1;
      it = per_sm_of.emplace(key, per_sm).first;
    }
    per_sm = it->second;
  }
  const unsigned resident = static_cast<unsigned>(per_sm) * static_cast<unsigned>(sm_count > 0 ? sm_count : 1);
  return items < resident ? items : resident;
}

}  // namespace aph::gguf::cuda
