#include <gtest/gtest.h>

#include <numeric>

#include "core/common/error.hpp"
#include "core/kvcache/block_manager.hpp"

using aph::kv::BlockManager;
using aph::kv::SeqBlocks;

namespace {

std::vector<int32_t> iota_tokens(int n, int start = 0) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), start);
  return t;
}

// Allocates, "computes" and publishes all of `tokens`.
void run_prefill(BlockManager& bm, SeqBlocks& seq, const std::vector<int32_t>& tokens) {
  auto hit = bm.lookup(tokens, seq.salt, static_cast<int>(tokens.size()) - 1);
  bm.attach(seq, hit);
  bm.allocate(seq, static_cast<int>(tokens.size()));
  bm.publish(seq, tokens, static_cast<int>(tokens.size()));
}

}  // namespace

TEST(BlockManager, AllocateAndFreeCountBlocks) {
  BlockManager bm(8, 16, true);
  SeqBlocks a;
  EXPECT_EQ(bm.blocks_needed(a, 33), 3);
  bm.allocate(a, 33);
  EXPECT_EQ(a.table.size(), 3u);
  EXPECT_EQ(bm.num_free_blocks(), 5);
  bm.allocate(a, 48);  // still fits in the third block
  EXPECT_EQ(a.table.size(), 3u);
  bm.check_invariants({&a});
  bm.free(a);
  EXPECT_EQ(bm.num_free_blocks(), 8);
  bm.check_invariants({});
}

TEST(BlockManager, ExhaustionIsAnErrorNotACrash) {
  BlockManager bm(2, 16, false);
  SeqBlocks a;
  EXPECT_FALSE(bm.can_allocate(bm.blocks_needed(a, 40)));
  EXPECT_THROW(bm.allocate(a, 40), aph::Error);
  bm.check_invariants({&a});
}

TEST(BlockManager, DoubleFreeIsDetected) {
  BlockManager bm(4, 16, false);
  SeqBlocks a;
  bm.allocate(a, 10);
  SeqBlocks copy = a;
  bm.free(a);
  EXPECT_THROW(bm.free(copy), aph::Error);
}

TEST(BlockManager, PrefixHitSharesFullBlocksOnly) {
  BlockManager bm(16, 4, true);
  auto tokens = iota_tokens(10);  // 2 full blocks + 2 tokens
  SeqBlocks a;
  run_prefill(bm, a, tokens);
  EXPECT_TRUE(bm.is_cached(a.table[0]));
  EXPECT_TRUE(bm.is_cached(a.table[1]));
  EXPECT_FALSE(bm.is_cached(a.table[2]));

  SeqBlocks b;
  auto hit = bm.lookup(tokens, 0, 9);
  EXPECT_EQ(hit.num_tokens, 8);
  EXPECT_EQ(hit.blocks_from_free_pool, 0);
  bm.attach(b, hit);
  EXPECT_EQ(b.table[0], a.table[0]);
  EXPECT_EQ(bm.ref_count(a.table[0]), 2);
  bm.allocate(b, 10);
  EXPECT_NE(b.table[2], a.table[2]);
  bm.check_invariants({&a, &b});
  EXPECT_EQ(bm.stats().prefix_hits, 2u);
}

TEST(BlockManager, LookupLeavesTheLastTokenToCompute) {
  BlockManager bm(16, 4, true);
  auto tokens = iota_tokens(8);  // exactly two blocks
  SeqBlocks a;
  run_prefill(bm, a, tokens);
  auto hit = bm.lookup(tokens, 0, 7);
  EXPECT_EQ(hit.num_tokens, 4);
}

TEST(BlockManager, DifferentTokensOrSaltMiss) {
  BlockManager bm(16, 4, true);
  auto tokens = iota_tokens(12);
  SeqBlocks a;
  run_prefill(bm, a, tokens);
  auto other = tokens;
  other[5] = 999;  // second block differs: only the first hits
  EXPECT_EQ(bm.lookup(other, 0, 11).num_tokens, 4);
  const uint64_t lora = aph::kv::prefix_salt("my-lora", "");
  EXPECT_NE(lora, 0u);
  EXPECT_EQ(bm.lookup(tokens, lora, 11).num_tokens, 0);
  EXPECT_NE(aph::kv::prefix_salt("a", "b"), aph::kv::prefix_salt("ab", ""));
}

TEST(BlockManager, FreedCachedBlocksAreReusedThenEvictedLru) {
  BlockManager bm(4, 4, true);
  auto t1 = iota_tokens(8, 0);
  auto t2 = iota_tokens(8, 100);
  SeqBlocks a, b;
  run_prefill(bm, a, t1);
  run_prefill(bm, b, t2);
  bm.free(a);  // a's blocks freed first: least recently used
  bm.free(b);
  EXPECT_EQ(bm.num_free_blocks(), 4);
  // A hit on a free cached block takes it out of the free pool.
  auto hit = bm.lookup(t2, 0, 8);
  EXPECT_EQ(hit.num_tokens, 8);
  EXPECT_EQ(hit.blocks_from_free_pool, 2);
  // Two fresh blocks must evict a's (the LRU), keeping b's cached.
  SeqBlocks c;
  bm.allocate(c, 8);
  EXPECT_EQ(bm.stats().evictions, 2u);
  EXPECT_EQ(bm.lookup(t1, 0, 8).num_tokens, 0);
  EXPECT_EQ(bm.lookup(t2, 0, 8).num_tokens, 8);
  bm.check_invariants({&c});
}

TEST(BlockManager, ForkSharesFullBlocksAndCountsRefs) {
  BlockManager bm(16, 4, true);
  auto tokens = iota_tokens(10);
  SeqBlocks parent;
  run_prefill(bm, parent, tokens);
  SeqBlocks child;
  bm.fork(parent, child, 9);  // the child's last token is recomputed
  ASSERT_EQ(child.table.size(), 2u);
  EXPECT_EQ(bm.ref_count(parent.table[0]), 2);
  EXPECT_EQ(bm.ref_count(parent.table[2]), 1);
  bm.allocate(child, 10);
  bm.check_invariants({&parent, &child});
  bm.free(parent);
  EXPECT_EQ(bm.ref_count(child.table[0]), 1);
  bm.free(child);
  bm.check_invariants({});
  EXPECT_EQ(bm.num_free_blocks(), 16);
}

TEST(BlockManager, DisabledPrefixCachingNeverHits) {
  BlockManager bm(16, 4, false);
  auto tokens = iota_tokens(12);
  SeqBlocks a;
  run_prefill(bm, a, tokens);
  EXPECT_EQ(a.hashes.size(), 3u);  // the chain still exists for forks
  EXPECT_EQ(bm.lookup(tokens, 0, 11).num_tokens, 0);
  bm.free(a);
  bm.check_invariants({});
}

TEST(BlockManager, HashChainDependsOnParent) {
  std::vector<int32_t> block = {1, 2, 3, 4};
  EXPECT_NE(aph::kv::block_hash(0, 0, block), aph::kv::block_hash(7, 0, block));
  EXPECT_NE(aph::kv::block_hash(0, 0, block), aph::kv::block_hash(0, 9, block));
  EXPECT_EQ(aph::kv::block_hash(3, 4, block), aph::kv::block_hash(3, 4, block));
}
