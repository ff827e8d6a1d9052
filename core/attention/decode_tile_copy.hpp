// Where the tensor-core decode kernel's copies of one warp step come from
// (decode_mma.cu): a step is kTile consecutive tokens t0 .. t0 + kTile - 1 of
// one sequence, each a row of kChunks 16-byte pieces of one KV head; lane L
// copies pieces L, L + 32, ... The work is set up in three levels so that
// each copy costs a compare, a select and an add: what depends on the lane
// alone (TileLane, once a kernel), what depends on the step (TileStep: the
// one or two cache blocks its rows lie in, blocks being at least kTile
// tokens long), and the copy itself (TileStep::offset).
//
// Why: with the offset of every copy computed from the block table in 64-bit
// arithmetic (a division by the runtime block size a step, a 64-bit multiply
// a copy), the kernel's loop at head size 128 was 604 instructions a warp
// step, about 420 of them before its first MMA (cuobjdump -sass, sm_90).
//
// Host and device code: the CPU unit test checks every copy's offset against
// the block table.
#pragma once

#include <cstdint>

#include "core/attention/decode_partition.hpp"  // APH_DECODE_HD

namespace aph::attention {

// The byte of piece `chunk` of tile row `row` in shared memory, rows
// ring_stride apart. Padded rows (ring_stride 16 bytes past the row) put the
// 8 rows that one ldmatrix phase reads at one piece in 8 different bank
// groups; with `swizzle` the rows are unpadded and piece c of row r sits at
// c ^ (r % 8) instead (rows of whole groups of 8 pieces), the same spread in
// 16 bytes a row less: at head size 128 the tensor-core decode's rings then
// need 98,304 bytes a CTA instead of 104,448, under the 101,376 that sm_86
// and sm_89 allow.
APH_DECODE_HD int32_t ring_piece(int row, int chunk, int32_t ring_stride, bool swizzle) {
  return row * ring_stride + (swizzle ? chunk ^ (row & 7) : chunk) * 16;
}

// A lane's copies of a step: copy u is piece lane + 32 u, row `row[u]` of
// the tile (kTile when past the tile's pieces: no copy), at byte `rel[u]`
// from its row's slot in the cache (row * slot_stride + chunk * 16) and at
// byte `ring[u]` of the tile in shared memory (ring_piece).
template <int kTile, int kChunks>
struct TileLane {
  static constexpr int kPieces = kTile * kChunks;
  static constexpr int kRounds = (kPieces + 31) / 32;
  int32_t row[kRounds], rel[kRounds], ring[kRounds];

  APH_DECODE_HD TileLane(int lane, int32_t slot_stride, int32_t ring_stride, bool swizzle = false) {
    for (int u = 0; u < kRounds; ++u) {
      const int i = lane + 32 * u;
      const int r = i < kPieces ? i / kChunks : kTile, chunk = i % kChunks;
      row[u] = r;
      rel[u] = r * slot_stride + chunk * 16;
      ring[u] = ring_piece(r, chunk, ring_stride, swizzle);
    }
  }
};

// The step's blocks: rows below first_rows lie in the block of token t0,
// the rest in the next one; base0 and base1 are the byte offsets (in the
// cache, without the head's offset) that a row's rel adds to, so that row r
// of either block lands at its slot. valid_rows: the rows before the range's
// end (the others copy nothing).
struct TileStep {
  int64_t base0 = 0, base1 = 0;
  int32_t first_rows = 0, valid_rows = 0;

  template <int kTile, int kChunks>
  APH_DECODE_HD int64_t offset(const TileLane<kTile, kChunks>& lane, int u) const {
    return (lane.row[u] < first_rows ? base0 : base1) + lane.rel[u];
  }
  template <int kTile, int kChunks>
  APH_DECODE_HD bool valid(const TileLane<kTile, kChunks>& lane, int u) const {
    return lane.row[u] < valid_rows;
  }
};

// log2 of the block size when it is a power of two, else -1 (a division a
// step then).
APH_DECODE_HD int32_t block_shift(int32_t block_size) {
  if (block_size <= 0 || (block_size & (block_size - 1)) != 0) return -1;
  int32_t s = 0;
  while ((1 << s) < block_size) ++s;
  return s;
}

// The step of tokens t0 .. t0 + kTile - 1 (t0 < end) of a sequence whose
// block table is `table`, blocks of block_size >= kTile tokens, each token's
// row slot_stride bytes after the previous one's in a block (all KV heads).
// The next block's entry is read only when a row inside the range lies in
// it.
template <int kTile>
APH_DECODE_HD TileStep tile_step(int32_t t0, int32_t end, const int32_t* table, int32_t block_size, int32_t shift,
                                 int32_t slot_stride) {
  const int32_t index = shift >= 0 ? t0 >> shift : t0 / block_size;
  const int32_t off = t0 - index * block_size;
  TileStep s;
  s.first_rows = block_size - off;
  s.valid_rows = end - t0 < kTile ? end - t0 : kTile;
  const bool spans = s.first_rows < s.valid_rows;
  const int64_t blk0 = table[index], blk1 = spans ? table[index + 1] : blk0;
  const int64_t block_bytes = static_cast<int64_t>(block_size) * slot_stride, row0 = static_cast<int64_t>(off) * slot_stride;
  s.base0 = blk0 * block_bytes + row0;
  s.base1 = (blk1 - 1) * block_bytes + row0;  // row r >= first_rows is row r - first_rows of blk1
  return s;
}

}  // namespace aph::attention
