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
//
// The bulk form (APH_GGUF_BULK_MATVEC=1, batch 1; off until measured on the
// H200, written in stop 24 without a GPU): the bytes a warp has in flight
// are bounded by its registers above, and the big k-quant matvecs ran at
// 3.0-3.2 TB/s against the 4.28 of a copy (stop 20's trace), where the
// dense GEMV reaches the copy's speed. There, each warp of a persistent grid
// takes whole rows and keeps a ring of them in shared memory, each row one
// cp.async.bulk (the Hopper copy engine) completing on an mbarrier: a few
// rows a warp in flight cost no registers, and the first ones are issued
// before the producer wait, since the weights do not depend on it.
//
// With raw x (APH_GGUF_BULK_MATVEC=2, stop 25, not measured either) the bulk
// grid also quantizes x itself, each CTA once into its shared memory, after
// RMSNorm(residual + delta) or silu(gate) * up where the linear asks for it
// (quantize_x.cuh's matvec_x): the separate norm-and-quantize and quantize
// kernels (65 and 64 launches, 310 us of busy time in the 8B Q4_K_M's step at
// stop 20's trace) no longer run. The register form measured slower that way
// (matvec_kernel's note): each of its many CTAs quantized x with its weights
// waiting, where a one-wave bulk CTA quantizes once while its first rows land.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "core/common/cuda_bulk_ring.cuh"
#include "core/common/cuda_pdl.cuh"
#include "plugins/quant-gguf/cuda/device_math.cuh"
#include "plugins/quant-gguf/cuda/matvec_fast.hpp"
#include "plugins/quant-gguf/cuda/matvec_targets.cuh"
#include "plugins/quant-gguf/cuda/quantize_x.cuh"
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

// y[i, row0 + r] from the lane sums (all lanes call: warp shuffles).
template <int MT, int R, typename T>
__device__ __forceinline__ void store_rows(float (&acc)[R][MT], int m, int64_t n, int64_t row0,
                                           const float* bias, T* y) {
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int i = 0; i < MT; ++i) {
      if (i < m) {  // uniform: m is a kernel argument
        const float v = warp_sum(acc[r][i]);
        if (threadIdx.x % 32 == 0 && row0 + r < n)
          y[i * n + row0 + r] = from_float<T>(v + (bias ? bias[row0 + r] : 0.0f));
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
// kRaw (m == 1): x.raw quantized by each CTA into its dynamic shared
// memory; only the bulk form's fallback (a weight pointer the copy engine
// cannot take) launches it.
template <class P, int MT, int R, typename T, bool kRaw = false>
__global__ void __launch_bounds__(kWarps * 32, MT > 1 ? 4 : P::kMinCtas)
    matvec_kernel(const MatvecTargets targets, int64_t nb, const MatvecX x, int m) {
  int64_t cta = 0;
  const MatvecTarget& t = target_at(targets, blockIdx.x, &cta);
  const int64_t n = t.n;
  constexpr int kPerStep = 32 / P::kLanes;
  const int lane = threadIdx.x % 32;
  const int slot = lane / P::kLanes, part = lane % P::kLanes;
  const int64_t row0 = (cta * kWarps + threadIdx.x / 32) * R;
  if (!kRaw && row0 >= n) return;  // the whole warp; it touches nothing (raw: the CTA quantizes x first)
  // Launched as a dependent: this CTA may start while the quantization
  // before it runs, but reads nothing before it has finished. (Loading or
  // prefetching the first weights before this wait measured slower on the
  // H200: more registers in the loop, more L2 requests.) No
  // allow_dependents(): CTAs of the next kernel parked on the SMs early made
  // this grid's last CTAs start late.
  const XCodes xc = matvec_x<kRaw, T>(x, 256 * nb);
  if (kRaw && row0 >= n) return;
  const uint8_t* wrow[R];
  row_pointers<P, R>(t.w, n, nb, row0, wrow);

  float acc[R][MT] = {};
  for (int64_t b0 = 0; b0 < nb; b0 += kPerStep) {
    const int64_t blk = b0 + slot;
    if (blk < nb) {  // this lane only: no shuffles inside the loop
      typename P::W wv[R];
      load_step<P, R>(wrow, nb, blk, part, wv);
      step<P, MT, R>(wv, blk, part, xc.q, xc.d, xc.s, 256 * nb, m, acc);
    }
  }
  store_rows<MT, R>(acc, m, n, row0, t.bias, static_cast<T*>(t.y));
}


constexpr int kBulkWarps = 4;
constexpr int kBulkMaxStages = 8;
constexpr int64_t kBulkWarpBytes = 24 << 10;  // a warp's ring: rows of up to this many bytes in all
// Raw x: the longest row a bulk CTA quantizes (its codes, scales and sums
// take 19.7 KB of shared memory at k = 14336, the 8B's down projection).
constexpr int64_t kBulkRawMaxK = 16384;

// Where a raw x's codes end in a bulk CTA's shared memory (the rings follow).
__host__ __device__ constexpr int64_t bulk_x_bytes(bool raw, int64_t k) {
  return raw ? (smem_x_bytes(k) + 127) / 128 * 128 : 0;
}

// Rows a warp's ring holds: as many as fit kBulkWarpBytes (less the warp's
// share of a raw x), 2 to kBulkMaxStages (a row of 4096 Q4_K is 2304 bytes:
// 8; of 14336 Q6_K 11760: 2; of 14336 Q4_K with raw x 8064: 2, so that two
// CTAs still fit an SM).
int bulk_stages(int64_t row_bytes, int64_t x_bytes) {
  const int64_t ring = kBulkWarpBytes - x_bytes / kBulkWarps;
  return static_cast<int>(std::clamp<int64_t>(ring / row_bytes, 2, kBulkMaxStages));
}

// y = W x at batch 1, x quantized by the kernel before (or, kRaw, by each
// CTA into the start of its shared memory, after the first rows' copies are
// issued). Warp g of the grid takes rows g, g + warps, ... of all targets in
// turn (plan_targets with one row an item); its lane 0 copies each into the
// warp's ring `stages` rows ahead.
template <class P, typename T, bool kRaw>
__global__ void __launch_bounds__(kBulkWarps * 32)
    matvec_bulk_kernel(const MatvecTargets targets, int64_t nb, const MatvecX x, int stages) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  // The copy engine and transaction-counting mbarriers are sm_90's: launch_bulk
  // launches this form only on such a GPU.
#else
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ uint64_t arrived[kBulkWarps][kBulkMaxStages];
  constexpr int kPerStep = 32 / P::kLanes;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int slot_l = lane / P::kLanes, part = lane % P::kLanes;
  const int64_t rb = P::row_bytes(nb);
  const int64_t rows = targets.first_cta[targets.count];
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kBulkWarps + warp;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kBulkWarps;
  const cuda_bulk::WarpRing ring{smem + bulk_x_bytes(kRaw, 256 * nb) + static_cast<int64_t>(warp) * stages * rb,
                                  arrived[warp], stages, rb};
  ring.init(lane);
  // Lane 0: the warp's i-th row into slot i % stages.
  auto issue = [&](int64_t i) {
    const int64_t v = first + i * warps;
    if (v >= rows) return;
    int64_t row = 0;
    const MatvecTarget& t = target_at(targets, static_cast<unsigned>(v), &row);
    ring.fill(i, t.w + row * rb, static_cast<uint32_t>(rb));
  };
  if (lane == 0)
    for (int i = 0; i < stages; ++i) issue(i);  // the weights do not wait for the producer
  const XCodes xc = matvec_x<kRaw, T>(x, 256 * nb);  // raw: the whole CTA, ending at a barrier
  for (int64_t i = 0; first + i * warps < rows; ++i) {
    const uint8_t* wrow = ring.wait(i);
    int64_t row = 0;
    const MatvecTarget& t = target_at(targets, static_cast<unsigned>(first + i * warps), &row);
    float acc[1][1] = {};
    for (int64_t b0 = 0; b0 < nb; b0 += kPerStep) {
      const int64_t blk = b0 + slot_l;
      if (blk < nb) {
        typename P::W wv[1];
        P::load_w(wrow, nb, blk, part, wv[0], StagedWeights{});
        step<P, 1, 1>(wv, blk, part, xc.q, xc.d, xc.s, 256 * nb, 1, acc);
      }
    }
    store_rows<1, 1>(acc, 1, t.n, row, t.bias, static_cast<T*>(t.y));
    __syncwarp();  // every lane is done with the slot
    if (lane == 0) issue(i + stages);
  }
#endif
}

// APH_GGUF_BULK_MATVEC: 0 (default) the register form; 1 batch-1 launches
// take the bulk form; 2 that, and the bulk form takes raw x too.
int bulk_mode() {
  static const int mode = [] {
    const char* v = std::getenv("APH_GGUF_BULK_MATVEC");
    return v == nullptr ? 0 : std::clamp(std::atoi(v), 0, 2);
  }();
  return mode;
}

// The bulk form, or cudaErrorNotSupported on a GPU before sm_90, when a
// target's rows are not 16-byte aligned (the copy engine needs it) or when
// its ring does not fit.
template <class P, typename T, bool kRaw>
cudaError_t launch_bulk(const MatvecTarget* targets, int count, int64_t nb, const MatvecX& x, int sm_count,
                        cudaStream_t s) {
  const int64_t rb = P::row_bytes(nb);
  if (!cuda_bulk::available() || rb % 16 != 0) return cudaErrorNotSupported;
  for (int i = 0; i < count; ++i)
    if (reinterpret_cast<uintptr_t>(targets[i].w) % 16 != 0) return cudaErrorNotSupported;
  const MatvecTargets ts = plan_targets(targets, count, 1);
  const int64_t x_bytes = bulk_x_bytes(kRaw, 256 * nb);
  const int stages = bulk_stages(rb, x_bytes);
  const size_t smem = static_cast<size_t>(x_bytes + kBulkWarps * stages * rb);
  auto kernel = matvec_bulk_kernel<P, T, kRaw>;
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)) !=
      cudaSuccess) {
    cudaGetLastError();
    return cudaErrorNotSupported;
  }
  const unsigned items = (ts.first_cta[count] + kBulkWarps - 1) / kBulkWarps;
  const unsigned grid = resident_grid(kernel, kBulkWarps * 32, smem, sm_count, items);
  return cuda_pdl::launch_dependent(kernel, dim3(grid), dim3(kBulkWarps * 32), smem, s, ts, nb, x, stages);
}

template <class P, typename T>
cudaError_t launch_typed(const MatvecTarget* targets, int count, int64_t nb, const MatvecX& x, int m,
                         int sm_count, cudaStream_t s) {
  constexpr int R = kRowsPerWarp;
  if (x.raw) {  // fast_matvec_takes_raw_x said yes: m == 1, the bulk form on
    if (m != 1) return cudaErrorInvalidValue;
    const cudaError_t e = launch_bulk<P, T, true>(targets, count, nb, x, sm_count, s);
    if (e != cudaErrorNotSupported) return e;
    const MatvecTargets ts = plan_targets(targets, count, R * kWarps);
    auto kernel = matvec_kernel<P, 1, R, T, true>;
    const int smem = static_cast<int>(smem_x_bytes(256 * nb));
    const cudaError_t attr = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (attr != cudaSuccess) return attr;
    return cuda_pdl::launch_dependent(kernel, dim3(ts.first_cta[count]), dim3(kWarps * 32), smem, s, ts, nb, x, 1);
  }
  if (m == 1 && bulk_mode() >= 1) {
    const cudaError_t e = launch_bulk<P, T, false>(targets, count, nb, x, sm_count, s);
    if (e != cudaErrorNotSupported) return e;
  }
  const MatvecTargets ts = plan_targets(targets, count, R * kWarps);
  const dim3 grid(ts.first_cta[count]), block(kWarps * 32);
  if (m > 1) return cuda_pdl::launch_dependent(matvec_kernel<P, 8, R, T>, grid, block, 0, s, ts, nb, x, m);
  return cuda_pdl::launch_dependent(matvec_kernel<P, 1, R, T>, grid, block, 0, s, ts, nb, x, 1);
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

bool fast_matvec_takes_raw_x(uint32_t type, int64_t k) {
  return has_fast_matvec(type) && bulk_mode() == 2 && k % 256 == 0 && k <= kBulkRawMaxK && cuda_bulk::available();
}

int launch_fast_matvec_multi(uint32_t type, const MatvecTarget* targets, int count, int64_t k,
                             const MatvecX& x, int64_t m, bool bf16, int sm_count, void* stream) {
  if (k % 256 != 0) return static_cast<int>(cudaErrorInvalidValue);  // m, count, n: checked by the caller
  auto s = static_cast<cudaStream_t>(stream);
  const int mi = static_cast<int>(m);
  cudaError_t rc = cudaErrorInvalidValue;
  dispatch_fast(type, [&](auto p) {
    using P = decltype(p);
    if (bf16)
      rc = launch_typed<P, __nv_bfloat16>(targets, count, k / 256, x, mi, sm_count, s);
    else
      rc = launch_typed<P, __half>(targets, count, k / 256, x, mi, sm_count, s);
  });
  return static_cast<int>(rc);
}

}  // namespace aph::gguf::cuda
