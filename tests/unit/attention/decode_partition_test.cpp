// The device-side partition of a decode launch (core/attention/
// decode_partition.hpp), checked on the CPU: the active splits tile the
// context, and a CTA's warp deal takes every token of its split exactly once
// and finds each token's owner back.
#include "core/attention/decode_partition.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace aph::attention {
namespace {

TEST(DecodePartition, ActiveSplitsTileTheContext) {
  for (int32_t min_tokens : {kDecodeMinSplitTokens, 16, 256}) {
    for (int32_t splits : {1, 2, 7, 32, 64}) {
      for (int32_t ctx : {1, 2, 63, 64, 65, 127, 576, 1000, 4097, 8192, 8193}) {
        SCOPED_TRACE("min " + std::to_string(min_tokens) + " splits " + std::to_string(splits) +
                     " ctx " + std::to_string(ctx));
        const int32_t active = decode_active_splits(ctx, splits, min_tokens);
        ASSERT_GE(active, 1);
        ASSERT_LE(active, splits);
        // Below the grid's count, the fewest splits of at most min_tokens
        // each: one fewer would make a split longer than min_tokens.
        const int32_t longest = (ctx + active - 1) / active;
        if (active < splits) {
          EXPECT_LE(longest, min_tokens);
          if (active > 1) {
            EXPECT_GT((ctx + active - 2) / (active - 1), min_tokens);
          }
        }
        int32_t next = 0;
        for (int32_t s = 0; s < active; ++s) {
          const TokenRange r = decode_split_range(ctx, active, s);
          EXPECT_EQ(r.begin, next) << "split " << s;
          EXPECT_LE(r.begin, r.end);
          next = r.end;
        }
        EXPECT_EQ(next, ctx);
      }
    }
  }
}

TEST(DecodePartition, WarpDealTakesEveryTokenOnce) {
  for (int32_t tokens : {1, 2, 4, 8}) {
    for (int32_t warps : {1, 4, 8}) {
      for (TokenRange range : {TokenRange{0, 1}, TokenRange{0, 256}, TokenRange{512, 768},
                               TokenRange{100, 117}, TokenRange{5, 5}, TokenRange{8000, 8193}}) {
        SCOPED_TRACE("tokens " + std::to_string(tokens) + " warps " + std::to_string(warps) +
                     " range [" + std::to_string(range.begin) + ", " + std::to_string(range.end) +
                     ")");
        WarpDeal deal;
        deal.range = range;
        deal.tokens = tokens;
        deal.warps = warps;
        std::vector<int> seen(range.end - range.begin, 0);
        for (int32_t w = 0; w < warps; ++w) {
          const int32_t steps = deal.steps(w);
          for (int32_t step = 0; step < steps; ++step) {
            bool any = false;
            for (int32_t g = 0; g < tokens; ++g) {
              const int32_t tok = deal.token(w, step, g);
              ASSERT_GE(tok, range.begin);
              if (tok >= range.end) continue;  // the tail of a warp's last step
              any = true;
              ++seen[tok - range.begin];
              int32_t ow = -1, os = -1, og = -1;
              deal.owner(tok, ow, os, og);
              EXPECT_EQ(ow, w);
              EXPECT_EQ(os, step);
              EXPECT_EQ(og, g);
            }
            EXPECT_TRUE(any) << "warp " << w << " step " << step << " has no token";
          }
        }
        for (size_t i = 0; i < seen.size(); ++i)
          EXPECT_EQ(seen[i], 1) << "token " << range.begin + i;
      }
    }
  }
}

TEST(DecodePartition, BlockCursorFollowsTheTokens) {
  for (int32_t block_size : {1, 8, 16, 24, 32}) {
    for (int32_t stride : {1, 16, 32, 64, 100}) {
      for (int32_t start : {0, 5, 31}) {
        SCOPED_TRACE("block " + std::to_string(block_size) + " stride " + std::to_string(stride) + " start " +
                     std::to_string(start));
        BlockCursor c = block_cursor(start, block_size);
        for (int32_t tok = start; tok < 2000; tok += stride) {
          ASSERT_EQ(c.index, tok / block_size) << "token " << tok;
          ASSERT_EQ(c.offset, tok % block_size) << "token " << tok;
          c.advance(stride / block_size, stride % block_size, block_size);
        }
      }
    }
  }
}

}  // namespace
}  // namespace aph::attention
