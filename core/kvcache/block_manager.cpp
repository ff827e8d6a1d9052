#include "core/kvcache/block_manager.hpp"

#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "core/common/error.hpp"

namespace aph::kv {

uint64_t prefix_salt(std::string_view lora_name, std::string_view cache_salt) {
  if (lora_name.empty() && cache_salt.empty()) return 0;
  std::string key;
  key.reserve(lora_name.size() + cache_salt.size() + 1);
  key.append(lora_name).push_back('\0');
  key.append(cache_salt);
  uint64_t h = XXH3_64bits(key.data(), key.size());
  return h == 0 ? 1 : h;
}

uint64_t block_hash(uint64_t parent, uint64_t salt, std::span<const int32_t> tokens) {
  thread_local std::vector<uint64_t> buf;
  buf.resize(2 + (tokens.size() + 1) / 2);
  buf[0] = parent;
  buf[1] = salt;
  buf.back() = 0;
  std::memcpy(&buf[2], tokens.data(), tokens.size_bytes());
  return XXH3_64bits(buf.data(), 16 + tokens.size_bytes());
}

BlockManager::BlockManager(int num_blocks, int block_size, bool enable_prefix_caching)
    : block_size_(block_size), prefix_caching_(enable_prefix_caching) {
  if (block_size <= 0) throw invalid_argument("block_size must be positive");
  if (num_blocks <= 0) throw invalid_argument("KV cache has no blocks (num_blocks <= 0)");
  blocks_.resize(num_blocks);
  free_plain_.reserve(num_blocks);
  // Popped from the back: hand out low ids first, which keeps tests readable.
  for (int i = num_blocks - 1; i >= 0; --i) free_plain_.push_back(i);
}

PrefixHit BlockManager::lookup(std::span<const int32_t> tokens, uint64_t salt,
                               int max_tokens) const {
  PrefixHit hit;
  if (!prefix_caching_) return hit;
  const int n_full = std::min<int>(max_tokens, tokens.size()) / block_size_;
  uint64_t parent = 0;
  for (int i = 0; i < n_full; ++i) {
    ++hit.blocks_queried;
    auto block_tokens = tokens.subspan(static_cast<size_t>(i) * block_size_, block_size_);
    const uint64_t h = block_hash(parent, salt, block_tokens);
    auto it = cached_.find(h);
    if (it == cached_.end()) break;
    const Block& b = blocks_[it->second];
    if (b.parent_hash != parent || b.salt != salt ||
        !std::equal(b.tokens.begin(), b.tokens.end(), block_tokens.begin(), block_tokens.end()))
      break;
    hit.blocks.push_back(it->second);
    hit.hashes.push_back(h);
    if (b.ref_count == 0) ++hit.blocks_from_free_pool;
    parent = h;
  }
  hit.num_tokens = static_cast<int>(hit.blocks.size()) * block_size_;
  return hit;
}

void BlockManager::attach(SeqBlocks& seq, const PrefixHit& hit) {
  if (!seq.table.empty())
    throw Error(APH_ERR_INTERNAL, "prefix hit attached to a sequence that holds blocks");
  stats_.prefix_queries += hit.blocks_queried;
  stats_.prefix_hits += hit.blocks.size();
  for (int32_t id : hit.blocks) {
    Block& b = blocks_[id];
    if (b.ref_count == 0) lru_.erase(b.lru_pos);
    ++b.ref_count;
    seq.table.push_back(id);
  }
  seq.hashes = hit.hashes;
}

int BlockManager::blocks_needed(const SeqBlocks& seq, int total_tokens) const {
  return std::max(0, blocks_for_tokens(total_tokens) - static_cast<int>(seq.table.size()));
}

int32_t BlockManager::take_free_block() {
  int32_t id;
  if (!free_plain_.empty()) {
    id = free_plain_.back();
    free_plain_.pop_back();
  } else if (!lru_.empty()) {
    id = lru_.front();
    lru_.pop_front();
    unpublish(id);
    ++stats_.evictions;
  } else {
    throw Error(APH_ERR_OUT_OF_MEMORY, "KV cache pool exhausted");
  }
  blocks_[id].ref_count = 1;
  return id;
}

void BlockManager::unpublish(int32_t id) {
  Block& b = blocks_[id];
  if (!b.published) return;
  auto it = cached_.find(b.hash);
  if (it != cached_.end() && it->second == id) cached_.erase(it);
  b.published = false;
  b.tokens.clear();
}

void BlockManager::allocate(SeqBlocks& seq, int total_tokens) {
  const int need = blocks_needed(seq, total_tokens);
  if (!can_allocate(need))
    throw Error(APH_ERR_OUT_OF_MEMORY, "KV cache pool exhausted: need " + std::to_string(need) +
                                           " blocks, " + std::to_string(num_free_blocks()) +
                                           " free");
  for (int i = 0; i < need; ++i) seq.table.push_back(take_free_block());
}

void BlockManager::publish(SeqBlocks& seq, std::span<const int32_t> tokens, int num_computed) {
  const int n_full = std::min<int>({num_computed, static_cast<int>(tokens.size()),
                                    static_cast<int>(seq.table.size()) * block_size_}) /
                     block_size_;
  while (static_cast<int>(seq.hashes.size()) < n_full) {
    const size_t i = seq.hashes.size();
    const uint64_t parent = i == 0 ? 0 : seq.hashes[i - 1];
    auto block_tokens = tokens.subspan(i * block_size_, block_size_);
    const uint64_t h = block_hash(parent, seq.salt, block_tokens);
    seq.hashes.push_back(h);
    if (!prefix_caching_) continue;
    Block& b = blocks_[seq.table[i]];
    // A block already published (a hit) keeps its entry; a second copy of the
    // same content computed concurrently stays private and is freed plainly.
    if (b.published || cached_.count(h)) continue;
    b.published = true;
    b.hash = h;
    b.parent_hash = parent;
    b.salt = seq.salt;
    b.tokens.assign(block_tokens.begin(), block_tokens.end());
    cached_.emplace(h, seq.table[i]);
  }
}

void BlockManager::free(SeqBlocks& seq) {
  for (auto it = seq.table.rbegin(); it != seq.table.rend(); ++it) {
    Block& b = blocks_[*it];
    if (b.ref_count <= 0)
      throw Error(APH_ERR_INTERNAL, "KV block " + std::to_string(*it) + " freed twice");
    if (--b.ref_count > 0) continue;
    if (b.published) {
      lru_.push_back(*it);
      b.lru_pos = std::prev(lru_.end());
    } else {
      free_plain_.push_back(*it);
    }
  }
  seq.table.clear();
  seq.hashes.clear();
}

void BlockManager::fork(const SeqBlocks& parent, SeqBlocks& child, int num_tokens) {
  if (!child.table.empty()) throw Error(APH_ERR_INTERNAL, "fork into a sequence that holds blocks");
  const size_t n_full = std::min<size_t>(num_tokens / block_size_, parent.table.size());
  for (size_t i = 0; i < n_full; ++i) {
    ++blocks_[parent.table[i]].ref_count;
    child.table.push_back(parent.table[i]);
  }
  child.hashes.assign(parent.hashes.begin(),
                      parent.hashes.begin() + std::min(n_full, parent.hashes.size()));
  child.salt = parent.salt;
}

void BlockManager::check_invariants(const std::vector<const SeqBlocks*>& live) const {
  auto fail = [](const std::string& m) { throw Error(APH_ERR_INTERNAL, "KV invariant: " + m); };
  std::vector<int> refs(blocks_.size(), 0);
  for (const SeqBlocks* s : live) {
    for (int32_t id : s->table) {
      if (id < 0 || id >= num_blocks()) fail("block id out of range " + std::to_string(id));
      ++refs[id];
    }
    if (s->hashes.size() > s->table.size()) fail("more hashes than blocks");
  }
  std::vector<int> in_free(blocks_.size(), 0);
  for (int32_t id : free_plain_) ++in_free[id];
  for (int32_t id : lru_) {
    ++in_free[id];
    if (!blocks_[id].published) fail("uncached block " + std::to_string(id) + " in the LRU");
  }
  for (size_t id = 0; id < blocks_.size(); ++id) {
    const std::string name = "block " + std::to_string(id);
    if (blocks_[id].ref_count != refs[id])
      fail(name + " ref count " + std::to_string(blocks_[id].ref_count) + " but " +
           std::to_string(refs[id]) + " table entries");
    if (refs[id] == 0 && in_free[id] != 1) fail(name + " leaked or listed free twice");
    if (refs[id] > 0 && in_free[id] != 0) fail(name + " in use and free");
  }
  for (const auto& [h, id] : cached_)
    if (!blocks_[id].published || blocks_[id].hash != h) fail("hash map entry for stale block");
}

}  // namespace aph::kv
