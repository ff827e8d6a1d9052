// The tile GEMM of tile_gemm.hpp. A CTA of four warps owns 64 rows of W
// (16 per warp) and 64 rows of x; per step of 128 along k it decodes its W
// tile (decode.cuh, the same arithmetic as dequant_rows_kernel) and copies its
// x tile into shared memory, then each warp runs 16x16x16 wmma products into
// four fp32 accumulators. No software pipelining: a CTA uses 34 KB of shared
// memory and (into BF16, ptxas) 128 registers a thread for Q4_K, 168 for
// Q6_K, so four or three share an SM and hide each other's loads.
//
// How a step's loads wait (kForm >= 1, APH_GGUF_TILE_OVERLAP=1 or 2; form 2
// was the default from stop 25 to 28, kernel_form()): in the SASS of the plain form
// (cuobjdump, sm_90, Q4_K into BF16: 787 instructions a step) a thread's
// second chunk's loads issue only after its first chunk is decoded, behind
// the guard's branch, and the x tile's loads only after both, so a step waits
// for three global round trips in a row. The overlapped form issues the x
// tile as cp.async copies first, decodes both chunks branch-free (an
// out-of-range row or chunk decodes a clamped one and is zeroed), so the
// compiler can issue every weight load before any decoding, and waits for
// the copies just before the barrier: one round trip a step. Form 3
// (APH_GGUF_TILE_OVERLAP=3) is the pipelined kernel of
// tile_gemm_pipelined.cu, which copies each step's inputs two steps ahead.
//
// Form 4 (APH_GGUF_TILE_OVERLAP=4) is form 2 with a thread's addresses set
// up once before the k loop. In form 2's SASS (this machine's sm_90 build,
// Q4_K into BF16) the loop is 662 instructions a warp step, 64 of them MMAs,
// and about 220 (0x0c00-0x19d0) compute the eight x copies' addresses and
// bounds in 64-bit arithmetic every step: (m0 + r) * k + k0 + v * 8 and two
// 64-bit compares a copy. A thread's copies are rows r0 + 8u of one column
// v, so only k0 moves: form 4 keeps x's row pointer and how many of its
// copies are inside m, and adds 32-bit offsets a step. Its two W chunks are
// a pair of one row (decode_chunk_pair), so that the k-quants' share their
// loads (Q4_K 3 a step against 14, Q6_K 8 against 38). Loop: 431
// instructions a warp step for Q4_K (662 in form 2), 611 for Q6_K (813),
// 90-96 registers. Form 5 (APH_GGUF_TILE_OVERLAP=5) is form 4 with the
// k-quants' W bytes loaded a step ahead into registers (below), the
// default since stop 28 (H100 numbers at kernel_form()).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <algorithm>
#include <cstdlib>

#include "core/common/cuda_async_copy.cuh"
#include "core/common/env_flag.hpp"
#include "plugins/quant-gguf/cuda/decode.cuh"
#include "plugins/quant-gguf/cuda/device_math.cuh"
#include "plugins/quant-gguf/cuda/tile_gemm.hpp"
#include "plugins/quant-gguf/cuda/tile_gemm_tile.cuh"

namespace aph::gguf::cuda {

namespace {

namespace wmma = nvcuda::wmma;
using tile::kBK;
using tile::kBM;
using tile::kBN;
using tile::kLd;
using tile::kLdC;
using tile::kThreads;

constexpr int kMaxSplits = 16;

// kForm 0: the plain step; 1: overlapped loads (above); 2: overlapped loads
// and the products by ldmatrix + mma.sync instead of wmma, whose fragment
// loads compiled to 160 generic 32-bit LDs a step (4 a fragment) where
// ldmatrix takes 40 (Q4_K's loop 662 instructions against 823), bounded to
// 128 registers for four CTAs an SM (Q6_K then spills 24 bytes; 168
// unbounded). Forms 0 and 1 keep ptxas's own choice: a minimum of one CTA
// an SM let it take 254.
//
// The body of a CTA: W rows n0.. of one linear (tile_gemm_kernel's, or one
// target's of tile_gemm_multi_kernel), x rows blockIdx.y * kBM.., split
// blockIdx.z.
template <int TYPE, typename T, int kForm>
__device__ __forceinline__ void tile_gemm_cta(const uint8_t* __restrict__ w, int64_t n, int64_t k,
                                              const T* __restrict__ x, int64_t m, const float* __restrict__ bias,
                                              T* __restrict__ y, float* __restrict__ partial,
                                              unsigned* __restrict__ tile_counts, int steps_per_split, int64_t n0) {
  using D = Decoder<TYPE>;
  constexpr int kChunksPerBlock = D::kBlock / 32;
  // wmma wants 32-byte aligned tiles; the fp32 results reuse the W tile.
  __shared__ __align__(128) T w_s[kBN * kLd];
  __shared__ __align__(128) T x_s[kBM * kLd];
  static_assert(sizeof(float) * kBM * kLdC <= sizeof(T) * kBN * kLd, "results must fit the W tile");
  float* c_s = reinterpret_cast<float*>(w_s);

  const int tid = threadIdx.x, warp = tid / 32;
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * kBM;
  const int split = blockIdx.z;
  const int64_t nb = k / D::kBlock, chunks = k / 32, rb = row_bytes<TYPE>(nb);
  const int64_t steps = (k + kBK - 1) / kBK;
  const int64_t s_begin = static_cast<int64_t>(split) * steps_per_split;
  const int64_t s_end = min(steps, s_begin + steps_per_split);

  constexpr bool kOverlap = kForm >= 1, kPtxMma = kForm == 2 || kForm >= 4, kHoisted = kForm >= 4;
  constexpr bool kPrefetchW = kForm == 5 && PairBytes<TYPE>::kLoads;
  const int lane = tid % 32;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[kPtxMma ? 1 : kBM / 16];
  tile::Acc mma_acc = {};  // kPtxMma only
  if constexpr (!kPtxMma) {
#pragma unroll
    for (int j = 0; j < kBM / 16; ++j) wmma::fill_fragment(acc[j], 0.0f);
  }

  // Form 4's per-thread set-up (see the top): x copy u of a step is row
  // xr + 8u, column k0 + 8 xv; the W chunks are chunks k0 / 32 + 2 wp and
  // the next of row wr (decode_chunk_pair: Q4_K's share their loads).
  // 32-bit offsets: the host keeps m * k under 2^31.
  constexpr int kXCopies = kBM * (kBK / 8) / kThreads;
  const int xr = tid / (kBK / 8), xv = tid % (kBK / 8);
  const int64_t x_rows_left = m - (m0 + xr);  // rows of this thread's column still inside m
  const int x_copies_inside = x_rows_left <= 0 ? 0 : static_cast<int>(min((x_rows_left + 7) / 8, static_cast<int64_t>(kXCopies)));
  // Past m for some threads: a copy of 0 bytes reads nothing (cp.async
  // fills zeros), so the address needs no clamp.
  const T* x_thread = x + (m0 + xr) * k + xv * 8;
  const int x_row_step = 8 * static_cast<int>(k);
  T* xs_thread = x_s + xr * kLd + xv * 8;
  const int wr = tid / 2, wp = tid % 2;  // row wr, chunks 2 wp and 2 wp + 1 of each step
  const uint8_t* w_row = w + min(n0 + wr, n - 1) * rb;
  // Form 5: the k-quants' pair bytes come in a step ahead (registers, not
  // shared memory), so a step's decode waits on loads issued a whole step
  // earlier, not on its own loads' round trip. Costs (sm_90 SASS, Q4_K):
  // 127 registers against 96 and 529 instructions a step against 431 (the
  // copy of the bytes, addresses recomputed for want of registers).
  PairBytes<TYPE> w_next;
  if constexpr (kPrefetchW) {
    if (s_begin < s_end)
      load_chunk_pair<TYPE>(w_row, nb, static_cast<int>(s_begin * kBK / 32) + 2 * wp, static_cast<int>(chunks), w_next);
  }

  for (int64_t s = s_begin; s < s_end; ++s) {
    const int64_t k0 = s * kBK;
    if constexpr (kHoisted) {
      const int col = static_cast<int>(k0) + xv * 8;
      const int x_inside = col < k ? x_copies_inside : 0;
      int x_offset = static_cast<int>(k0);
#pragma unroll
      for (int u = 0; u < kXCopies; ++u, x_offset += x_row_step)
        cuda_async::cp_async_16(xs_thread + u * 8 * kLd, x_thread + x_offset, u < x_inside ? 16 : 0);
      cuda_async::cp_async_commit();
      Chunk ch[2];
      if constexpr (kPrefetchW) {
        const PairBytes<TYPE> w_now = w_next;
        if (s + 1 < s_end)
          load_chunk_pair<TYPE>(w_row, nb, static_cast<int>((k0 + kBK) / 32) + 2 * wp, static_cast<int>(chunks), w_next);
        decode_pair_bytes<TYPE>(w_now, ch[0], ch[1]);
      } else {
        decode_chunk_pair<TYPE>(w_row, nb, static_cast<int>(k0 / 32) + 2 * wp, static_cast<int>(chunks), ch[0], ch[1]);
      }
      // Stored as decoded, not zeroed outside W: a clamped row past n only
      // feeds outputs that write_tile drops, and a clamped chunk past k
      // meets x columns that the copies above filled with zeros.
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        uint32_t packed[16];
        pack_chunk_for_gemm<TYPE, T>(ch[u], packed);
        auto* dst = reinterpret_cast<uint4*>(w_s + wr * kLd + (2 * wp + u) * 32);
#pragma unroll
        for (int v = 0; v < 4; ++v) dst[v] = make_uint4(packed[4 * v], packed[4 * v + 1], packed[4 * v + 2], packed[4 * v + 3]);
      }
      cuda_async::cp_async_wait<0>();
    } else if constexpr (kOverlap) {
      // x first, as copies that land while W decodes; zeros past m and k.
#pragma unroll
      for (int u = 0; u < kBM * (kBK / 8) / kThreads; ++u) {
        const int q = tid + u * kThreads;
        const int r = q / (kBK / 8), v = q % (kBK / 8);
        const int64_t row = m0 + r, col = k0 + v * 8;
        const bool inside = row < m && col < k;
        cuda_async::cp_async_16(x_s + r * kLd + v * 8, inside ? x + row * k + col : x, inside ? 16 : 0);
      }
      cuda_async::cp_async_commit();
      // W: 64 rows x 4 chunks, two chunks a thread, four threads a row.
      // Both chunks decode before either is packed, with no branch between
      // their loads.
      Chunk ch[2];
      bool inside[2];
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        const int q = tid + u * kThreads;
        const int64_t row = n0 + q / 4, c = k0 / 32 + q % 4;
        inside[u] = row < n && c < chunks;
        const int64_t rc = min(row, n - 1), cc = min(c, chunks - 1);
        decode_chunk<TYPE>(w + rc * rb, nb, cc / kChunksPerBlock, static_cast<int>(cc % kChunksPerBlock), ch[u]);
      }
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        const int q = tid + u * kThreads;
        uint32_t packed[16];
        pack_chunk_for_gemm<TYPE, T>(ch[u], packed);
        auto* dst = reinterpret_cast<uint4*>(w_s + (q / 4) * kLd + (q % 4) * 32);
#pragma unroll
        for (int v = 0; v < 4; ++v)
          dst[v] = inside[u] ? make_uint4(packed[4 * v], packed[4 * v + 1], packed[4 * v + 2], packed[4 * v + 3])
                             : make_uint4(0, 0, 0, 0);
      }
      cuda_async::cp_async_wait<0>();
    } else {
      // W: 64 rows x 4 chunks, two chunks a thread, four threads a row.
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        const int q = tid + u * kThreads;
        const int r = q / 4, cc = q % 4;
        const int64_t row = n0 + r, c = k0 / 32 + cc;
        uint32_t packed[16] = {};
        if (row < n && c < chunks) {
          Chunk ch;
          decode_chunk<TYPE>(w + row * rb, nb, c / kChunksPerBlock, static_cast<int>(c % kChunksPerBlock), ch);
          pack_chunk_for_gemm<TYPE, T>(ch, packed);
        }
        auto* dst = reinterpret_cast<uint4*>(w_s + r * kLd + cc * 32);
#pragma unroll
        for (int v = 0; v < 4; ++v)
          dst[v] = make_uint4(packed[4 * v], packed[4 * v + 1], packed[4 * v + 2], packed[4 * v + 3]);
      }
      // x: 64 rows x 16 vectors of 8; rows past m and k past its end are zero.
#pragma unroll
      for (int u = 0; u < kBM * (kBK / 8) / kThreads; ++u) {
        const int q = tid + u * kThreads;
        const int r = q / (kBK / 8), v = q % (kBK / 8);
        const int64_t row = m0 + r, col = k0 + v * 8;
        uint4 val = make_uint4(0, 0, 0, 0);
        if (row < m && col < k) val = *reinterpret_cast<const uint4*>(x + row * k + col);
        *reinterpret_cast<uint4*>(x_s + r * kLd + v * 8) = val;
      }
    }
    __syncthreads();
    if constexpr (kPtxMma) {
      tile::mma_step(w_s, x_s, warp, lane, mma_acc);
    } else {
#pragma unroll
      for (int kk = 0; kk < kBK / 16; ++kk) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
        wmma::load_matrix_sync(a, w_s + warp * 16 * kLd + kk * 16, kLd);
#pragma unroll
        for (int j = 0; j < kBM / 16; ++j) {
          // x_s[m][k] read as the column-major k x m operand.
          wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> b;
          wmma::load_matrix_sync(b, x_s + j * 16 * kLd + kk * 16, kLd);
          wmma::mma_sync(acc[j], a, b, acc[j]);
        }
      }
    }
    __syncthreads();
  }
  // The results as c_s[m][n] (wmma: acc[j] is C[n: warp's 16][m: j's 16],
  // stored column-major).
  if constexpr (kPtxMma) {
    tile::stash_acc(mma_acc, warp, lane, c_s);
  } else {
#pragma unroll
    for (int j = 0; j < kBM / 16; ++j)
      wmma::store_matrix_sync(c_s + j * 16 * kLdC + warp * 16, acc[j], kLdC, wmma::mem_col_major);
  }
  __syncthreads();
  tile::write_tile(c_s, m0, n0, m, n, bias, y, partial);
  if (gridDim.z > 1 && tile_counts != nullptr) tile::sum_splits_if_last(tile_counts, partial, m0, n0, m, n, bias, y);
}

// __launch_bounds__'s minimum of resident CTAs for each form (above).
constexpr int min_ctas_per_sm(int form) { return form == 2 || form >= 4 ? 4 : 0; }

template <int TYPE, typename T, int kForm>
__global__ void __launch_bounds__(kThreads, min_ctas_per_sm(kForm))
    tile_gemm_kernel(const uint8_t* __restrict__ w, int64_t n, int64_t k, const T* __restrict__ x, int64_t m,
                     const float* __restrict__ bias, T* __restrict__ y, float* __restrict__ partial,
                     unsigned* __restrict__ tile_counts, int steps_per_split) {
  tile_gemm_cta<TYPE, T, kForm>(w, n, k, x, m, bias, y, partial, tile_counts, steps_per_split,
                                static_cast<int64_t>(blockIdx.x) * kBN);
}

// The targets of one launch_tile_gemm_multi, by value: target t owns the
// grid's columns first_tile[t] .. first_tile[t + 1] - 1 and its split
// partials start partial_off[t] floats into the workspace.
struct TileTargets {
  const uint8_t* w[kTileGemmMaxTargets];
  int64_t n[kTileGemmMaxTargets];
  const float* bias[kTileGemmMaxTargets];
  void* y[kTileGemmMaxTargets];
  int64_t partial_off[kTileGemmMaxTargets];
  int first_tile[kTileGemmMaxTargets + 1];
  int count;
};

template <int TYPE, typename T, int kForm>
__global__ void __launch_bounds__(kThreads, min_ctas_per_sm(kForm))
    tile_gemm_multi_kernel(const TileTargets targets, int64_t k, const T* __restrict__ x, int64_t m,
                           float* __restrict__ workspace, unsigned* __restrict__ tile_counts, int steps_per_split) {
  int t = 0;
  while (t + 1 < targets.count && static_cast<int>(blockIdx.x) >= targets.first_tile[t + 1]) ++t;
  tile_gemm_cta<TYPE, T, kForm>(targets.w[t], targets.n[t], k, x, m, targets.bias[t], static_cast<T*>(targets.y[t]),
                                workspace + targets.partial_off[t], tile_counts, steps_per_split,
                                static_cast<int64_t>(static_cast<int>(blockIdx.x) - targets.first_tile[t]) * kBN);
}

// y[idx] (of m x n) from the splits' partials, in split order from the bias.
template <typename T>
__device__ __forceinline__ void sum_splits_at(const float* __restrict__ partial, int splits, int64_t m, int64_t n,
                                              const float* __restrict__ bias, T* __restrict__ y, int64_t idx) {
  if (idx >= m * n) return;
  float v = bias ? bias[idx % n] : 0.0f;
  for (int s = 0; s < splits; ++s) v += partial[s * m * n + idx];
  y[idx] = from_float<T>(v);
}

template <typename T>
__global__ void sum_splits_kernel(const float* __restrict__ partial, int splits, int64_t m, int64_t n,
                                  const float* __restrict__ bias, T* __restrict__ y) {
  sum_splits_at(partial, splits, m, n, bias, y, static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x);
}

// Each target's sums (blockIdx.y: the target).
template <typename T>
__global__ void sum_splits_multi_kernel(const TileTargets targets, const float* __restrict__ workspace, int splits,
                                        int64_t m) {
  const int t = blockIdx.y;
  sum_splits_at(workspace + targets.partial_off[t], splits, m, targets.n[t], targets.bias[t],
                static_cast<T*>(targets.y[t]), static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x);
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// K splits for a grid of `tiles` output tiles: about two CTAs an SM, each
// split at least 4 steps (512 of k) long.
int splits_for_tiles(int64_t tiles, int64_t k, int sm_count) {
  const int64_t steps = ceil_div(k, kBK);
  int64_t s = ceil_div(2 * static_cast<int64_t>(std::max(sm_count, 1)), std::max<int64_t>(tiles, 1));
  s = std::min<int64_t>({s, std::max<int64_t>(1, steps / 4), kMaxSplits});
  return static_cast<int>(std::max<int64_t>(s, 1));
}

// APH_GGUF_TILE_SUM_IN_CTA=1: with K split, the last CTA of each tile sums
// the splits' partials (tile::sum_splits_if_last, as the pipelined form
// does) instead of sum_splits_kernel after the GEMM: one launch a linear
// fewer. Opt-in: written in stop 27 without a GPU to measure it.
bool sum_in_cta() {
  static const bool on = env_flag("APH_GGUF_TILE_SUM_IN_CTA", false);
  return on;
}

// APH_GGUF_TILE_OVERLAP: the kernel's form (kForm, or 3 for the pipelined
// kernel where it takes the type and shape); 5 by default since stop 28
// (H100, m = 64, us, forms 2 / 4 / 5: Q4_K 14336x4096 68.1 / 63.2 / 62.5,
// Q6_K 4096x14336 83.7 / 76.7 / 74.7; 8B Q4_K_M x64 with tensor-core
// decode 5305.4 / 5543.1 / 5637.7 tok/s, medians of 2). H200 (stop 25),
// aph_bench_gguf_matvec at m = 64, forms 0 / 2 / 3, us: Q4_K 4096x4096
// 31.0 / 26.3 / 33.5, 1024x4096 16.2 / 13.4 / 23.9, 14336x4096
// 89.1 / 69.7 / 65.2, 4096x14336 90.3 / 70.2 / 71.8; Q6_K 1024x4096
// 16.5 / 15.2 / 24.2, 4096x14336 98.0 / 84.6 / 80.4. Engine, random 8B
// Q4_K_M x64 (with streaming decode attention, one run each): 4339.5 /
// 5237.2 / 4929.1 tok/s.
int kernel_form() {
  static const int form = static_cast<int>(std::clamp<long>(env_int("APH_GGUF_TILE_OVERLAP", 5), 0, 5));
  return form;
}

template <typename T>
cudaError_t launch_typed(uint32_t type, const uint8_t* w, int64_t n, int64_t k, const T* x, int64_t m,
                         const float* bias, T* y, const TileGemmScratch& scratch, int sm_count, cudaStream_t s) {
  float* workspace = scratch.partials;
  cudaError_t rc = cudaErrorInvalidValue;
  if (kernel_form() == 3) {
    int splits = 1;
    bool summed = false;
    if (tile::launch_pipelined(type, w, n, k, x, m, bias, y, scratch, sm_count, s, &rc, &splits, &summed)) {
      if (rc != cudaSuccess || splits == 1 || summed) return rc;
      sum_splits_kernel<T><<<static_cast<unsigned>(ceil_div(m * n, 256)), 256, 0, s>>>(workspace, splits, m, n,
                                                                                        bias, y);
      return cudaGetLastError();
    }
  }
  const int splits = tile_gemm_splits(n, k, m, sm_count);
  const int64_t steps = ceil_div(k, kBK);
  const int per = static_cast<int>(ceil_div(steps, splits));
  const dim3 grid(static_cast<unsigned>(ceil_div(n, kBN)), static_cast<unsigned>(ceil_div(m, kBM)),
                  static_cast<unsigned>(splits));
  unsigned* counts = splits > 1 && sum_in_cta() && static_cast<int64_t>(grid.x) * grid.y <= scratch.tile_count_capacity
                         ? scratch.tile_counts
                         : nullptr;
  dispatch_type(type, [&](auto tag) {
    constexpr int kType = decltype(tag)::value;
    switch (kernel_form()) {
      case 1:
        tile_gemm_kernel<kType, T, 1><<<grid, kThreads, 0, s>>>(w, n, k, x, m, bias, y, workspace, counts, per);
        break;
      case 2:
        tile_gemm_kernel<kType, T, 2><<<grid, kThreads, 0, s>>>(w, n, k, x, m, bias, y, workspace, counts, per);
        break;
      case 4:
        tile_gemm_kernel<kType, T, 4><<<grid, kThreads, 0, s>>>(w, n, k, x, m, bias, y, workspace, counts, per);
        break;
      case 5:
        tile_gemm_kernel<kType, T, 5><<<grid, kThreads, 0, s>>>(w, n, k, x, m, bias, y, workspace, counts, per);
        break;
      default:
        tile_gemm_kernel<kType, T, 0><<<grid, kThreads, 0, s>>>(w, n, k, x, m, bias, y, workspace, counts, per);
    }
    rc = cudaGetLastError();
  });
  if (rc != cudaSuccess || splits == 1 || counts != nullptr) return rc;
  sum_splits_kernel<T><<<static_cast<unsigned>(ceil_div(m * n, 256)), 256, 0, s>>>(workspace, splits, m, n, bias, y);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_multi_typed(uint32_t type, const TileGemmTarget* targets, int count, int64_t k, const T* x,
                               int64_t m, const TileGemmScratch& scratch, int sm_count, cudaStream_t s) {
  const int form = kernel_form();
  if (form != 2 && form != 4 && form != 5) return cudaErrorNotSupported;
  TileTargets tt{};
  int64_t tiles = 0, total_n = 0, widest = 0;
  for (int t = 0; t < count; ++t) {
    tt.w[t] = targets[t].w;
    tt.n[t] = targets[t].n;
    tt.bias[t] = targets[t].bias;
    tt.y[t] = targets[t].y;
    tt.first_tile[t] = static_cast<int>(tiles);
    tiles += ceil_div(targets[t].n, kBN);
    total_n += targets[t].n;
    widest = std::max(widest, targets[t].n);
  }
  tt.first_tile[count] = static_cast<int>(tiles);
  tt.count = count;
  const int64_t m_tiles = ceil_div(m, kBM);
  const int splits = splits_for_tiles(tiles * m_tiles, k, sm_count);
  if (splits > 1) {
    if (scratch.partials == nullptr ||
        static_cast<uint64_t>(splits) * m * total_n * sizeof(float) > scratch.partial_bytes)
      return cudaErrorNotSupported;
    int64_t off = 0;
    for (int t = 0; t < count; ++t) {
      tt.partial_off[t] = off;
      off += splits * m * targets[t].n;
    }
  }
  const int per = static_cast<int>(ceil_div(ceil_div(k, kBK), splits));
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(m_tiles), static_cast<unsigned>(splits));
  unsigned* counts =
      splits > 1 && sum_in_cta() && tiles * m_tiles <= scratch.tile_count_capacity ? scratch.tile_counts : nullptr;
  cudaError_t rc = cudaErrorInvalidValue;
  dispatch_type(type, [&](auto tag) {
    constexpr int kType = decltype(tag)::value;
    if (form == 2)
      tile_gemm_multi_kernel<kType, T, 2><<<grid, kThreads, 0, s>>>(tt, k, x, m, scratch.partials, counts, per);
    else if (form == 4)
      tile_gemm_multi_kernel<kType, T, 4><<<grid, kThreads, 0, s>>>(tt, k, x, m, scratch.partials, counts, per);
    else
      tile_gemm_multi_kernel<kType, T, 5><<<grid, kThreads, 0, s>>>(tt, k, x, m, scratch.partials, counts, per);
    rc = cudaGetLastError();
  });
  if (rc != cudaSuccess || splits == 1 || counts != nullptr) return rc;
  sum_splits_multi_kernel<T><<<dim3(static_cast<unsigned>(ceil_div(m * widest, 256)), static_cast<unsigned>(count)),
                               256, 0, s>>>(tt, scratch.partials, splits, m);
  return cudaGetLastError();
}

}  // namespace

int tile_gemm_splits(int64_t n, int64_t k, int64_t m, int sm_count) {
  return splits_for_tiles(ceil_div(n, kBN) * ceil_div(std::max<int64_t>(m, 1), kBM), k, sm_count);
}

uint64_t tile_gemm_workspace_bytes(int64_t n, int64_t k, int sm_count) {
  uint64_t most = 0;
  for (int64_t m = kBM; m <= kTileGemmMaxM; m += kBM) {
    const int s = tile_gemm_splits(n, k, m, sm_count);
    if (s > 1) most = std::max<uint64_t>(most, static_cast<uint64_t>(s) * m * n * sizeof(float));
  }
  return most;
}

int launch_tile_gemm(uint32_t type, const uint8_t* w, int64_t n, int64_t k, const void* x, int64_t m,
                     const float* bias, void* y, bool bf16, const TileGemmScratch& scratch, int sm_count,
                     void* stream) {
  // k under 2^24: form 4 offsets x (m * k elements) in 32-bit arithmetic.
  if (m < 1 || m > kTileGemmMaxM || k % 32 != 0 || k >= (int64_t{1} << 24) ||
      reinterpret_cast<uintptr_t>(x) % 16 != 0)
    return static_cast<int>(cudaErrorInvalidValue);
  if (tile_gemm_splits(n, k, m, sm_count) > 1 && scratch.partials == nullptr)
    return static_cast<int>(cudaErrorInvalidValue);
  auto s = static_cast<cudaStream_t>(stream);
  if (bf16)
    return static_cast<int>(launch_typed(type, w, n, k, static_cast<const __nv_bfloat16*>(x), m, bias,
                                         static_cast<__nv_bfloat16*>(y), scratch, sm_count, s));
  return static_cast<int>(launch_typed(type, w, n, k, static_cast<const __half*>(x), m, bias,
                                       static_cast<__half*>(y), scratch, sm_count, s));
}

int launch_tile_gemm_multi(uint32_t type, const TileGemmTarget* targets, int count, int64_t k, const void* x,
                           int64_t m, bool bf16, const TileGemmScratch& scratch, int sm_count, void* stream) {
  if (count < 1 || count > kTileGemmMaxTargets || m < 1 || m > kTileGemmMaxM || k % 32 != 0 ||
      k >= (int64_t{1} << 24) || reinterpret_cast<uintptr_t>(x) % 16 != 0)
    return static_cast<int>(cudaErrorInvalidValue);
  for (int t = 0; t < count; ++t)
    if (targets[t].w == nullptr || targets[t].y == nullptr || targets[t].n < 1)
      return static_cast<int>(cudaErrorInvalidValue);
  auto s = static_cast<cudaStream_t>(stream);
  if (bf16)
    return static_cast<int>(
        launch_multi_typed(type, targets, count, k, static_cast<const __nv_bfloat16*>(x), m, scratch, sm_count, s));
  return static_cast<int>(launch_multi_typed(type, targets, count, k, static_cast<const __half*>(x), m, scratch,
                                             sm_count, s));
}

}  // namespace aph::gguf::cuda
