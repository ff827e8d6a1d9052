// The paged KV cache's bookkeeping: a fixed pool of blocks, per-sequence block
// tables, ref counts, and prefix caching as a chain of hashes over full blocks
// (h = XXH3(parent hash, salt, block tokens)). Device memory lives in the model
// runner; this class only decides which block holds which tokens.
#pragma once

#include <cstdint>
#include <list>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace aph::kv {

// What one sequence holds in the cache.
struct SeqBlocks {
  std::vector<int32_t> table;    // block ids, in token order
  std::vector<uint64_t> hashes;  // chain hash of each computed full block
  uint64_t salt = 0;             // from the LoRA name and cache salt; 0 = none
};

// A prefix-cache lookup, not yet attached to a sequence.
struct PrefixHit {
  std::vector<int32_t> blocks;
  std::vector<uint64_t> hashes;
  int blocks_from_free_pool = 0;  // hits that leave the free pool when attached
  int blocks_queried = 0;
  int num_tokens = 0;  // blocks.size() * block size
};

struct BlockStats {
  uint64_t prefix_queries = 0;  // full blocks looked up
  uint64_t prefix_hits = 0;
  uint64_t evictions = 0;  // cached free blocks reused for new content
};

// Keys the cache by adapter and per-request salt so that two LoRAs never share KV.
uint64_t prefix_salt(std::string_view lora_name, std::string_view cache_salt);
uint64_t block_hash(uint64_t parent, uint64_t salt, std::span<const int32_t> tokens);

class BlockManager {
 public:
  BlockManager(int num_blocks, int block_size, bool enable_prefix_caching);

  int block_size() const { return block_size_; }
  int num_blocks() const { return static_cast<int>(blocks_.size()); }
  // Blocks a new allocation can take: never used, plus cached ones with no owner.
  int num_free_blocks() const { return static_cast<int>(free_plain_.size() + lru_.size()); }
  int num_used_blocks() const { return num_blocks() - num_free_blocks(); }
  const BlockStats& stats() const { return stats_; }
  int blocks_for_tokens(int n_tokens) const { return (n_tokens + block_size_ - 1) / block_size_; }

  // Cached full blocks that start `tokens`, considering only blocks that end
  // at or before `max_tokens` (callers pass len - 1 so at least one token is
  // computed and yields logits).
  PrefixHit lookup(std::span<const int32_t> tokens, uint64_t salt, int max_tokens) const;
  // Attaches a lookup's blocks to an empty sequence.
  void attach(SeqBlocks& seq, const PrefixHit& hit);

  // New blocks needed so that `seq` covers `total_tokens`.
  int blocks_needed(const SeqBlocks& seq, int total_tokens) const;
  bool can_allocate(int n_blocks) const { return n_blocks <= num_free_blocks(); }
  // Grows the table to cover `total_tokens`; throws aph::Error when the pool is short.
  void allocate(SeqBlocks& seq, int total_tokens);

  // Registers the full blocks among the first `num_computed` tokens in the
  // prefix cache (only once their K/V exists, so no step reads a block that
  // another sequence of the same step is still writing).
  void publish(SeqBlocks& seq, std::span<const int32_t> tokens, int num_computed);

  // Drops the sequence's references (tail first, so the tail is evicted first).
  void free(SeqBlocks& seq);

  // n > 1: the child shares the parent's full blocks among its first
  // `num_tokens` tokens. Partial blocks are never shared: the child recomputes
  // that tail into a block of its own (copy-on-write done by recompute, which
  // costs under one block of prefill and needs no device copy).
  void fork(const SeqBlocks& parent, SeqBlocks& child, int num_tokens);

  int ref_count(int32_t block) const { return blocks_.at(block).ref_count; }
  bool is_cached(int32_t block) const { return blocks_.at(block).published; }

  // Checks every structural invariant against the live sequences' tables:
  // ref counts equal the number of table entries, free pools hold exactly the
  // unreferenced blocks once each, the hash map points at published blocks.
  // Throws aph::Error describing the first violation.
  void check_invariants(const std::vector<const SeqBlocks*>& live) const;

 private:
  struct Block {
    int ref_count = 0;
    bool published = false;
    uint64_t hash = 0;
    uint64_t parent_hash = 0;
    uint64_t salt = 0;
    std::vector<int32_t> tokens;  // kept to re-check a hit against hash collisions
    std::list<int32_t>::iterator lru_pos;
  };

  int32_t take_free_block();
  void unpublish(int32_t id);

  int block_size_;
  bool prefix_caching_;
  std::vector<Block> blocks_;
  std::vector<int32_t> free_plain_;  // unreferenced, holding nothing reusable
  std::list<int32_t> lru_;           // unreferenced but cached; front = least recently freed
  std::unordered_map<uint64_t, int32_t> cached_;
  BlockStats stats_;
};

}  // namespace aph::kv
