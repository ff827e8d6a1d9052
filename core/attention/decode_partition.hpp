// How a decode launch cuts a sequence's context among its split CTAs on the
// device, how decode_stream.cu's CTA deals its split's tokens to its warps,
// and how it finds a token's block. Host and device code: the CPU unit test checks that every token is
// covered exactly once and that the owner of a token is found back.
#pragma once

#include <cstdint>

#include "core/attention/split_plan.hpp"

#if defined(__CUDACC__)
#define APH_DECODE_HD __host__ __device__ __forceinline__
#else
#define APH_DECODE_HD inline
#endif

namespace aph::attention {

// The splits a sequence of ctx tokens uses of the grid's `splits`: the fewest
// that keep each at most min_tokens long, so that (below the grid's count)
// each takes between min_tokens / 2 and min_tokens tokens, never a sliver (a
// split costs a partial's write and the merge's read). Only ctx decides, so
// every CTA of the sequence agrees.
APH_DECODE_HD int32_t decode_active_splits(int32_t ctx, int32_t splits,
                                           int32_t min_tokens = kDecodeMinSplitTokens) {
  const int32_t want = (ctx + min_tokens - 1) / min_tokens;
  const int32_t at_least_one = want > 1 ? want : 1;
  return at_least_one < splits ? at_least_one : splits;
}

struct TokenRange {
  int32_t begin = 0, end = 0;
};

// Split `split` (< active) of a ctx-token context cut into `active` equal
// slices, the last one shorter.
APH_DECODE_HD TokenRange decode_split_range(int32_t ctx, int32_t active, int32_t split) {
  const int32_t per = (ctx + active - 1) / active;
  TokenRange r;
  r.begin = split * per < ctx ? split * per : ctx;
  r.end = r.begin + per < ctx ? r.begin + per : ctx;
  return r;
}

// A split's tokens dealt to a CTA's warps: groups of `tokens` consecutive
// tokens go round the `warps` warps, one group a warp step; token g of a
// group goes to the warp's lane group g. Each warp then walks tokens near
// the other warps' (the cache rows stay close together in memory).
struct WarpDeal {
  TokenRange range;
  int32_t tokens = 1;  // a step's tokens in one warp
  int32_t warps = 1;

  // Steps warp `warp` takes (its last may run past range.end).
  APH_DECODE_HD int32_t steps(int32_t warp) const {
    const int32_t groups = (range.end - range.begin + tokens - 1) / tokens;
    return groups > warp ? (groups - warp + warps - 1) / warps : 0;
  }
  APH_DECODE_HD int32_t token(int32_t warp, int32_t step, int32_t lane_group) const {
    return range.begin + (step * warps + warp) * tokens + lane_group;
  }
  // The warp, step and lane group that take token tok (range.begin <= tok).
  APH_DECODE_HD void owner(int32_t tok, int32_t& warp, int32_t& step, int32_t& lane_group) const {
    const int32_t rel = tok - range.begin;
    lane_group = rel % tokens;
    warp = rel / tokens % warps;
    step = rel / tokens / warps;
  }
};

// A token's place in a sequence's block table: entry `index`, row `offset`
// of that block. A kernel that walks tokens at a fixed stride advances it
// instead of dividing every token by the block size.
struct BlockCursor {
  int32_t index = 0, offset = 0;

  // On by `blocks` whole blocks and `rest` (< block_size) rows.
  APH_DECODE_HD void advance(int32_t blocks, int32_t rest, int32_t block_size) {
    index += blocks;
    offset += rest;
    if (offset >= block_size) {
      offset -= block_size;
      ++index;
    }
  }
};

APH_DECODE_HD BlockCursor block_cursor(int32_t tok, int32_t block_size) {
  BlockCursor c;
  c.index = tok / block_size;
  c.offset = tok % block_size;
  return c;
}

}  // namespace aph::attention
