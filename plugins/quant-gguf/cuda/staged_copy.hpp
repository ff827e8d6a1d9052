// The copy plan of the pipelined tile GEMM (tile_gemm_pipelined.cu): which
// bytes of a W row one k step of 128 needs, as 16-byte pieces that cp.async
// can copy raw into shared memory, and where they land. Host and device
// code: the CPU unit test (tests/unit/gguf/test_staged_copy.cpp) checks the
// plan against the device layout (device_layout.hpp); staged_row.cuh adds
// the decoding of the copy.
//
// A plan has
//   kOk       whether the layout can be staged (the bytes a step needs are a
//             whole number of 16-byte pieces at 16-byte aligned offsets)
//   kBytes    bytes of the copy a row (a multiple of 16); kPieces = kBytes / 16
//   base(nb, p) + step(nb, s, p)  byte offset in the device row of nb blocks
//             of piece p of step s (base does not depend on the step); the
//             piece lands at byte 16 p of the row's copy
#pragma once

#if defined(__CUDACC__)
#define APH_STAGED_HD __host__ __device__ __forceinline__
#else
#define APH_STAGED_HD inline
#endif

namespace aph::gguf {

constexpr int kStagedStepK = 128;

// Whole-block layouts of kBlock elements in kStride bytes: a step covers
// 128 / kBlock consecutive blocks of 32 (Q4_0 4 x 20 bytes, Q8_0 4 x 36, ...)
// or half a 256-block, whose whole block is copied (its header serves both
// halves). Step s starts at byte s * kBytes (32-blocks) or (s / 2) * kBytes
// (256-blocks) of the row, so pieces of kBytes keep every start aligned.
// Q2_K (84 bytes) and IQ4_XS (136) are not multiples of 16.
template <int kBlock, int kStride>
struct WholeBlockCopy {
  static_assert(kBlock <= kStagedStepK ? kStagedStepK % kBlock == 0 : kBlock % kStagedStepK == 0,
                "a step covers whole blocks or a whole fraction of one");
  static constexpr int kBlocks = kBlock >= kStagedStepK ? 1 : kStagedStepK / kBlock;
  static constexpr int kBytes = kBlocks * kStride;
  static constexpr bool kOk = kBytes % 16 == 0;
  static constexpr int kPieces = kBytes / 16;

  APH_STAGED_HD static int first_block(int s) { return s * kStagedStepK / kBlock; }
  APH_STAGED_HD static int base(int, int p) { return 16 * p; }
  APH_STAGED_HD static int step(int, int s, int) { return first_block(s) * kStride; }
};

// Q6_K's split rows (device_layout.hpp: codes 192 bytes a block, then 16
// scale bytes a block, then 2 bytes of d a block): a step is half a block;
// pieces 0-11 are the block's codes, 12 its scales, 13 the aligned 16 bytes
// that hold its d (at byte 208 + d_in_piece of the copy).
struct Q6KCopy {
  static constexpr int kCodes = 192, kBytes = kCodes + 16 + 16, kPieces = kBytes / 16;
  static constexpr bool kOk = true;

  APH_STAGED_HD static int d_at(int nb, int blk) { return 208 * nb + 2 * blk; }
  APH_STAGED_HD static int d_in_piece(int nb, int s) { return d_at(nb, s / 2) & 15; }
  APH_STAGED_HD static int base(int nb, int p) {
    return p < kCodes / 16 ? 16 * p : p == kCodes / 16 ? kCodes * nb : 0;
  }
  APH_STAGED_HD static int step(int nb, int s, int p) {
    const int blk = s / 2;
    return p < kCodes / 16 ? kCodes * blk : p == kCodes / 16 ? 16 * blk : d_at(nb, blk) & ~15;
  }
};

}  // namespace aph::gguf
