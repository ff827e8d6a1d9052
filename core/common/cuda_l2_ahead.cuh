// A batch-1 matvec's later waves, sent to L2 by the CTAs before them.
//
// A matvec launch of more CTAs than fit the GPU at once runs in waves: a CTA
// of the second wave starts, and requests its weight rows, only when one of
// the first leaves. The first wave's CTAs start while the kernel before them
// still runs (programmatic launch, cuda_pdl.cuh), and that kernel (the
// attention before o, a norm before q/k/v or gate/up) leaves DRAM mostly
// idle. So each CTA, before it waits for its x, sends to L2 the rows of the
// CTAs `waves` waves after it (a CTA of the first wave also those of the
// waves between): each CTA's rows are requested once, and the later waves
// read them from L2. No registers, no shared memory: one bulk prefetch a CTA
// (cuda_async_copy.cuh).
//
// Knobs, per kernel family (PREFIX_L2_AHEAD...: docs/CONFIG.md):
//   PREFIX_L2_AHEAD=W            waves ahead (0: off)
//   PREFIX_L2_AHEAD_MAX_WAVES=G  only launches of at most G waves (0: any)
//   PREFIX_L2_AHEAD_CTAS=N       N CTAs make a wave, not the occupancy
//                                calculator's count (tests: small grids)
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "core/common/cuda_async_copy.cuh"
#include "core/common/cuda_device_limits.hpp"
#include "core/common/env_flag.hpp"

namespace aph::cuda_l2_ahead {

// What a launch passes its CTAs. ctas == 0: no prefetch.
struct Plan {
  int ctas = 0;   // CTAs of one wave
  int waves = 0;  // waves ahead
};

struct Knobs {
  int waves = 0;
  long max_waves = 0;
  int wave_ctas = 0;

  explicit Knobs(const std::string& prefix)
      : waves(static_cast<int>(std::clamp(env_int((prefix + "_L2_AHEAD").c_str(), 0), 0L, 8L))),
        max_waves(std::max(env_int((prefix + "_L2_AHEAD_MAX_WAVES").c_str(), 0), 0L)),
        wave_ctas(static_cast<int>(std::clamp(env_int((prefix + "_L2_AHEAD_CTAS").c_str(), 0), 0L, 1L << 20))) {}
};

// The CTAs of `kernel` (threads a CTA, dynamic shared memory) that fit the
// current device at once; 0 if the runtime cannot say.
template <typename Kernel>
int resident_ctas(Kernel kernel, int threads, size_t smem) {
  cuda_device::Limits limits;
  int per_sm = 0;
  if (cuda_device::current_limits(&limits) != cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem) != cudaSuccess)
    return 0;  // no prefetch: the launch reports any error itself
  return limits.sms * per_sm;
}

// The plan for a grid of `blocks` CTAs whose wave is `wave` CTAs.
inline Plan plan(const Knobs& knobs, int wave, unsigned blocks) {
  if (knobs.waves == 0) return {};
  if (knobs.wave_ctas > 0) wave = knobs.wave_ctas;
  if (wave <= 0 || blocks <= static_cast<unsigned>(wave)) return {};
  if (knobs.max_waves > 0 && blocks > static_cast<uint64_t>(wave) * static_cast<uint64_t>(knobs.max_waves)) return {};
  return {wave, knobs.waves};
}

// Calls f(cta) for each later CTA whose rows this CTA sends to L2 (call
// from one thread, before the producer wait).
template <typename F>
__device__ __forceinline__ void for_each_ahead(const Plan& p, F&& f) {
  if (p.ctas <= 0) return;
  const unsigned b = blockIdx.x;
  for (int j = b < static_cast<unsigned>(p.ctas) ? 1 : p.waves; j <= p.waves; ++j) {
    const uint64_t v = b + static_cast<uint64_t>(j) * static_cast<unsigned>(p.ctas);
    if (v >= gridDim.x) break;
    f(static_cast<unsigned>(v));
  }
}

// [p, p + bytes) into L2, trimmed inward to the bulk prefetch's 16-byte
// granules (never past the range: the bytes at its ends stay for the plain
// loads).
__device__ __forceinline__ void prefetch_range(const void* p, uint64_t bytes) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  const uintptr_t begin = (a + 15) & ~static_cast<uintptr_t>(15), end = (a + bytes) & ~static_cast<uintptr_t>(15);
  if (end > begin)
    cuda_async::prefetch_l2_bulk(reinterpret_cast<const void*>(begin), static_cast<uint32_t>(end - begin));
}

}  // namespace aph::cuda_l2_ahead
