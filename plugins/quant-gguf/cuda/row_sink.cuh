// The store at the end of a matvec row (kernels.hpp RowSink): y, or RoPE
// and the paged KV cache for linear_forward_qkv_rope_kv, so that the
// attention after a q/k/v projection needs no kernel of its own to rotate
// and store this step's keys and values. The rotation and the cache
// conversion are the host's own (core/common/rope_pair.cuh,
// core/attention/cuda/kv_types.cuh): the cache gets the bytes the host's KV
// write would have stored.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "aphrodite/plugin.h"
#include "core/attention/cuda/kv_types.cuh"
#include "core/common/rope_pair.cuh"
#include "plugins/quant-gguf/cuda/device_math.cuh"
#include "plugins/quant-gguf/cuda/kernels.hpp"

namespace aph::gguf::cuda {

// One cache element of the runtime kv_dtype.
template <typename T>
__device__ __forceinline__ void store_kv(const RopeKv& kv, uint8_t* cache, int64_t slot, int64_t row, float v,
                                         float scale) {
  namespace at = ::aph::attention::cuda;
  const int64_t e = slot * kv.kv_width + row;
  switch (kv.kv_dtype) {
    case APH_DTYPE_F16: return at::store_cache_elem<T, __half>(v, cache + 2 * e, scale);
    case APH_DTYPE_BF16: return at::store_cache_elem<T, __nv_bfloat16>(v, cache + 2 * e, scale);
    case APH_DTYPE_F8_E4M3: return at::store_cache_elem<T, at::Fp8E4M3>(v, cache + e, scale);
    case APH_DTYPE_F8_E5M2: return at::store_cache_elem<T, at::Fp8E5M2>(v, cache + e, scale);
    default: return;  // the host checked the dtype
  }
}

// What a sink reads of the step's inputs for token 0 of a row: its cache
// slot and its pair's cos and sin. The positions, slots and frequencies are
// written before the step's first kernel, so a matvec loads these before it
// waits for its producer (as the host's rope + KV write kernel does), and its
// tail after the dot products has no global load left to wait for.
struct SinkInputs {
  float2 cs = make_float2(1.0f, 0.0f);
  int64_t slot = -1;
};
__device__ __forceinline__ SinkInputs sink_inputs(const MatvecTarget& t, const RopeKv& kv, int64_t row) {
  SinkInputs in;
  if (t.sink == RowSink::kY || row >= t.n) return in;
  if (t.sink != RowSink::kRopeQ) in.slot = kv.slots[0];
  const int d = static_cast<int>(row % kv.head_dim);
  if (t.sink != RowSink::kCacheV && d < kv.rotary_dim)  // kRopeQ, kRopeK
    in.cs = rope::cos_sin(static_cast<float>(kv.positions[0]), kv.inv_freq, d / 2, kv.mscale);
  return in;
}

// Row `row` of target t for token i: `own` is its sum (bias included),
// `partner` the sum of row ^ 1 (the other element of its RoPE pair; read
// only by the rotating sinks). Both are rounded to T first, as y would hold
// them. pre: sink_inputs of this row, for token 0 (nullptr: load them here).
template <typename T>
__device__ __forceinline__ void sink_row(const MatvecTarget& t, const RopeKv& kv, int i, int64_t row, float own,
                                         float partner, const SinkInputs* pre = nullptr) {
  const bool early = pre != nullptr && i == 0;
  const float v = to_float(from_float<T>(own));
  if (t.sink == RowSink::kY) {
    static_cast<T*>(t.y)[i * t.n + row] = from_float<T>(own);
    return;
  }
  if (t.sink == RowSink::kCacheV) {
    const int64_t slot = early ? pre->slot : kv.slots[i];
    if (slot >= 0 && slot < kv.total_slots) store_kv<T>(kv, kv.v_cache, slot, row, v, kv.v_scale);
    return;
  }
  float r = v;
  const int d = static_cast<int>(row % kv.head_dim);
  if (d < kv.rotary_dim) {
    const int p = d / 2;
    const float2 cs = early ? pre->cs : rope::cos_sin(static_cast<float>(kv.positions[i]), kv.inv_freq, p, kv.mscale);
    const rope::Pair pr = rope::pair_with(p, kv.rotary_dim / 2, true, cs);
    const float w = to_float(from_float<T>(partner));
    const bool even = (d & 1) == 0;
    const float2 rot = rope::rotate(pr, even ? v : w, even ? w : v);
    r = even ? rot.x : rot.y;
  }
  if (t.sink == RowSink::kRopeQ) {
    static_cast<T*>(t.y)[i * t.n + row] = from_float<T>(r);
  } else {
    const int64_t slot = early ? pre->slot : kv.slots[i];
    if (slot >= 0 && slot < kv.total_slots) store_kv<T>(kv, kv.k_cache, slot, row, r, kv.k_scale);
  }
}

}  // namespace aph::gguf::cuda
