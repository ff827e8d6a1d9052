// The rows of a batch-1 q/k/v GEMV stored where the attention reads them
// (kernels.hpp GemvRopeKv): q rotated into q_out, k rotated and v as they are
// into the paged cache. The KV write with RoPE then has nothing to do, and
// that kernel, a dependent launch a layer, does not run. The rotation and the
// cache bytes are the host's own (core/common/rope_pair.cuh,
// core/attention/cuda/kv_types.cuh).
#pragma once

#include <cstdint>

#include "core/attention/cuda/kv_types.cuh"
#include "core/common/rope_pair.cuh"
#include "core/ops/cuda_math.cuh"
#include "core/ops/kernels.hpp"

namespace aph::ops::kernels {

// The weight row of output o, where outputs are numbered in pair order (o and
// o ^ 1 are a rotary pair, so two adjacent row slots of a CTA hold both):
// for HF order element (i, j) of a head's pairs is row i + j * head_dim / 2.
// v rows, and every row in GGUF order, are their own.
__device__ __forceinline__ int64_t rope_kv_row(const GemvRopeKv& rk, int64_t o) {
  if (rk.interleaved || o >= rk.q_rows + rk.k_rows) return o;
  const int64_t within = o % rk.head_dim;
  return o - within + (within & 1) * (rk.head_dim / 2) + within / 2;
}

// What the store of output o reads of the step's inputs: its pair's cos and
// sin and the token's cache slot. They are written before the step's first
// kernel, so the GEMV loads them before it waits for its producer and its
// tail after the dot products has no global load left.
struct RopeKvInputs {
  float2 cs = make_float2(1.0f, 0.0f);
  int64_t slot = -1;
};
__device__ __forceinline__ RopeKvInputs rope_kv_inputs(const GemvRopeKv& rk, int64_t o) {
  RopeKvInputs in;
  const int64_t qk = rk.q_rows + rk.k_rows;
  if (o >= qk + rk.k_rows) return in;
  if (o >= rk.q_rows) in.slot = rk.slot_mapping[0];
  if (o < qk) in.cs = rope::cos_sin(static_cast<float>(rk.positions[0]), rk.inv_freq, (o % rk.head_dim) / 2, rk.mscale);
  return in;
}

// Output o (weight row `row`) with its sum `own` and its pair's `partner`,
// both already rounded to T as y would hold them.
template <typename T>
__device__ __forceinline__ void store_rope_kv(const GemvRopeKv& rk, const RopeKvInputs& in, int64_t o, int64_t row,
                                              float own, float partner) {
  namespace at = ::aph::attention::cuda;
  const int64_t qk = rk.q_rows + rk.k_rows;
  const bool cached = in.slot >= 0 && in.slot < rk.total_slots;
  if (o >= qk) {
    if (cached) {
      at::store_cache_elem_of<T>(rk.kv_dtype, static_cast<uint8_t*>(rk.v_cache), in.slot * rk.k_rows + (row - qk),
                                 own, rk.v_scale);
    }
    return;
  }
  const int within = static_cast<int>(o % rk.head_dim);
  const bool first = (within & 1) == 0;  // element a of its pair
  const rope::Pair p = rope::pair_with(within / 2, rk.head_dim / 2, rk.interleaved, in.cs);
  const float2 rot = rope::rotate(p, first ? own : partner, first ? partner : own);
  const float r = first ? rot.x : rot.y;
  if (o < rk.q_rows) {
    static_cast<T*>(rk.q_out)[row] = from_f<T>(r);
  } else if (cached) {
    at::store_cache_elem_of<T>(rk.kv_dtype, static_cast<uint8_t*>(rk.k_cache),
                               in.slot * rk.k_rows + (row - rk.q_rows), r, rk.k_scale);
  }
}

}  // namespace aph::ops::kernels
