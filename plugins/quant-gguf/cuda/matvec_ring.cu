// The batch-1 k-quant matvec's ring form (APH_GGUF_MATVEC_RING, opt-in).
//
// The register form (matvec_fast.cu) keeps one step of a warp's rows in
// flight (two with its wide form), in registers: at batch 1 its speed is the
// weight bytes in flight, and more steps a warp cost occupancy. Here a grid
// of resident CTAs has each warp walk its rows (two at a time, the register
// form's rows of every work item the CTA takes) as one stream of steps,
// copied with cp.async into a ring of `S` stages in shared memory: S - 1
// steps are in flight without registers, across row boundaries, and the
// first S - 1 are requested before the wait for x (the weights are no
// kernel's output). A lane copies and reads back its own 16-byte pieces
// (load_w's, vecdot.cuh), so no barrier is needed; the arithmetic and the
// row stores are the register form's (matvec_warp_rows.cuh).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "core/common/cuda_async_copy.cuh"
#include "core/common/cuda_device_limits.hpp"
#include "core/common/cuda_pdl.cuh"
#include "core/common/env_flag.hpp"
#include "plugins/quant-gguf/cuda/matvec_ring.hpp"
#include "plugins/quant-gguf/cuda/matvec_targets.cuh"
#include "plugins/quant-gguf/cuda/matvec_warp_rows.cuh"
#include "plugins/quant-gguf/cuda/quantize_x.cuh"

namespace aph::gguf::cuda {

namespace {

using namespace warp_rows;
constexpr int R = kRowsPerWarp;  // two rows a warp: a RoPE pair stays in one warp
constexpr int kPieceStride = 32 * 16;  // a piece of a stage: 16 bytes a lane

// load_w's piece sources for the ring: copy piece i of a step into the
// lane's slot of a stage, or read it back from there. Within a stage, piece
// i sits at i * kPieceStride and a lane's 16 bytes at 16 * lane, so a warp's
// accesses of one piece cover 512 consecutive bytes (no bank is hit twice
// in a phase).
struct CopyPieces {
  uint8_t* dst;
  int i = 0;
  __device__ int4 operator()(const uint8_t* src) {
    cuda_async::cp_async_16_weights(dst + kPieceStride * i++, src);
    return make_int4(0, 0, 0, 0);
  }
};
struct StagedPieces {
  const uint8_t* src;
  int i = 0;
  __device__ int4 operator()(const uint8_t*) { return *reinterpret_cast<const int4*>(src + kPieceStride * i++); }
};

template <class P>
__host__ __device__ constexpr int stage_bytes() {
  return R * P::kRingPieces * kPieceStride;
}
template <class P, int S>
__host__ __device__ constexpr int ring_cta_bytes() {
  return kWarps * S * stage_bytes<P>();
}
// CTAs an SM that the ring allows (228 KB of shared memory an SM, 1 KB of it
// reserved a CTA), at most 8: the register bound follows from it.
template <class P, int S>
__host__ __device__ constexpr int ring_ctas() {
  const int fit = 227 * 1024 / (ring_cta_bytes<P, S>() + 1024);
  return fit < 1 ? 1 : (fit > 8 ? 8 : fit);
}

// A warp's place in its stream of steps: work item v (the CTA's items are
// blockIdx.x, + gridDim.x, ...), step s of its rows.
struct Cursor {
  unsigned v;
  int s;
};
// The copying side's cursor, and where the lane's block of the step sits
// in each of the item's rows.
struct Source {
  Cursor at;
  const uint8_t* wblk[R];
  bool live;  // the warp has rows in this item
};

template <class P, typename T, int S>
__global__ void __launch_bounds__(kWarps * 32, ring_ctas<P, S>())
    ring_matvec_kernel(const MatvecTargets ts, int64_t nb, const MatvecX x, unsigned items) {
  if (x.release_dependents) cuda_pdl::allow_dependents();  // as matvec_kernel
  extern __shared__ __align__(16) uint8_t ring_smem[];
  constexpr int kPerStep = 32 / P::kLanes;
  constexpr int64_t kBlockBytes = P::row_bytes(1);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int slot = lane / P::kLanes, part = lane % P::kLanes;
  const int steps = static_cast<int>((nb + kPerStep - 1) / kPerStep);  // a row's (nb < 2^31)
  uint8_t* const ring = ring_smem + static_cast<size_t>(warp) * S * stage_bytes<P>() + 16 * lane;

  // The warp's first row of item v, and its target; rows past the target's
  // end (its last item) are skipped whole, uniformly over the warp.
  auto rows_of = [&](unsigned v, int64_t* row0) -> const MatvecTarget& {
    int64_t cta = 0;
    const MatvecTarget& t = target_at(ts, v, &cta);
    *row0 = (cta * kWarps + warp) * R;
    return t;
  };
  // Copies the step at `in` into `stage` and moves `in` on; every call
  // commits a group, empty past the end, so the wait counts stay uniform.
  // The rows' addresses are worked out once an item, then advanced a step
  // at a time.
  auto issue = [&](Source& in, int stage) {
    if (in.at.v < items) {
      if (in.at.s == 0) {
        int64_t row0 = 0;
        const MatvecTarget& t = rows_of(in.at.v, &row0);
        in.live = row0 < t.n;
        if (in.live) {
          const uint8_t* wrow[R];
          row_pointers<P, R>(t.w, t.n, nb, row0, wrow);
#pragma unroll
          for (int r = 0; r < R; ++r) in.wblk[r] = wrow[r] + kBlockBytes * slot;
        }
      }
      if (in.live && in.at.s * kPerStep + slot < nb) {
        CopyPieces copy{ring + stage * stage_bytes<P>()};
        typename P::W unused;
#pragma unroll
        for (int r = 0; r < R; ++r) P::load_w(in.wblk[r], nb, 0, part, unused, copy);
      }
#pragma unroll
      for (int r = 0; r < R; ++r) in.wblk[r] += kBlockBytes * kPerStep;
      if (++in.at.s == steps) in.at = Cursor{in.at.v + gridDim.x, 0};
    }
    cuda_async::cp_async_commit();
  };

  Source in{{blockIdx.x, 0}, {}, false};
#pragma unroll
  for (int st = 0; st < S - 1; ++st) issue(in, st);  // before the wait
  const XCodes xc = matvec_x<false, T>(x, 256 * nb);

  int stage = 0;
  for (unsigned v = blockIdx.x; v < items; v += gridDim.x) {
    int64_t row0 = 0;
    const MatvecTarget& t = rows_of(v, &row0);
    const bool live = row0 < t.n;
    SinkInputs pre[R];
    if (lane == 0 && live)
#pragma unroll
      for (int r = 0; r < R; ++r) pre[r] = sink_inputs(t, x.kv, row0 + r);
    float acc[R][1] = {};
    for (int s = 0; s < steps; ++s) {
      cuda_async::cp_async_wait<S - 2>();  // this lane's copies of `stage` have landed
      // The wait's asm says nothing about memory: without this fence the
      // compiler may read the stage before the wait, or keep an earlier
      // stage's reads past the copies that refill it.
      asm volatile("" ::: "memory");
      typename P::W wv[R];
      const uint8_t* const staged_at = ring + stage * stage_bytes<P>();
      StagedPieces staged{staged_at};
#pragma unroll
      for (int r = 0; r < R; ++r) P::load_w(staged_at, nb, 0, part, wv[r], staged);  // addresses unread
      issue(in, stage == 0 ? S - 1 : stage - 1);  // into the stage read last step
      stage = stage == S - 1 ? 0 : stage + 1;
      const int blk = s * kPerStep + slot;
      if (live && blk < nb) step<P, 1, R>(wv, blk, part, xc.q, xc.d, xc.s, 256 * nb, 1, acc);
    }
    if (live) store_rows<1, R, T>(acc, 1, t, x.kv, row0, pre);
  }
  cuda_async::cp_async_wait<0>();  // no copy outlives the CTA
}

template <class P, typename T, int S>
cudaError_t launch_stages(const MatvecTarget* targets, int count, int64_t nb, const MatvecX& x, cudaStream_t s) {
  auto kernel = ring_matvec_kernel<P, T, S>;
  constexpr int smem = ring_cta_bytes<P, S>();
  static const cudaError_t attr = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (attr != cudaSuccess) return attr;
  cuda_device::Limits limits;
  const cudaError_t rc = cuda_device::current_limits(&limits);
  if (rc != cudaSuccess) return rc;
  const MatvecTargets ts = plan_targets(targets, count, R * kWarps);
  const unsigned items = ts.first_cta[count];
  // APH_GGUF_MATVEC_RING_CTAS caps the grid (tests: a CTA then walks many
  // items, across targets).
  static const unsigned cap = static_cast<unsigned>(std::max(env_int("APH_GGUF_MATVEC_RING_CTAS", 0), 0L));
  unsigned ctas = resident_grid(kernel, kWarps * 32, smem, limits.sms, items);
  if (cap > 0) ctas = std::min(ctas, cap);
  const dim3 grid(ctas), block(kWarps * 32);
  return cuda_pdl::launch_dependent(kernel, grid, block, smem, s, ts, nb, x, items);
}

template <class P, typename T>
cudaError_t launch_typed(const MatvecTarget* targets, int count, int64_t nb, const MatvecX& x, int stages,
                         cudaStream_t s) {
  if constexpr (P::kRingPieces == 0) {
    return cudaErrorNotSupported;
  } else {
    if (stages == 3) return launch_stages<P, T, 3>(targets, count, nb, x, s);
    return launch_stages<P, T, 4>(targets, count, nb, x, s);
  }
}

template <typename T>
cudaError_t launch_of_type(uint32_t type, const MatvecTarget* targets, int count, int64_t nb, const MatvecX& x,
                           int stages, cudaStream_t s) {
  switch (type) {
    case 12:
      return launch_typed<VecQ4K, T>(targets, count, nb, x, stages, s);
    case 13:
      return launch_typed<VecQ5K, T>(targets, count, nb, x, stages, s);
    default:
      return cudaErrorNotSupported;
  }
}

}  // namespace

int matvec_ring_stages() {
  static const int stages = [] {
    const long v = env_int("APH_GGUF_MATVEC_RING", 0);
    return v == 3 || v == 4 ? static_cast<int>(v) : 0;
  }();
  return stages;
}

int launch_ring_matvec(uint32_t type, const MatvecTarget* targets, int count, int64_t nb, const MatvecX& x, bool bf16,
                       int stages, void* stream) {
  if (x.raw != nullptr) return static_cast<int>(cudaErrorNotSupported);
  auto s = static_cast<cudaStream_t>(stream);
  const cudaError_t rc = bf16 ? launch_of_type<__nv_bfloat16>(type, targets, count, nb, x, stages, s)
                              : launch_of_type<__half>(type, targets, count, nb, x, stages, s);
  return static_cast<int>(rc);
}

}  // namespace aph::gguf::cuda
