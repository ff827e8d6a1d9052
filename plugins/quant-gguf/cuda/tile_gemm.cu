// The tile GEMM of tile_gemm.hpp. A CTA of four warps owns 64 rows of W
// (16 per warp) and 64 rows of x; per step of 128 along k it decodes its W
// tile (decode.cuh, the same arithmetic as dequant_rows_kernel) into shared
// memory beside its x tile, then each warp multiplies its 16 rows by the 64
// of x by ldmatrix + mma.sync (wmma's fragment loads compiled to 160 generic
// loads a step where ldmatrix takes 40). A CTA uses 34 KB of shared memory
// and at most 128 registers a thread, so four share an SM and hide each
// other's loads.
//
// A step waits for one global round trip, not three in a row: its x tile is
// issued first as cp.async copies, and its W chunks decode branch-free (an
// out-of-range row or chunk decodes a clamped one), so every weight load can
// issue before any decoding. A thread's addresses are set up once before the
// k loop (recomputed in 64-bit arithmetic, they were a third of the loop's
// instructions), its two W chunks a step are a pair of one row
// (decode_chunk_pair: the k-quants' share their loads), and the k-quants'
// pair bytes are loaded a step ahead (below). H100, m = 64: Q4_K 14336x4096
// 62.5 us, Q6_K 4096x14336 74.7 us; the forms it replaced and their numbers
// are in docs/PERFORMANCE.md (stops 24-28).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>

#include "core/common/cuda_async_copy.cuh"
#include "core/common/env_flag.hpp"
#include "plugins/quant-gguf/cuda/decode.cuh"
#include "plugins/quant-gguf/cuda/device_math.cuh"
#include "plugins/quant-gguf/cuda/tile_gemm.hpp"
#include "plugins/quant-gguf/cuda/tile_gemm_tile.cuh"
#if APH_GGUF_WGMMA
#include "plugins/quant-gguf/cuda/tile_gemm_wgmma.hpp"
#endif

namespace aph::gguf::cuda {

namespace {

using tile::kBK;
using tile::kBM;
using tile::kBN;
using tile::kLd;
using tile::kLdC;
using tile::kThreads;
using tile::TileTargets;

constexpr int kMaxSplits = 16;

// Four CTAs an SM (see the top): a thread gets at most 128 registers
// (Q4_K takes 127).
constexpr int kMinCtasPerSm = 4;

// The body of a CTA: W rows n0.. of one linear (tile_gemm_kernel's, or one
// target's of tile_gemm_multi_kernel), x rows blockIdx.y * kBM.., split
// blockIdx.z.
template <int TYPE, typename T>
__device__ __forceinline__ void tile_gemm_cta(const uint8_t* __restrict__ w, int64_t n, int64_t k,
                                              const T* __restrict__ x, int64_t m, const float* __restrict__ bias,
                                              T* __restrict__ y, float* __restrict__ partial, int steps_per_split,
                                              int64_t n0) {
  // The fp32 results reuse the W tile.
  __shared__ __align__(128) T w_s[kBN * kLd];
  __shared__ __align__(128) T x_s[kBM * kLd];
  static_assert(sizeof(float) * kBM * kLdC <= sizeof(T) * kBN * kLd, "results must fit the W tile");
  float* c_s = reinterpret_cast<float*>(w_s);

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * kBM;
  const int split = blockIdx.z;
  const int64_t nb = k / Decoder<TYPE>::kBlock, chunks = k / 32, rb = row_bytes<TYPE>(nb);
  const int64_t steps = (k + kBK - 1) / kBK;
  const int64_t s_begin = static_cast<int64_t>(split) * steps_per_split;
  const int64_t s_end = min(steps, s_begin + steps_per_split);
  constexpr bool kPrefetchW = PairBytes<TYPE>::kLoads;
  tile::Acc acc = {};

  // A thread's set-up (see the top): x copy u of a step is row xr + 8u,
  // column k0 + 8 xv; the W chunks are chunks k0 / 32 + 2 wp and the next of
  // row wr. 32-bit offsets: the host keeps m * k under 2^31.
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
  // The k-quants' pair bytes come in a step ahead (registers, not shared
  // memory), so a step's decode waits on loads issued a whole step earlier,
  // not on its own loads' round trip. Costs (sm_90 SASS, Q4_K): 127
  // registers against 96 and 529 instructions a step against 431 (the copy
  // of the bytes, addresses recomputed for want of registers).
  PairBytes<TYPE> w_next;
  if constexpr (kPrefetchW) {
    if (s_begin < s_end)
      load_chunk_pair<TYPE>(w_row, nb, static_cast<int>(s_begin * kBK / 32) + 2 * wp, static_cast<int>(chunks), w_next);
  }

  for (int64_t s = s_begin; s < s_end; ++s) {
    const int64_t k0 = s * kBK;
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
    // feeds outputs that write_tile drops, and a clamped chunk past k meets
    // x columns that the copies above filled with zeros.
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      uint32_t packed[16];
      pack_chunk_for_gemm<TYPE, T>(ch[u], packed);
      auto* dst = reinterpret_cast<uint4*>(w_s + wr * kLd + (2 * wp + u) * 32);
#pragma unroll
      for (int v = 0; v < 4; ++v)
        dst[v] = make_uint4(packed[4 * v], packed[4 * v + 1], packed[4 * v + 2], packed[4 * v + 3]);
    }
    cuda_async::cp_async_wait<0>();
    __syncthreads();
    tile::mma_step(w_s, x_s, warp, lane, acc);
    __syncthreads();
  }
  tile::stash_acc(acc, warp, lane, c_s);
  __syncthreads();
  tile::write_tile(c_s, m0, n0, m, n, bias, y, partial);
}

template <int TYPE, typename T>
__global__ void __launch_bounds__(kThreads, kMinCtasPerSm)
    tile_gemm_kernel(const uint8_t* __restrict__ w, int64_t n, int64_t k, const T* __restrict__ x, int64_t m,
                     const float* __restrict__ bias, T* __restrict__ y, float* __restrict__ partial,
                     int steps_per_split) {
  tile_gemm_cta<TYPE, T>(w, n, k, x, m, bias, y, partial, steps_per_split, static_cast<int64_t>(blockIdx.x) * kBN);
}

template <int TYPE, typename T>
__global__ void __launch_bounds__(kThreads, kMinCtasPerSm)
    tile_gemm_multi_kernel(const TileTargets targets, int64_t k, const T* __restrict__ x, int64_t m,
                           float* __restrict__ workspace, int steps_per_split) {
  int64_t n0 = 0;
  const int t = tile::target_of(targets, static_cast<int>(blockIdx.x), &n0);
  tile_gemm_cta<TYPE, T>(targets.w[t], targets.n[t], k, x, m, targets.bias[t], static_cast<T*>(targets.y[t]),
                         workspace + targets.partial_off[t], steps_per_split, n0);
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

// The CTAs an SM that K splitting aims at (APH_GGUF_TILE_SPLIT_CTAS,
// docs/CONFIG.md): kMinCtasPerSm unless set to 1..kMinCtasPerSm. H200, 8B
// Q4_K_M at 64 sequences, medians of 3 interleaved runs: 6677.0 tok/s with
// 4, 6560.0 with 3, 6513.7 with 2 (the rule before stop 31); the down
// projection, Q4_K 4096 x 14336 at m = 64, 53.8 us in 8 splits against
// 60.4 in 5. (Splits shorter than 4 steps, and the next step's x tile
// copied into a second buffer during this step's products, 52 KB a CTA,
// measured no gain and -16 % there: stop 31 in docs/PERFORMANCE.md.)
int64_t split_ctas_per_sm() {
  static const int64_t c = [] {
    const long v = env_int("APH_GGUF_TILE_SPLIT_CTAS", kMinCtasPerSm);
    return static_cast<int64_t>(v >= 1 && v <= kMinCtasPerSm ? v : kMinCtasPerSm);
  }();
  return c;
}

// K splits for a grid of `tiles` output tiles: about split_ctas_per_sm()
// CTAs an SM, but not more than one wave of kMinCtasPerSm an SM where the
// tiles leave room (a second, partial wave would double a split's time),
// each split at least 4 steps (512 of k) long.
int splits_for_tiles(int64_t tiles, int64_t k, int sm_count) {
  const int64_t steps = ceil_div(k, kBK), sms = std::max(sm_count, 1);
  tiles = std::max<int64_t>(tiles, 1);
  int64_t s = ceil_div(split_ctas_per_sm() * sms, tiles);
  s = std::min<int64_t>({s, std::max<int64_t>(1, kMinCtasPerSm * sms / tiles), std::max<int64_t>(1, steps / 4),
                         kMaxSplits});
  return static_cast<int>(std::max<int64_t>(s, 1));
}

// Whether a launch takes the wgmma form (tile_gemm_wgmma.cu): built, this
// device and type, and the scratch holds x's images.
bool takes_wgmma(uint32_t type, int64_t k, const TileGemmScratch& scratch) {
  const uint64_t need = tile_gemm_image_bytes(k);
  return need != 0 && scratch.x_image != nullptr && scratch.x_image_bytes >= need && tile_gemm_wgmma_takes(type);
}

template <typename T>
cudaError_t launch_typed(uint32_t type, const uint8_t* w, int64_t n, int64_t k, const T* x, int64_t m,
                         const float* bias, T* y, const TileGemmScratch& scratch, int sm_count, cudaStream_t s) {
  float* workspace = scratch.partials;
  const int splits = tile_gemm_splits(n, k, m, sm_count);
  const int64_t steps = ceil_div(k, kBK);
  const int per = static_cast<int>(ceil_div(steps, splits));
  const dim3 grid(static_cast<unsigned>(ceil_div(n, kBN)), static_cast<unsigned>(ceil_div(m, kBM)),
                  static_cast<unsigned>(splits));
  cudaError_t rc = cudaErrorInvalidValue;
  if (takes_wgmma(type, k, scratch)) {
#if APH_GGUF_WGMMA
    rc = launch_wgmma_tile_gemm<T>(type, w, n, k, x, m, bias, y, workspace, scratch.x_image, grid, per, s);
#endif
  } else {
    dispatch_type(type, [&](auto tag) {
      constexpr int kType = decltype(tag)::value;
      tile_gemm_kernel<kType, T><<<grid, kThreads, 0, s>>>(w, n, k, x, m, bias, y, workspace, per);
      rc = cudaGetLastError();
    });
  }
  if (rc != cudaSuccess || splits == 1) return rc;
  sum_splits_kernel<T><<<static_cast<unsigned>(ceil_div(m * n, 256)), 256, 0, s>>>(workspace, splits, m, n, bias, y);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_multi_typed(uint32_t type, const TileGemmTarget* targets, int count, int64_t k, const T* x,
                               int64_t m, const TileGemmScratch& scratch, int sm_count, cudaStream_t s) {
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
  cudaError_t rc = cudaErrorInvalidValue;
  if (takes_wgmma(type, k, scratch)) {
#if APH_GGUF_WGMMA
    rc = launch_wgmma_tile_gemm_multi<T>(type, tt, k, x, m, scratch.partials, scratch.x_image, grid, per, s);
#endif
  } else {
    dispatch_type(type, [&](auto tag) {
      constexpr int kType = decltype(tag)::value;
      tile_gemm_multi_kernel<kType, T><<<grid, kThreads, 0, s>>>(tt, k, x, m, scratch.partials, per);
      rc = cudaGetLastError();
    });
  }
  if (rc != cudaSuccess || splits == 1) return rc;
  sum_splits_multi_kernel<T><<<dim3(static_cast<unsigned>(ceil_div(m * widest, 256)), static_cast<unsigned>(count)),
                               256, 0, s>>>(tt, scratch.partials, splits, m);
  return cudaGetLastError();
}

}  // namespace

uint64_t tile_gemm_image_bytes(int64_t k) {
#if APH_GGUF_WGMMA
  return wgmma_x_image_bytes(k);
#else
  (void)k;
  return 0;
#endif
}

bool tile_gemm_wgmma_takes(uint32_t ggml_type) {
#if APH_GGUF_WGMMA
  return wgmma_tile_gemm_takes(ggml_type);
#else
  (void)ggml_type;
  return false;
#endif
}

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
  // k under 2^24: the kernel offsets x (m * k elements) in 32-bit arithmetic.
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
