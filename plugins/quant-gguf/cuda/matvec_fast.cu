// Fast small-batch matvec (m <= 8) for the k-quants of vecdot.cuh. A warp
// computes kRowsPerWarp output rows; each step it covers 32 / kLanes
// consecutive blocks of each row, kLanes lanes per block, all of a step's
// weight loads issued before its arithmetic. At batch 1 the speed is the
// weight bytes in flight per SM, which the registers bound: two rows of one
// step per warp measured best on the H200 (more steps or rows in flight per
// warp cost more occupancy than they gained, and splitting a row's blocks
// between the warps of a CTA gained nothing).
//
// Launched as a dependent (core/common/cuda_pdl.cuh), so that its launch
// overlaps the activation quantization before it.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/common/cuda_device_limits.hpp"
#include "core/common/cuda_pdl.cuh"
#include "core/common/env_flag.hpp"
#include "plugins/quant-gguf/cuda/device_math.cuh"
#include "plugins/quant-gguf/cuda/matvec_fast.hpp"
#include "plugins/quant-gguf/cuda/matvec_targets.cuh"
#include "plugins/quant-gguf/cuda/quantize_x.cuh"
#include "plugins/quant-gguf/cuda/row_sink.cuh"
#include "plugins/quant-gguf/cuda/vecdot.cuh"

namespace aph::gguf::cuda {

namespace {

constexpr int kWarps = 4;  // per CTA
constexpr int kRowsPerWarp = 2;

// One step of R rows: weights wv already loaded for block blk; adds the
// dot products with the m <= MT activation rows to acc.
template <class P, int MT, int R>
__device__ __forceinline__ void step(const typename P::W (&wv)[R], int64_t blk, int part,
                                     const int8_t* xq, const float* xd, const float* xs, int64_t k,
                                     int m, float (&acc)[R][MT]) {
  if constexpr (MT == 1) {
    // Unpack next to each use: holding every row's codes costs registers.
    typename P::X xv;
    P::load_x(xq, xd, xs, blk, part, xv);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      typename P::C c;
      P::unpack(wv[r], part, c);
      acc[r][0] += P::dot(c, xv);
    }
  } else {
    // Unpack once for all activation rows.
    typename P::C c[R];
#pragma unroll
    for (int r = 0; r < R; ++r) P::unpack(wv[r], part, c[r]);
#pragma unroll
    for (int i = 0; i < MT; ++i) {
      if (i < m) {
        typename P::X xv;
        P::load_x(xq + i * k, xd + i * (k / 32), xs + i * (k / 16), blk, part, xv);
#pragma unroll
        for (int r = 0; r < R; ++r) acc[r][i] += P::dot(c[r], xv);
      }
    }
  }
}

template <class P, int R>
__device__ __forceinline__ void load_step(const uint8_t* const (&wrow)[R], int64_t nb, int64_t blk,
                                          int part, typename P::W (&wv)[R]) {
#pragma unroll
  for (int r = 0; r < R; ++r) P::load_w(wrow[r], nb, blk, part, wv[r]);
}

// Rows row0 .. row0 + R - 1 of token i from the lane sums, into t's sink
// (all lanes call: warp shuffles). With R == 2 a warp holds both rows of a
// RoPE pair (row0 is even).
template <int MT, int R, typename T>
__device__ __forceinline__ void store_rows(float (&acc)[R][MT], int m, const MatvecTarget& t, const RopeKv& kv,
                                           int64_t row0, const SinkInputs (&pre)[R]) {
#pragma unroll
  for (int i = 0; i < MT; ++i) {
    if (i < m) {  // uniform: m is a kernel argument
      float v[R];
#pragma unroll
      for (int r = 0; r < R; ++r)
        v[r] = warp_sum(acc[r][i]) + (t.bias && row0 + r < t.n ? t.bias[row0 + r] : 0.0f);
      if (threadIdx.x % 32 == 0) {
#pragma unroll
        for (int r = 0; r < R; ++r)
          if (row0 + r < t.n) sink_row<T>(t, kv, i, row0 + r, v[r], v[r ^ (R - 1)], &pre[r]);
      }
    }
  }
}

template <class P, int R>
__device__ __forceinline__ void row_pointers(const uint8_t* w, int64_t n, int64_t nb, int64_t row0,
                                             const uint8_t* (&wrow)[R]) {
  // Rows past n (last warp only) re-read row n-1 and are never stored.
#pragma unroll
  for (int r = 0; r < R; ++r) wrow[r] = w + min(row0 + r, n - 1) * P::row_bytes(nb);
}

// y = W · x for the m <= MT activation rows that quantize_act_kernel wrote,
// for each target over its range of CTAs. m == 1: P::kMinCtas CTAs per SM
// bound the registers (what measured best per type); m > 1: at most 128
// registers (4 CTAs per SM) rather than every activation row's loads hoisted
// at once. (x quantized in the CTA, MatvecX::raw, measured slower for every
// 8B shape on the H200, in CTAs of 4 warps or in one CTA per SM: Q4_K
// 4096x4096 7.3 us against 6.1 for kernel + matvec, 1024x4096 6.6 against
// 4.4, 4096x14336 19.6 against 13.1; the 8B decoded 321 tok/s against 377.)
template <class P, int MT, int R, typename T, int U = 1, bool kEarly = false>
__global__ void __launch_bounds__(kWarps * 32, MT > 1 ? 4 : (U > 1 ? P::kWideCtas : P::kMinCtas))
    matvec_kernel(const MatvecTargets targets, int64_t nb, const MatvecX x, int m) {
  if (x.release_dependents) cuda_pdl::allow_dependents();  // the attention (MatvecX)
  int64_t cta = 0;
  const MatvecTarget& t = target_at(targets, blockIdx.x, &cta);
  const int64_t n = t.n;
  constexpr int kPerStep = 32 / P::kLanes;
  const int lane = threadIdx.x % 32;
  const int slot = lane / P::kLanes, part = lane % P::kLanes;
  const int64_t row0 = (cta * kWarps + threadIdx.x / 32) * R;
  if (row0 >= n) return;  // the whole warp; it touches nothing
  // Launched as a dependent: this CTA may start while the quantization
  // before it runs, but reads nothing before it has finished. (Loading or
  // prefetching the first weights before this wait measured slower on the
  // H200: more registers in the loop, more L2 requests; so did one bulk L2
  // prefetch of the warp's rows on the H100.) No
  // allow_dependents() but before the attention: CTAs of the next kernel
  // parked on the SMs early made this grid's last CTAs start late.
  const uint8_t* wrow[R];
  row_pointers<P, R>(t.w, n, nb, row0, wrow);
  SinkInputs pre[R];
  if (threadIdx.x % 32 == 0)
#pragma unroll
    for (int r = 0; r < R; ++r) pre[r] = sink_inputs(t, x.kv, row0 + r);
  // U steps' weights are loaded before the first is used: one round trip
  // to DRAM for U steps.
  typename P::W wv[U][R];
  auto load_steps = [&](int64_t b0) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t blk = b0 + u * kPerStep + slot;
      if (blk < nb) load_step<P, R>(wrow, nb, blk, part, wv[u]);  // this lane only: no shuffles
    }
  };
  // kEarly (the wide form, APH_GGUF_WIDE_EARLY): the first U steps are
  // requested before the wait for x (the weights are no kernel's output), so
  // their round trip overlaps the kernels before this one. H100, 8B Q4_K_M,
  // medians of 2 interleaved runs: 397.4 tok/s after 512 against 389.0
  // without, 348.5 at 8k against 343.4. The narrow form's launches (q/k,
  // gate/up) lost that way: 388.2 against 392.3 after 512, 340.2 against
  // 342.5 at 8k (stop 38; as on the H200 at stop 22).
  if constexpr (kEarly) load_steps(0);
  const XCodes xc = matvec_x<false, T>(x, 256 * nb);

  float acc[R][MT] = {};
  for (int64_t b0 = 0; b0 < nb; b0 += kPerStep * U) {
    if (!kEarly || b0 > 0) load_steps(b0);
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t blk = b0 + u * kPerStep + slot;
      if (blk < nb) step<P, MT, R>(wv[u], blk, part, xc.q, xc.d, xc.s, 256 * nb, m, acc);
    }
  }
  store_rows<MT, R, T>(acc, m, t, x.kv, row0, pre);
}

// APH_GGUF_MATVEC_WIDE (on by default): at batch 1, a launch that fits one
// wave of the wide form (P::kWideCtas CTAs an SM: two steps of weights in
// flight a warp, more registers) and has more than one step a row takes it.
// The 8B's v and o warps (k = 4096: two steps) then wait on DRAM once, not
// once a step; its q/k (640 CTAs) and gate/up (3,584) keep the narrow form,
// whose occupancy their waves need (every launch wide: 371.4 against 383.8
// tok/s after 512, H100, stop 38).
template <class P>
bool wide_pays(int64_t ctas, int64_t nb) {
  static const bool on = env_flag("APH_GGUF_MATVEC_WIDE", true);
  constexpr int kPerStep = 32 / P::kLanes;
  cuda_device::Limits limits;
  if (!on || P::kWideCtas == 0 || nb <= kPerStep || cuda_device::current_limits(&limits) != cudaSuccess) return false;
  return ctas <= static_cast<int64_t>(limits.sms) * P::kWideCtas;
}

template <class P, typename T, int R>
cudaError_t launch_rows(const MatvecTarget* targets, int count, int64_t nb, const MatvecX& x, int m, cudaStream_t s) {
  const MatvecTargets ts = plan_targets(targets, count, R * kWarps);
  const dim3 grid(ts.first_cta[count]), block(kWarps * 32);
  if constexpr (R == kRowsPerWarp) {  // one row a warp is for batch 1 only
    if (m > 1) return cuda_pdl::launch_dependent(matvec_kernel<P, 8, R, T>, grid, block, 0, s, ts, nb, x, m);
  }
  if constexpr (P::kWideCtas > 0)
    if (wide_pays<P>(grid.x, nb)) {
      static const bool early = env_flag("APH_GGUF_WIDE_EARLY", true);
      if (early) return cuda_pdl::launch_dependent(matvec_kernel<P, 1, R, T, 2, true>, grid, block, 0, s, ts, nb, x, 1);
      return cuda_pdl::launch_dependent(matvec_kernel<P, 1, R, T, 2>, grid, block, 0, s, ts, nb, x, 1);
    }
  return cuda_pdl::launch_dependent(matvec_kernel<P, 1, R, T>, grid, block, 0, s, ts, nb, x, 1);
}

// APH_GGUF_SINGLE_ROWS (docs/CONFIG.md, on by default): at batch 1, a launch
// whose grid at kRowsPerWarp rows a warp has fewer CTAs than the GPU has SMs
// (the 8B's v projection, 1024 rows: 128 CTAs on 132 SMs) takes one row a
// warp, twice the CTAs, so that every SM streams some of its bytes. H100,
// 8B Q4_K_M, medians of 2 interleaved runs: 387.4 tok/s after 512 tokens
// against 385.9 off, 330.0 at 8k against 328.4.
bool single_rows_pay(const MatvecTarget* targets, int count) {
  static const bool on = env_flag("APH_GGUF_SINGLE_ROWS", true);
  if (!on) return false;
  cuda_device::Limits limits;
  if (cuda_device::current_limits(&limits) != cudaSuccess) return false;
  int64_t ctas = 0;
  for (int i = 0; i < count; ++i) ctas += (targets[i].n + kRowsPerWarp * kWarps - 1) / (kRowsPerWarp * kWarps);
  return ctas < limits.sms;
}

bool pairs_rows(const MatvecTarget* targets, int count) {
  for (int i = 0; i < count; ++i)
    if (sink_pairs_rows(targets[i].sink)) return true;
  return false;
}

template <class P, typename T>
cudaError_t launch_typed(const MatvecTarget* targets, int count, int64_t nb, const MatvecX& x, int m,
                         cudaStream_t s) {
  if (x.raw) return cudaErrorInvalidValue;  // fits_in_cta_quantization says no for these types
  // A RoPE pair's rows in one warp: two rows a warp.
  if (m == 1 && !pairs_rows(targets, count) && single_rows_pay(targets, count))
    return launch_rows<P, T, 1>(targets, count, nb, x, 1, s);
  return launch_rows<P, T, kRowsPerWarp>(targets, count, nb, x, m, s);
}

// Calls f(P{}) for a type with has_fast_matvec.
template <typename F>
void dispatch_fast(uint32_t type, F&& f) {
  switch (type) {
    case 12:
      f(VecQ4K{});
      break;
    case 13:
      f(VecQ5K{});
      break;
    case 14:
      f(VecQ6K{});
      break;
    default:
      break;
  }
}

}  // namespace

int launch_fast_matvec_multi(uint32_t type, const MatvecTarget* targets, int count, int64_t k,
                             const MatvecX& x, int64_t m, bool bf16, void* stream) {
  if (k % 256 != 0) return static_cast<int>(cudaErrorInvalidValue);  // m, count, n: checked by the caller
  auto s = static_cast<cudaStream_t>(stream);
  const int mi = static_cast<int>(m);
  cudaError_t rc = cudaErrorInvalidValue;
  dispatch_fast(type, [&](auto p) {
    using P = decltype(p);
    if (bf16)
      rc = launch_typed<P, __nv_bfloat16>(targets, count, k / 256, x, mi, s);
    else
      rc = launch_typed<P, __half>(targets, count, k / 256, x, mi, s);
  });
  return static_cast<int>(rc);
}

}  // namespace aph::gguf::cuda
