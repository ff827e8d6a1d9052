// The tile GEMM with its loads pipelined (APH_GGUF_TILE_OVERLAP=3; opt-in
// until the H200 has measured it). Same tile, products and results as
// tile_gemm.cu's form 2 (tile_gemm_tile.cuh); what changes is where a
// step's inputs come from. The other forms load W and x from global memory
// at the start of each step and wait for them, so every step waits at least
// one memory round trip, and a CTA has only its own step to hide it behind
// (about two CTAs an SM on the 8B shapes). Here each step's raw W bytes
// (staged_row.cuh: the blocks as they sit in the device layout) and x tile
// are copied by cp.async kStages - 1 steps ahead into a ring in shared
// memory. A step then waits only for copies issued two steps earlier,
// decodes W from shared memory into the BF16/F16 tile, and multiplies.
// K is split so that the grid is one wave (two CTAs an SM: the other
// forms' rule, rounding up, made 320 CTAs of a 4096-row linear at m = 64,
// one wave and a fifth at this occupancy); with K split, the last CTA to
// finish a tile sums the splits' partials (sum_splits_if_last), so the
// second kernel of tile_gemm.cu does not run (594 us of the 8B's step at
// m = 64 in stop 20's trace).
//
// Shared memory (dynamic): the decoded tile (17 KB, then the fp32 results),
// kStages x tiles of x (17 KB each), kStages x 64 rows of raw W (9 KB a step
// for Q4_K, 14 KB for Q6_K): 97 KB for Q4_K, 113 KB for Q6_K, so two CTAs
// fit an SM (228 KB).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>

#include "core/common/cuda_async_copy.cuh"
#include "plugins/quant-gguf/cuda/decode.cuh"
#include "plugins/quant-gguf/cuda/staged_row.cuh"
#include "plugins/quant-gguf/cuda/tile_gemm_tile.cuh"

namespace aph::gguf::cuda::tile {

namespace {

constexpr int kStages = 3;
static_assert(kStagedStepK == kBK, "a staged row holds one step");

template <int TYPE, typename T>
constexpr int smem_bytes() {
  return static_cast<int>(sizeof(T)) * (kBN * kLd + kStages * kBM * kLd) + kStages * kBN * StagedRow<TYPE>::kBytes;
}

template <int TYPE, typename T>
__global__ void __launch_bounds__(kThreads, 2)
    tile_gemm_pipelined_kernel(const uint8_t* __restrict__ w, int64_t n, int64_t k, const T* __restrict__ x,
                               int64_t m, const float* __restrict__ bias, T* __restrict__ y,
                               float* __restrict__ partial, unsigned* __restrict__ tile_counts,
                               int steps_per_split) {
  using R = StagedRow<TYPE>;
  static_assert(sizeof(float) * kBM * kLdC <= sizeof(T) * kBN * kLd, "results must fit the W tile");
  extern __shared__ __align__(128) uint8_t smem[];
  T* w_s = reinterpret_cast<T*>(smem);  // the decoded W tile, then the fp32 results
  T* x_ring = w_s + kBN * kLd;
  uint8_t* raw_ring = reinterpret_cast<uint8_t*>(x_ring + kStages * kBM * kLd);

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * kBN, m0 = static_cast<int64_t>(blockIdx.y) * kBM;
  const int nb = static_cast<int>(k / Decoder<TYPE>::kBlock);
  const int64_t rb = row_bytes<TYPE>(nb);
  const int s_begin = static_cast<int>(blockIdx.z) * steps_per_split;
  const int s_end = min(static_cast<int>(k / kBK), s_begin + steps_per_split);

  // What a thread copies each step, worked out once. x: rows tid / 16 + 8u,
  // 16 bytes at column 8 (tid % 16) of the step; rows past m as zeros.
  constexpr int kXCopies = kBM * (kBK / 8) / kThreads;
  static_assert(kThreads % (kBK / 8) == 0, "a thread keeps its x column");
  const T* x_src = x + (m0 + tid / (kBK / 8)) * k + tid % (kBK / 8) * 8;
  const int x_dst = tid / (kBK / 8) * kLd + tid % (kBK / 8) * 8;
  // W: piece q = tid + u * kThreads of the 64 rows' copies goes to byte 16q
  // of the slot; rows past n copy the last row and are zeroed when decoded.
  constexpr int kWCopies = (kBN * R::kPieces + kThreads - 1) / kThreads;
  const uint8_t* w_src[kWCopies];
  int w_piece[kWCopies];
#pragma unroll
  for (int u = 0; u < kWCopies; ++u) {
    const int q = tid + u * kThreads;
    w_piece[u] = q % R::kPieces;
    w_src[u] = w + min(n0 + q / R::kPieces, n - 1) * rb + R::base(nb, w_piece[u]);
  }

  auto issue = [&](int s) {
    const int slot = s % kStages;
    T* x_s = x_ring + slot * kBM * kLd;
#pragma unroll
    for (int u = 0; u < kXCopies; ++u) {
      constexpr int kRowsApart = kThreads / (kBK / 8);
      const bool inside = m0 + tid / (kBK / 8) + u * kRowsApart < m;
      // A copy of 0 source bytes reads nothing (it zero-fills), so the
      // address of a row past m is left as computed: selecting a valid one
      // cost 62 instructions a step (Q4_K, sm_90 SASS).
      cuda_async::cp_async_16(x_s + x_dst + u * kRowsApart * kLd, x_src + u * kRowsApart * k + s * kBK,
                              inside ? 16 : 0);
    }
    uint8_t* raw = raw_ring + slot * kBN * R::kBytes;
#pragma unroll
    for (int u = 0; u < kWCopies; ++u) {
      const int q = tid + u * kThreads;
      if ((kBN * R::kPieces) % kThreads == 0 || q < kBN * R::kPieces)
        cuda_async::cp_async_16(raw + 16 * q, w_src[u] + R::step(nb, s, w_piece[u]), 16);
    }
  };

  // Every thread commits one group a step (empty past the split's end), so
  // waiting for all but the newest kStages - 2 groups means step s landed.
#pragma unroll
  for (int i = 0; i < kStages - 1; ++i) {
    if (s_begin + i < s_end) issue(s_begin + i);
    cuda_async::cp_async_commit();
  }

  Acc acc = {};
  for (int s = s_begin; s < s_end; ++s) {
    cuda_async::cp_async_wait<kStages - 2>();
    // Step s's copies are in for every thread, and every warp is done with
    // step s - 1: its ring slot and the decoded tile are free again.
    __syncthreads();
    if (s + kStages - 1 < s_end) issue(s + kStages - 1);
    cuda_async::cp_async_commit();

    // W: 64 rows x 4 chunks, two chunks a thread, four threads a row.
    const uint8_t* raw = raw_ring + s % kStages * kBN * R::kBytes;
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const int q = tid + u * kThreads;
      const int r = q / 4, c = q % 4;
      Chunk ch;
      R::chunk(raw + r * R::kBytes, nb, s, c, ch);
      uint32_t packed[16];
      pack_chunk_for_gemm<TYPE, T>(ch, packed);
      const bool inside = n0 + r < n;
      auto* dst = reinterpret_cast<uint4*>(w_s + r * kLd + c * 32);
#pragma unroll
      for (int v = 0; v < 4; ++v)
        dst[v] = inside ? make_uint4(packed[4 * v], packed[4 * v + 1], packed[4 * v + 2], packed[4 * v + 3])
                        : make_uint4(0, 0, 0, 0);
    }
    __syncthreads();
    mma_step(w_s, x_ring + s % kStages * kBM * kLd, warp, lane, acc);
  }
  cuda_async::cp_async_wait<0>();
  __syncthreads();  // every warp's last products read w_s, which now takes the results
  float* c_s = reinterpret_cast<float*>(w_s);
  stash_acc(acc, warp, lane, c_s);
  __syncthreads();
  write_tile(c_s, m0, n0, m, n, bias, y, partial);
  if (gridDim.z > 1 && tile_counts != nullptr) sum_splits_if_last(tile_counts, partial, m0, n0, m, n, bias, y);
}

// CTAs of `kernel` resident on one SM (cached per kernel; the smem is the
// kernel's own constant).
int ctas_per_sm(const void* kernel, int smem) {
  static std::mutex mu;
  static std::map<const void*, int> of;
  std::lock_guard<std::mutex> lock(mu);
  auto it = of.find(kernel);
  if (it != of.end()) return it->second;
  int per_sm = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, smem) != cudaSuccess) {
    cudaGetLastError();
    per_sm = 1;
  }
  return of[kernel] = per_sm < 1 ? 1 : per_sm;
}

// K splits for one wave: the resident CTAs over the tiles, rounded down (a
// second, partial wave would cost a whole CTA's time), at most what
// tile_gemm_splits sized the workspace for, and at least 1.
int one_wave_splits(int64_t n, int64_t k, int64_t m, int sm_count, int per_sm) {
  const int64_t tiles = (n + kBN - 1) / kBN * ((m + kBM - 1) / kBM);
  const int64_t fit = static_cast<int64_t>(per_sm) * sm_count / tiles;
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(fit, tile_gemm_splits(n, k, m, sm_count))));
}

}  // namespace

template <typename T>
bool launch_pipelined(uint32_t type, const uint8_t* w, int64_t n, int64_t k, const T* x, int64_t m,
                      const float* bias, T* y, const TileGemmScratch& scratch, int sm_count, cudaStream_t s,
                      cudaError_t* rc, int* splits, bool* summed) {
  if (k % kBK != 0) return false;
  bool taken = false;
  dispatch_type(type, [&](auto tag) {
    constexpr int kType = decltype(tag)::value;
    if constexpr (StagedRow<kType>::kOk) {
      taken = true;
      auto* kernel = tile_gemm_pipelined_kernel<kType, T>;
      constexpr int kSmem = smem_bytes<kType, T>();
      *rc = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
      if (*rc != cudaSuccess) return;
      *splits = one_wave_splits(n, k, m, sm_count, ctas_per_sm(reinterpret_cast<const void*>(kernel), kSmem));
      const dim3 grid(static_cast<unsigned>((n + kBN - 1) / kBN), static_cast<unsigned>((m + kBM - 1) / kBM),
                      static_cast<unsigned>(*splits));
      const int steps = static_cast<int>(k / kBK), per = (steps + *splits - 1) / *splits;
      // The last CTA of a tile sums its splits when there is a counter for
      // every tile.
      unsigned* counts = *splits > 1 && static_cast<int64_t>(grid.x) * grid.y <= scratch.tile_count_capacity
                             ? scratch.tile_counts
                             : nullptr;
      *summed = counts != nullptr;
      kernel<<<grid, kThreads, kSmem, s>>>(w, n, k, x, m, bias, y, scratch.partials, counts, per);
      *rc = cudaGetLastError();
    }
  });
  return taken;
}

template bool launch_pipelined<__half>(uint32_t, const uint8_t*, int64_t, int64_t, const __half*, int64_t,
                                       const float*, __half*, const TileGemmScratch&, int, cudaStream_t,
                                       cudaError_t*, int*, bool*);
template bool launch_pipelined<__nv_bfloat16>(uint32_t, const uint8_t*, int64_t, int64_t, const __nv_bfloat16*,
                                              int64_t, const float*, __nv_bfloat16*, const TileGemmScratch&, int,
                                              cudaStream_t, cudaError_t*, int*, bool*);

}  // namespace aph::gguf::cuda::tile
