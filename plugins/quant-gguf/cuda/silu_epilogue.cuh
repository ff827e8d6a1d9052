// The end of a gate/up matvec CTA in a gated MLP (kernels.hpp SiluOut): the
// CTA that completes a 32-row block of both gate and up quantizes
// silu(gate) * up for the down projection, so no kernel of its own runs
// between the two matvecs.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "plugins/quant-gguf/cuda/kernels.hpp"
#include "plugins/quant-gguf/cuda/quantize_x.cuh"

namespace aph::gguf::cuda {

// Every thread of the CTA calls, after its rows are stored by lane 0 of
// each warp; the CTA's rows start at row0 (a CTA holds kRowsPerCta rows of
// one target).
template <typename T, int kRowsPerCta>
__device__ __forceinline__ void silu_block_when_last(const SiluOut& o, int64_t row0) {
  static_assert(32 % kRowsPerCta == 0, "a CTA's rows lie in one 32-row block");
  constexpr int kArrivals = 2 * (32 / kRowsPerCta);  // gate's CTAs and up's
  __shared__ int last;
  // The rows' stores (lane 0 of each warp made them: store_rows) are
  // ordered before the count that tells the last CTA to read them; the other
  // lanes stored nothing and need no fence.
  if (threadIdx.x % 32 == 0) __threadfence();
  __syncthreads();
  const int64_t blk = row0 / 32;
  if (threadIdx.x == 0) {
    last = atomicAdd(o.arrivals + blk, 1) == kArrivals - 1;
    // Every CTA of the block has counted: the next launch finds zero.
    if (last) o.arrivals[blk] = 0;
  }
  __syncthreads();
  if (!last || threadIdx.x >= 32) return;
  __threadfence();
  // Lanes 0-3 take 8 elements each (quantize_slot8: the whole warp calls).
  const int lane = static_cast<int>(threadIdx.x);
  const bool live = lane < 4;
  const int64_t slot = 4 * blk + (live ? lane : 0);
  float v[8] = {};
  if (live) {
    // From L2 (ld.cg): other SMs wrote most of these rows during this launch.
    const uint4 g = __ldcg(reinterpret_cast<const uint4*>(static_cast<const T*>(o.gate) + 8 * slot));
    const uint4 u = __ldcg(reinterpret_cast<const uint4*>(static_cast<const T*>(o.up) + 8 * slot));
    const T* gh = reinterpret_cast<const T*>(&g);
    const T* uh = reinterpret_cast<const T*>(&u);
#pragma unroll
    for (int j = 0; j < 8; ++j) v[j] = silu_mul_rounded<T>(to_float(gh[j]), to_float(uh[j]));
  }
  quantize_slot8(v, live, slot, SmemX{o.q, o.d, o.s});
}

}  // namespace aph::gguf::cuda
