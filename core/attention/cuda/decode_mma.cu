// Split-K decode on tensor cores (APH_DECODE_MMA, docs/CONFIG.md).
//
// The streaming kernel (decode_stream.cu) does a token's q.k and its share of
// the weighted V sum with FFMAs, a lane owning 8 dimensions, and sums each
// score over 16 lanes with shuffles: at 8k context on the H200 it issued
// about 470 instructions a warp for every 4 tokens (ncu, stop 26: 9.8 M warp
// instructions for one layer of the 8B shape, 23.5 us, 1.5 TB/s of KV), so
// its warps, not the bytes, set its time. Here a warp takes 16 tokens a step
// and the query heads of its KV head (up to 8, the MMA's n) as one m16n8k16
// problem pair:
//
//   S = Q K^T      A = Q (16 rows: the heads, rows past G zero), B = K rows
//                  straight from shared memory by ldmatrix (B is k-major);
//   O^T += V^T P^T A = V^T by ldmatrix.trans, B = P^T, which is the S
//                  accumulator's own layout (lane l holds head l / 4,
//                  tokens 2 (l % 4) and +1 of each 8), packed to 16 bits.
//
// A step is then 16 ldmatrix and 24 MMAs for 128 dimensions (32 with bf16,
// whose P goes in as two halves: see the loop), plus the online
// softmax of 4 scores a lane, where the streaming kernel needs about 1900
// instructions for the same 16 tokens. The output accumulator O^T holds
// dimensions x heads, 4 floats a lane for every 16 dimensions (32 registers
// at 128).
//
// Each warp streams its own tiles (tile t of the split goes to warp t % 4)
// through a ring of 3 steps in shared memory by cp.async (4 for launches of
// at most one CTA an SM: MmaRings), so two steps of K and V (16 KB at head
// size 128) stay in flight a warp while it
// computes, with no CTA barrier until the end, where the warps' partials meet
// as in the streaming kernel (decode_tail.cuh). Rows are padded by 16 bytes
// so that ldmatrix's 8 rows fall in different banks; on a GPU where those
// rings do not fit, 16-bit rows go unpadded with their pieces swizzled
// (MmaRings).
//
// Launched as a programmatic dependent of the KV write, as the streaming
// kernel: the first steps (all but one of the ring) are issued before the wait, less the
// newest row (ctx - 1), which its lanes copy after it.
//
// Takes 16-bit caches whose type is the activations' (the MMA multiplies
// like types), f16 caches under bf16 activations (the MMAs run in f16, q
// converted once: `--kv-cache-dtype fp16` on a bf16 model, bench/run.sh's
// fp16 rows, took the streaming kernel before stop 36) and fp8 caches (each
// lane widens the pieces it copied to f16 in a staging tile, and the MMAs
// run in f16 as well), head sizes
// that are multiples of 16 up to 128, and blocks of at least 16 tokens (a
// step then spans at most two); launch_decode_mma says
// cudaErrorNotSupported for the rest, which keep the other kernels.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <type_traits>

#include "core/attention/cuda/attention_kernels.h"
#include "core/attention/cuda/decode_cluster.cuh"
#include "core/attention/cuda/decode_common.cuh"
#include "core/attention/cuda/decode_tail.cuh"
#include "core/attention/cuda/kv_types.cuh"
#include "core/attention/decode_partition.hpp"
#include "core/attention/decode_tile_copy.hpp"
#include "core/attention/split_plan.hpp"
#include "core/common/cuda_async_copy.cuh"
#include "core/common/cuda_device_limits.hpp"
#include "core/common/cuda_mma.cuh"
#include "core/common/cuda_pdl.cuh"
#include "core/common/env_flag.hpp"

namespace aph::attention::cuda {
namespace {

using cuda_async::cp_async_16;
using cuda_async::cp_async_commit;
using cuda_async::cp_async_wait;

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kTile = 16;               // tokens a warp step: the MMA's k for P V
constexpr int kG = kDecodeHeadsPerCta;  // query heads a CTA: the MMA's n (8)

// The forms of a warp's ring (MmaRings below picks one a launch):
// - kPadded: 3 steps (two in flight and the one in use), rows padded by 16
//   bytes;
// - kDeep: 4 steps (three in flight), padded: for launches of at most one
//   CTA an SM, where the ring's 139,264 bytes a CTA (head size 128, 16-bit
//   cache) cost no occupancy (a lone sequence: the plan's 128 CTAs);
// - kCompact: 3 steps, 16-bit rows of whole groups of 8 pieces unpadded and
//   swizzled (ring_piece, decode_tile_copy.hpp), only where the padded rings
//   do not fit the GPU: on an H100 the swizzled form lost 1.9 % at 8k (8B
//   Q4_K_M, 337.3 against 343.7 tok/s, stop 37), the XORs of its ldmatrix
//   addresses on the critical path.
enum class RingForm { kPadded, kDeep, kCompact };

template <int HD, typename KvT, RingForm kForm = RingForm::kPadded>
struct MmaShape {
  static constexpr int kSteps = kForm == RingForm::kDeep ? 4 : 3;  // a warp's ring
  static constexpr int kRowBytes = HD * KvTraits<KvT>::kBytes;      // a cached row
  static constexpr int kChunks = kRowBytes / 16;                     // 16-byte pieces a row
  static constexpr bool kCanSwizzle = !kIsFp8<KvT> && kChunks % 8 == 0;
  static constexpr bool kSwizzle = kForm == RingForm::kCompact && kCanSwizzle;
  static constexpr int kStride = kSwizzle ? kRowBytes : kRowBytes + 16;  // a row in the ring
  __device__ static int piece(int row, int chunk) { return ring_piece(row, chunk, kStride, kSwizzle); }
  static constexpr int kTileBytes = kTile * kStride;
  static constexpr int kStageBytes = 2 * kTileBytes;  // K, then V
  static constexpr int kPieces = kTile * kChunks;      // of K (and of V) a step
  static constexpr int kCopyRounds = (kPieces + 31) / 32;
  // fp8: the step's K and V widened to f16 for ldmatrix (16-bit elements
  // only), a warp's one staging tile pair.
  static constexpr int kStride16 = HD * 2 + 16;
  static constexpr int kTile16Bytes = kTile * kStride16;
  static constexpr int kWarpBytes = kSteps * kStageBytes + (kIsFp8<KvT> ? 2 * kTile16Bytes : 0);
  static constexpr int kRingBytes = kWarps * kWarpBytes;
  static constexpr int kRedBytes = kWarps * kG * HD * 4;
  static constexpr int kMergeBytes = kDecodeHeadsPerCta * kDecodeMaxSplits * 4;
  static constexpr int kSmemBytes = std::max({kRingBytes, kRedBytes, kMergeBytes});
  static_assert(HD % 16 == 0, "whole MMA tiles");
};

// The MMA's element type: f16 for an f16 or fp8 cache (fp8 widens to f16
// exactly), else the activations' (a bf16 cache under bf16 activations).
template <typename ActT, typename KvT>
using MmaElement = std::conditional_t<kIsFp8<KvT> || std::is_same_v<KvT, __half>, __half, ActT>;
// Whether the kernel takes the pair: the cache's 16-bit type must be T.
template <typename ActT, typename KvT>
inline constexpr bool kMmaTakes = kIsFp8<KvT> || std::is_same_v<KvT, MmaElement<ActT, KvT>>;

// A pair of q elements as the MMA's T (from bf16 to f16 for an f16 or fp8 cache:
// exact within f16's range, which q's elements do not leave in practice;
// clamped so that one that did cannot become inf).
template <typename ActT, typename T>
__device__ __forceinline__ float q_operand(float v) {
  return std::is_same_v<ActT, T> ? v : fminf(fmaxf(v, -65504.0f), 65504.0f);
}
template <typename ActT, typename T>
__device__ __forceinline__ uint32_t q_pair(const ActT* q, int d) {
  if constexpr (std::is_same_v<ActT, T>) {
    const uint16_t* b = reinterpret_cast<const uint16_t*>(q);
    return static_cast<uint32_t>(b[d]) | (static_cast<uint32_t>(b[d + 1]) << 16);
  } else {
    return cuda_mma::pack2<T>(q_operand<ActT, T>(to_float<ActT>(q[d])), q_operand<ActT, T>(to_float<ActT>(q[d + 1])));
  }
}

// Sixteen fp8 elements (16 bytes at src) as f16 into 32 bytes at dst.
template <typename KvT>
__device__ __forceinline__ void widen16(const uint8_t* src, uint8_t* dst) {
  const uint4 raw = *reinterpret_cast<const uint4*>(src);
  const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
  uint32_t h[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) h[i] = fp8x2_to_half2_bits<KvT>(static_cast<uint16_t>(w[i / 2] >> (16 * (i % 2))));
  reinterpret_cast<uint4*>(dst)[0] = make_uint4(h[0], h[1], h[2], h[3]);
  reinterpret_cast<uint4*>(dst)[1] = make_uint4(h[4], h[5], h[6], h[7]);
}

// T: the MMA's element type (MmaElement).
template <int HD, typename ActT, typename KvT, RingForm kForm>
__global__ void __launch_bounds__(kThreads, 2) decode_mma_kernel(DecodeParams p) {
  cuda_pdl::allow_dependents();  // the output projection can launch
  using S = MmaShape<HD, KvT, kForm>;
  constexpr int kStages = S::kSteps;
  using T = MmaElement<ActT, KvT>;
  constexpr bool kWiden = kIsFp8<KvT>;
  extern __shared__ __align__(16) uint8_t smem[];
  __shared__ float warp_m[kWarps][kG], warp_l[kWarps][kG];

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const DecodeCta cta = locate_decode_cta<kG>(p);
  if (!cta.active) return;
  const int G = cta.G, ctx = cta.ctx;
  const bool clustered = APH_DECODE_CLUSTERS && p.cluster > 1 && cta.eff != 1;
  __shared__ uint64_t mail_arrived;  // a cluster leader's: its members' stores count it down
  uint64_t* const mail_arrived_ptr = &mail_arrived;
  start_cluster_merge(mail_arrived_ptr, clustered);

  const TokenRange range = decode_split_range(ctx, cta.eff, cta.split);
  const int begin = range.begin, end = range.end;
  const int tiles = (end - begin + kTile - 1) / kTile;
  const int steps = tiles > warp ? (tiles - warp + kWarps - 1) / kWarps : 0;
  // Tiles go to the warps from the range's end: the newest row, in the last
  // tile, is then always warp 0's first step, which is copied before the
  // wait (the softmax does not care about the order).
  auto tile_start = [&](int step) { return begin + (tiles - 1 - (step * kWarps + warp)) * kTile; };

  const int32_t* table = p.block_tables + static_cast<size_t>(cta.seq) * p.max_blocks_per_seq;
  const int bs = p.block_size;
  const size_t slot_stride = static_cast<size_t>(p.num_kv_heads) * S::kRowBytes;
  const size_t head_off = static_cast<size_t>(cta.kvh) * S::kRowBytes;
  auto row_offset = [&](int32_t blk, int in_block, int chunk) {
    return (static_cast<size_t>(blk) * bs + in_block) * slot_stride + head_off + chunk * 16;
  };
  uint8_t* ring = smem + warp * S::kWarpBytes;
  uint8_t* staging = ring + kStages * S::kStageBytes;  // fp8 only
  auto k_tile = [&](int step) { return ring + (step % kStages) * S::kStageBytes; };
  const int fresh = ctx - 1;

  // The copies' addressing (decode_tile_copy.hpp): this lane's rows, cache
  // and ring offsets once, the step's blocks once a step.
  const TileLane<kTile, S::kChunks> copies(lane, static_cast<int32_t>(slot_stride), S::kStride, S::kSwizzle);
  const int32_t shift = block_shift(bs);
  const uint8_t* k_head = p.k_cache + head_off;
  const uint8_t* v_head = p.v_cache + head_off;

  // Step `step`'s K and V rows into their slot, zeros past the range; before
  // the wait, not the newest row. One commit group a call, so the group count
  // stays the step count.
  auto issue = [&](int step, bool before_wait) {
    if (step < steps) {
      const int t0 = tile_start(step);
      TileStep st = tile_step<kTile>(t0, end, table, bs, shift, static_cast<int32_t>(slot_stride));
      // Kept as values: the compiler otherwise folds the copies' choice
      // between the two bases into a choice of block, and multiplies again
      // in every copy.
      asm("" : "+l"(st.base0), "+l"(st.base1));
      uint8_t* kt = k_tile(step);
#pragma unroll
      for (int u = 0; u < S::kCopyRounds; ++u) {
        if (S::kPieces % 32 != 0 && copies.row[u] >= kTile) continue;  // no piece
        if (before_wait && copies.row[u] == fresh - t0) continue;      // copied after the wait
        // Rows past the range copy nothing (0 bytes: cp.async zero-fills
        // and reads nothing), so their address needs no guard.
        const int64_t off = st.offset(copies, u);
        const int bytes = st.valid(copies, u) ? 16 : 0;
        uint8_t* dst = kt + copies.ring[u];
        cp_async_16(dst, k_head + off, bytes);
        cp_async_16(dst + S::kTileBytes, v_head + off, bytes);
      }
    }
    cp_async_commit();
  };

#pragma unroll
  for (int j = 0; j < kStages - 1; ++j) issue(j, true);
  cuda_pdl::wait_for_producer();
  if (warp == 0 && fresh >= begin && fresh < end) {  // the newest row: warp 0's step 0 (tile_start)
    const int row = fresh - tile_start(0);
    uint8_t* kt = k_tile(0);
    const int32_t blk = table[fresh / bs];  // the KV write stored it before the wait ended
#pragma unroll
    for (int u = 0; u < S::kCopyRounds; ++u) {
      const int i = lane + 32 * u;
      if (i >= S::kPieces || i / S::kChunks != row) continue;
      const int chunk = i % S::kChunks;
      const size_t off = row_offset(blk, fresh % bs, chunk);
      uint8_t* dst = kt + S::piece(row, chunk);
      *reinterpret_cast<uint4*>(dst) = __ldcg(reinterpret_cast<const uint4*>(p.k_cache + off));
      *reinterpret_cast<uint4*>(dst + S::kTileBytes) = __ldcg(reinterpret_cast<const uint4*>(p.v_cache + off));
    }
  }

  // Lane l's places in the fragments: head (row of S, column of O^T) g and
  // the token or head pair c2, c2 + 1; ldmatrix rows for both operands.
  const int g = lane / 4, c2 = (lane % 4) * 2;
  const int ld_row = (lane >> 4) * 8 + (lane & 7), ld_col = ((lane >> 3) & 1) * 8;
  // Q's A fragments: row g (head h0 + g, zero past G), dimensions c2, c2 + 1
  // and those + 8 of each 16; rows 8-15 are zero registers.
  uint32_t qa[HD / 16][2] = {};
  if (g < G) {
    const ActT* qp = static_cast<const ActT*>(p.q) + (static_cast<size_t>(cta.q_tok) * p.num_heads + cta.h0 + g) * HD;
#pragma unroll
    for (int kc = 0; kc < HD / 16; ++kc) {
#pragma unroll
      for (int h = 0; h < 2; ++h)  // element loads: q's rows need not be 4-byte aligned
        qa[kc][h] = q_pair<ActT, T>(qp, kc * 16 + h * 8 + c2);
    }
  }

  float o[HD / 16][4] = {};  // O^T: dimensions 16 mt + g (+ 8) x heads c2, c2 + 1
  float m = -INFINITY, l = 0.0f;  // head g's running max (log2 units) and this lane's share of its sum
  for (int j = 0; j < steps; ++j) {
    cp_async_wait<kStages - 2>();  // this lane's copies of step j have landed
    __syncwarp();                  // and every lane's, and step j - 1's reads are done
    issue(j + kStages - 1, false);  // into the slot step j - 1 used
    const uint8_t* kt = k_tile(j);
    const uint8_t* vt = kt + S::kTileBytes;
    // Where ldmatrix reads this lane's row of 16-bit piece `chunk`: the
    // widened staging (padded) for fp8, else the ring itself.
    auto ld_piece = [&](const uint8_t* tile, int chunk) {
      return kWiden ? tile + ld_row * S::kStride16 + chunk * 16 : tile + S::piece(ld_row, chunk);
    };
    if constexpr (kWiden) {
      // Each lane widens the pieces it copied; staging's reads of step
      // j - 1 finished before the barrier above.
#pragma unroll
      for (int u = 0; u < S::kCopyRounds; ++u) {
        const int i = lane + 32 * u, row = i / S::kChunks, chunk = i % S::kChunks;
        if (i >= S::kPieces) continue;
        widen16<KvT>(kt + S::piece(row, chunk), staging + row * S::kStride16 + chunk * 32);
        widen16<KvT>(vt + S::piece(row, chunk), staging + S::kTile16Bytes + row * S::kStride16 + chunk * 32);
      }
      __syncwarp();
      kt = staging;
      vt = staging + S::kTile16Bytes;
    }
    float s[2][4] = {};  // S: head g x tokens c2, c2 + 1 of each 8 (rows 8-15 unused)
#pragma unroll
    for (int kc = 0; kc < HD / 16; ++kc) {
      uint32_t b[4];
      cuda_mma::ldmatrix_x4(b, ld_piece(kt, 2 * kc + ld_col / 8));
      const uint32_t a[4] = {qa[kc][0], 0u, qa[kc][1], 0u};
      cuda_mma::mma16816<T>(s[0], a, b[0], b[1]);
      cuda_mma::mma16816<T>(s[1], a, b[2], b[3]);
    }
    const int t0 = tile_start(j);
    float sc[4] = {s[0][0], s[0][1], s[1][0], s[1][1]};
    const int tok[4] = {c2, c2 + 1, 8 + c2, 9 + c2};
    float mx = -INFINITY;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      sc[e] = t0 + tok[e] < end ? sc[e] * p.qk_scale : -INFINITY;
      mx = fmaxf(mx, sc[e]);
    }
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float m_new = fmaxf(m, mx);  // finite: a step's first token is in range
    const float alpha = exp2_weight(m - m_new);
    float pr[4], sum = 0.0f;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      pr[e] = exp2_weight(sc[e] - m_new);
      sum += pr[e];
    }
    l = fmaf(l, alpha, sum);
    m = m_new;
    // P for the MMA: rounded to T alone, it carried 2^-9 of relative error
    // with bf16 (the sum l keeps fp32), the one rounding the other decode
    // kernels do not make, and on a bf16 model enough to miss
    // oracle_model_gpu_test's graph-against-eager bound (0.0105 against
    // 0.01, stop 26). So with bf16 it goes in as hi + lo, two MMAs, about
    // 2^-17; f16's own 2^-11 is within every bound measured.
    constexpr bool kSplitP = std::is_same_v<T, __nv_bfloat16>;
    const uint32_t pb0 = cuda_mma::pack2<T>(pr[0], pr[1]), pb1 = cuda_mma::pack2<T>(pr[2], pr[3]);
    uint32_t pl0 = 0, pl1 = 0;
    if constexpr (kSplitP) {
      const float2 h0 = cuda_mma::unpack2<T>(pb0), h1 = cuda_mma::unpack2<T>(pb1);
      pl0 = cuda_mma::pack2<T>(pr[0] - h0.x, pr[1] - h0.y);
      pl1 = cuda_mma::pack2<T>(pr[2] - h1.x, pr[3] - h1.y);
    }
    // The rescale of heads c2 and c2 + 1, from their rows' lanes.
    const float a_lo = __shfl_sync(0xffffffffu, alpha, (lane & 3) * 8);
    const float a_hi = __shfl_sync(0xffffffffu, alpha, (lane & 3) * 8 + 4);
#pragma unroll
    for (int mt = 0; mt < HD / 16; ++mt) {
      o[mt][0] *= a_lo;
      o[mt][1] *= a_hi;
      o[mt][2] *= a_lo;
      o[mt][3] *= a_hi;
      uint32_t a[4];
      cuda_mma::ldmatrix_x4_trans(a, ld_piece(vt, 2 * mt + ld_col / 8));
      cuda_mma::mma16816<T>(o[mt], a, pb0, pb1);
      if constexpr (kSplitP) cuda_mma::mma16816<T>(o[mt], a, pl0, pl1);
    }
  }
  cp_async_wait<0>();
  l += __shfl_xor_sync(0xffffffffu, l, 1);
  l += __shfl_xor_sync(0xffffffffu, l, 2);

  __syncthreads();  // every warp is done with its ring, which red overlays
  float* red = reinterpret_cast<float*>(smem);  // [warp][head][HD]
#pragma unroll
  for (int mt = 0; mt < HD / 16; ++mt) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int head = c2 + (e & 1), dim = mt * 16 + g + (e >> 1) * 8;
      if (head < G) red[(warp * kG + head) * HD + dim] = o[mt][e];
    }
  }
  if ((lane & 3) == 0 && g < G) {
    warp_m[warp][g] = m;
    warp_l[warp][g] = l;
  }
  __syncthreads();
  finish_decode_cta<HD, ActT, kG, kWarps>(p, cta, red, warp_m, warp_l, reinterpret_cast<float*>(smem + S::kSmemBytes),
                                       mail_arrived_ptr, clustered);
}

// The least shared memory a CTA may opt into on the GPUs built for: sm_86
// and sm_89 (RTX 30x0 / 40x0), 99 KB.
constexpr int kLeastSmemOptin = 101376;

// Which ring form (RingForm) a launch of `ctas` CTAs takes:
// - kDeep where it fits and the launch has at most one CTA an SM
//   (APH_DECODE_MMA_DEEP: 0 never, 2 every launch, for the GPU tests). H100,
//   stop 37, 8B Q4_K_M (engineab, medians of 2), 3 / 4 / 6 steps: at 8k
//   344.4 / 350.1 / 344.2 tok/s, after 512 395.2 / 396.9 / 395.4 (at 6 the
//   ring leaves L1 about 20 KB; 5 against 4 at 8k: 348.2 / 349.2); the 135M
//   at 8k 1501.3 against 1458.8 with 3;
// - else kPadded where it fits;
// - else kCompact (head size 128 with a 16-bit cache: 104,448 bytes a CTA
//   padded, 98,304 compact), so that sm_86 and sm_89 run this kernel, not
//   the streaming one, which the H100 measured slower at 8k (331.3 against
//   337.2 compact and 343.4 padded, stop 37). Compiled only for such shapes;
//   APH_DECODE_MMA_COMPACT=1 takes it wherever it is compiled, for the tests.
// A GPU where none fits keeps the other kernels: cudaErrorNotSupported.
template <int HD, typename KvT>
struct MmaRings {
  static constexpr int kPadded = MmaShape<HD, KvT, RingForm::kPadded>::kSmemBytes;
  static constexpr int kDeep = MmaShape<HD, KvT, RingForm::kDeep>::kSmemBytes;
  static constexpr bool kHasCompact = MmaShape<HD, KvT>::kCanSwizzle && kPadded > kLeastSmemOptin;
  static constexpr int compact_bytes() {
    if constexpr (kHasCompact) return MmaShape<HD, KvT, RingForm::kCompact>::kSmemBytes;
    return kPadded;
  }
  static cudaError_t choose(int64_t ctas, RingForm* form) {
    static const bool compact_forced = env_flag("APH_DECODE_MMA_COMPACT", false);
    static const long deep_mode = env_int("APH_DECODE_MMA_DEEP", 1);
    cuda_device::Limits g;
    const cudaError_t e = cuda_device::current_limits(&g);
    if (e != cudaSuccess) return e;
    const bool deep_wanted = deep_mode >= 2 || (deep_mode == 1 && ctas <= g.sms);
    if (kHasCompact && compact_forced)
      *form = RingForm::kCompact;
    else if (deep_wanted && kDeep <= g.max_smem_optin)
      *form = RingForm::kDeep;
    else if (kPadded <= g.max_smem_optin)
      *form = RingForm::kPadded;
    else if (kHasCompact && compact_bytes() <= g.max_smem_optin)
      *form = RingForm::kCompact;
    else
      return cudaErrorNotSupported;
    return cudaSuccess;
  }
};

template <int HD, typename ActT, typename KvT, RingForm kForm>
cudaError_t launch_form(const PagedAttentionArgs& a, int splits, int32_t* counters, bool clusters,
                        cudaStream_t stream) {
  constexpr int smem = MmaShape<HD, KvT, kForm>::kSmemBytes;
  DecodeParams p = make_decode_params(a, splits, counters, kIsFp8<KvT>);
  return launch_tail_kernel<HD>(decode_mma_kernel<HD, ActT, KvT, kForm>, p, a.n_seqs, kThreads, smem, clusters,
                                stream);
}

// The launch's CTAs (launch_tail_kernel's grid).
int64_t launch_ctas(const PagedAttentionArgs& a, int splits) {
  return static_cast<int64_t>(splits) * decode_head_ctas(a.num_heads, a.layout.num_kv_heads) * a.n_seqs;
}

template <int HD, typename ActT, typename KvT>
cudaError_t launch_typed(const PagedAttentionArgs& a, int splits, int32_t* counters, bool clusters,
                         cudaStream_t stream) {
  RingForm form = RingForm::kPadded;
  const cudaError_t e = MmaRings<HD, KvT>::choose(launch_ctas(a, splits), &form);
  if (e != cudaSuccess) return e;
  if constexpr (MmaRings<HD, KvT>::kHasCompact)
    if (form == RingForm::kCompact)
      return launch_form<HD, ActT, KvT, RingForm::kCompact>(a, splits, counters, clusters, stream);
  if (form == RingForm::kDeep) return launch_form<HD, ActT, KvT, RingForm::kDeep>(a, splits, counters, clusters, stream);
  return launch_form<HD, ActT, KvT, RingForm::kPadded>(a, splits, counters, clusters, stream);
}

// The launch's types, head size and blocks as the kernel takes them: f(HD,
// ActT, KvT) for those, cudaErrorNotSupported for the rest.
template <typename F>
cudaError_t dispatch_taken(const PagedAttentionArgs& a, F&& f) {
  if (a.layout.block_size < kTile) return cudaErrorNotSupported;
  return dispatch_attention_types(a, [&](auto hd, auto act, auto kv) -> cudaError_t {
    constexpr int HD = decltype(hd)::value;
    if constexpr (kMmaTakes<decltype(act), decltype(kv)> && HD % 16 == 0 && HD <= 128)
      return f(hd, act, kv);
    else
      return cudaErrorNotSupported;
  });
}

}  // namespace

bool decode_mma_takes(const PagedAttentionArgs& a) {
  // Any form will do: the CTA count only picks between those that fit.
  return dispatch_taken(a, [&](auto hd, auto, auto kv) {
           RingForm form = RingForm::kPadded;
           return MmaRings<decltype(hd)::value, decltype(kv)>::choose(INT64_MAX, &form);
         }) == cudaSuccess;
}

cudaError_t launch_decode_mma(const PagedAttentionArgs& a, int splits, int32_t* counters, bool clusters,
                              cudaStream_t stream) {
  return dispatch_taken(a, [&](auto hd, auto act, auto kv) {
    return launch_typed<decltype(hd)::value, decltype(act), decltype(kv)>(a, splits, counters, clusters, stream);
  });
}

}  // namespace aph::attention::cuda
