// The tensor-core decode kernel's copy addressing (core/attention/
// decode_tile_copy.hpp), checked on the CPU: for every lane and copy of a
// step, at every start in a context and for block sizes that are and are
// not powers of two, the copy reads the slot the block table names for its
// token and chunk, lands at its row and chunk of the tile, takes each piece
// of the rows inside the range once, and reads no table entry past the
// context's blocks (the table is sized to them: ASan would see it).
#include "core/attention/decode_tile_copy.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace aph::attention {
namespace {

constexpr int kTile = 16;

template <int kChunks>
void check_steps(int32_t block_size, int32_t ctx, int32_t num_kv_heads, bool swizzle = false) {
  const int32_t blocks = (ctx + block_size - 1) / block_size;
  std::vector<int32_t> table(blocks);
  std::iota(table.begin(), table.end(), 0);
  std::mt19937 rng(static_cast<uint32_t>(block_size * 131 + ctx));
  std::shuffle(table.begin(), table.end(), rng);
  const int32_t slot_stride = num_kv_heads * kChunks * 16, ring_stride = kChunks * 16 + (swizzle ? 0 : 16);
  const int32_t shift = block_shift(block_size);
  ASSERT_EQ(shift >= 0, (block_size & (block_size - 1)) == 0);
  using Lane = TileLane<kTile, kChunks>;
  std::vector<Lane> lanes;
  for (int lane = 0; lane < 32; ++lane) lanes.emplace_back(lane, slot_stride, ring_stride, swizzle);
  // Every start a warp step can have: the kernel's tiles start anywhere a
  // split's range puts them.
  for (int32_t t0 = 0; t0 < ctx; ++t0) {
    for (int32_t end : {std::min(ctx, t0 + 1), std::min(ctx, t0 + 7), ctx}) {
      SCOPED_TRACE("block " + std::to_string(block_size) + " chunks " + std::to_string(kChunks) + " t0 " +
                   std::to_string(t0) + " end " + std::to_string(end));
      const TileStep step = tile_step<kTile>(t0, end, table.data(), block_size, shift, slot_stride);
      std::vector<int> taken(kTile * kChunks, 0);
      for (int lane = 0; lane < 32; ++lane) {
        for (int u = 0; u < Lane::kRounds; ++u) {
          const int i = lane + 32 * u;
          const int row = lanes[lane].row[u];
          if (i >= Lane::kPieces) {
            ASSERT_FALSE(step.valid(lanes[lane], u));
            continue;
          }
          const int chunk = i % kChunks, tok = t0 + row;
          ASSERT_EQ(lanes[lane].ring[u], ring_piece(row, chunk, ring_stride, swizzle));
          ASSERT_EQ(step.valid(lanes[lane], u), tok < end) << "lane " << lane << " copy " << u;
          if (tok >= end) continue;
          const int64_t want =
              (static_cast<int64_t>(table[tok / block_size]) * block_size + tok % block_size) * slot_stride + chunk * 16;
          ASSERT_EQ(step.offset(lanes[lane], u), want) << "lane " << lane << " copy " << u << " token " << tok;
          ++taken[row * kChunks + chunk];
        }
      }
      for (int row = 0; row < kTile; ++row)
        for (int chunk = 0; chunk < kChunks; ++chunk)
          ASSERT_EQ(taken[row * kChunks + chunk], t0 + row < end ? 1 : 0) << "row " << row << " chunk " << chunk;
    }
  }
}

TEST(DecodeTileCopy, EveryCopyReadsItsTokensSlot) {
  for (int32_t block_size : {16, 32, 48, 64, 256}) {
    for (int32_t ctx : {1, 15, 16, 17, 100, 577}) {
      check_steps<16>(block_size, ctx, 8);  // head size 128, 16-bit cache
      check_steps<8>(block_size, ctx, 3);   // 64 and 16-bit, or 128 and fp8
      check_steps<12>(block_size, ctx, 2);  // 96, 16-bit: the pieces are not whole rounds
      check_steps<10>(block_size, ctx, 1);  // 80, 16-bit
      check_steps<16>(block_size, ctx, 8, /*swizzle=*/true);
      check_steps<8>(block_size, ctx, 3, /*swizzle=*/true);
      if (HasFatalFailure()) return;
    }
  }
}

TEST(DecodeTileCopy, BlockShift) {
  EXPECT_EQ(block_shift(16), 4);
  EXPECT_EQ(block_shift(1), 0);
  EXPECT_EQ(block_shift(256), 8);
  EXPECT_EQ(block_shift(48), -1);
  EXPECT_EQ(block_shift(0), -1);
}

// The swizzled ring keeps each row's pieces inside the row, one piece a
// place, and puts the 8 rows of one ldmatrix phase (rows 0-7 or 8-15 at one
// piece) in 8 different 16-byte bank groups of 128 bytes, as the padding did.
TEST(DecodeTileCopy, SwizzledRingSpreadsLdmatrixRows) {
  for (int chunks : {8, 16}) {
    const int32_t stride = chunks * 16;
    for (int row = 0; row < kTile; ++row) {
      std::vector<int> seen(chunks, 0);
      for (int c = 0; c < chunks; ++c) {
        const int32_t at = ring_piece(row, c, stride, true) - row * stride;
        ASSERT_GE(at, 0);
        ASSERT_LT(at, stride);
        ++seen[at / 16];
      }
      for (int c = 0; c < chunks; ++c) EXPECT_EQ(seen[c], 1) << "row " << row << " place " << c;
    }
    for (int first : {0, 8}) {
      for (int c = 0; c < chunks; ++c) {
        std::vector<int> group(8, 0);
        for (int r = first; r < first + 8; ++r) ++group[(ring_piece(r, c, stride, true) / 16) % 8];
        for (int b = 0; b < 8; ++b) EXPECT_EQ(group[b], 1) << "chunks " << chunks << " piece " << c << " rows from " << first;
      }
    }
  }
}

}  // namespace
}  // namespace aph::attention
