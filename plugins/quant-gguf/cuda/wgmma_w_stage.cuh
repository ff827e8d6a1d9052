// A k step's W bytes of the wgmma tile GEMM's 64-row tile, staged in shared
// memory by cp.async one step ahead (tile_gemm_wgmma.cu), and decoded from
// there. Read straight from global memory, a step's decode waited on its own
// loads' DRAM round trip, every step, in series with its MMAs; staged, the
// copies of step s + 1 are in flight while step s decodes and multiplies, and
// they cost no registers (a register copy of the next step's bytes would
// have cost 24-40 and the fourth CTA an SM).
//
// A step is 128 columns: half h = s % 2 of a 256-value block. Per row, the
// stage holds the 16-byte pieces of that half (all pieces 16 bytes, so one
// cp.async form serves every type):
//   Q4_K (5): the header (d, dmin, scales), the half's 64 code bytes;
//   Q5_K (7): the header, the block's 32 high-bit bytes, the half's codes;
//   Q6_K (8): the half's 64 low-code and 32 high-bit bytes, the block's 16
//             scales, the 16 aligned bytes of the d array that hold its d.
// Thread q of a quad decodes chunk q of the step (elements 32 q ..) of its
// row: chunk j = 4 h + q of the block.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "core/common/cuda_async_copy.cuh"
#include "plugins/quant-gguf/cuda/decode.cuh"
#include "plugins/quant-gguf/cuda/device_math.cuh"

namespace aph::gguf::cuda::wstage {

template <int TYPE>
struct Stage;

template <>
struct Stage<12> {  // Q4_K
  static constexpr int kPieces = 5, kBlockBytes = 144;
  __device__ static int64_t piece_offset(int p, int64_t blk, int h, int64_t) {
    return blk * kBlockBytes + (p == 0 ? 0 : 16 + 64 * h + 16 * (p - 1));
  }
};

template <>
struct Stage<13> {  // Q5_K
  static constexpr int kPieces = 7, kBlockBytes = 176;
  __device__ static int64_t piece_offset(int p, int64_t blk, int h, int64_t) {
    return blk * kBlockBytes + (p < 3 ? 16 * p : 48 + 64 * h + 16 * (p - 3));
  }
};

template <>
struct Stage<14> {  // Q6_K, in the split device layout of Decoder<14>
  static constexpr int kPieces = 8;
  __device__ static int64_t piece_offset(int p, int64_t blk, int h, int64_t nb) {
    if (p < 4) return 192 * blk + 64 * h + 16 * p;
    if (p < 6) return 192 * blk + 128 + 32 * h + 16 * (p - 4);
    if (p == 6) return 192 * nb + 16 * blk;
    return (208 * nb + 2 * blk) & ~int64_t{15};
  }
};

template <int TYPE>
constexpr int kRowBytes = Stage<TYPE>::kPieces * 16;

// Q6_K's 128-byte rows would put the same piece of the 8 rows a warp's load
// reads in the same banks (8-way conflicts): piece p of row r sits at slot
// p ^ (r % 8). Q4_K's 80-byte and Q5_K's 112-byte rows already spread them.
template <int TYPE>
__device__ __forceinline__ int slot_of(int p, int r) {
  return TYPE == 14 ? p ^ (r & 7) : p;
}

// Copies step s's pieces of the tile's 64 rows into stage (kRowBytes a
// row): thread tid takes pieces tid, tid + threads, ... Rows past n copy row
// n - 1 (their outputs are dropped).
template <int TYPE, int kThreads>
__device__ __forceinline__ void copy_step(const uint8_t* __restrict__ w, int64_t n, int64_t n0, int64_t rb,
                                          int64_t nb, int64_t s, uint8_t* stage, int tid) {
  using S = Stage<TYPE>;
  constexpr int kTotal = 64 * S::kPieces;
  const int64_t blk = s / 2;
  const int h = static_cast<int>(s % 2);
#pragma unroll
  for (int u = 0; u < (kTotal + kThreads - 1) / kThreads; ++u) {
    const int idx = u * kThreads + tid;
    if (kTotal % kThreads == 0 || idx < kTotal) {
      const int r = idx / S::kPieces, p = idx % S::kPieces;
      const uint8_t* src = w + min(n0 + r, n - 1) * rb + S::piece_offset(p, blk, h, nb);
      cuda_async::cp_async_16_weights(stage + r * kRowBytes<TYPE> + 16 * slot_of<TYPE>(p, r), src);
    }
  }
}

template <int TYPE>
__device__ __forceinline__ int4 piece(const uint8_t* row_s, int p, int r) {
  return *reinterpret_cast<const int4*>(row_s + 16 * slot_of<TYPE>(p, r));
}

// Chunk q of step s of row r, from its staged bytes row_s; decodes what
// Decoder<TYPE>::chunk does for chunk 4 (s % 2) + q of block s / 2.
template <int TYPE>
__device__ __forceinline__ void decode(const uint8_t* row_s, int r, int64_t s, int q, Chunk& c) {
  const int h = static_cast<int>(s % 2), j = 4 * h + q;
  if constexpr (TYPE == 12 || TYPE == 13) {
    constexpr int kCodes = TYPE == 12 ? 1 : 3;  // first code piece
    const K4Factors f = k4_pair_factors(piece<TYPE>(row_s, 0, r), j / 2);
    set_affine(c, q & 1 ? f.db : f.da, -(q & 1 ? f.mb : f.ma));
    const int shift = 4 * (q & 1);
    const int4 codes[2] = {piece<TYPE>(row_s, kCodes + 2 * (q / 2), r), piece<TYPE>(row_s, kCodes + 2 * (q / 2) + 1, r)};
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      c.q[i] = (int4_at(codes[i / 4], i % 4) >> shift) & 0x0F0F0F0F;
      if constexpr (TYPE == 13) {  // the 5th bit of element 32 j + l at bit j of qh[l]
        const int high = int4_at(piece<TYPE>(row_s, 1 + i / 4, r), i % 4);
        c.q[i] |= ((high >> j) & 0x01010101) << 4;
      }
    }
  } else {
    static_assert(TYPE == 14, "no staged form for this type");
    const int4 low[2] = {piece<TYPE>(row_s, 2 * (q & 1), r), piece<TYPE>(row_s, 2 * (q & 1) + 1, r)};
    const int4 high[2] = {piece<TYPE>(row_s, 4, r), piece<TYPE>(row_s, 5, r)};
    const int lshift = 4 * (q >> 1), hshift = 2 * q;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int lo = (int4_at(low[i / 4], i % 4) >> lshift) & 0x0F0F0F0F;
      const int hi = (int4_at(high[i / 4], i % 4) >> hshift) & 0x03030303;
      c.q[i] = __vsub4(lo | (hi << 4), 0x20202020);
    }
    const uint8_t* scales = row_s + 16 * slot_of<TYPE>(6, r) + 8 * h + 2 * q;
    const int64_t blk = s / 2;
    const float d = ld_f16(row_s + 16 * slot_of<TYPE>(7, r) + 2 * static_cast<int>(blk & 7));
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      c.a[k] = d * static_cast<float>(static_cast<int8_t>(scales[k]));
      c.b[k] = 0.0f;
    }
  }
}

}  // namespace aph::gguf::cuda::wstage
