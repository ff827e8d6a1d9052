// One sequence as the scheduler sees it: the token ids so far and how many of
// them already have K/V in the cache. Everything about sampling and stopping
// belongs to the engine, which hangs its own state off `owner`.
#pragma once

#include <cstdint>
#include <vector>

#include "core/kvcache/block_manager.hpp"

namespace aph::sched {

enum class SeqStatus { Waiting, Running, Finished };

struct Sequence {
  uint64_t id = 0;
  std::vector<int32_t> tokens;  // prompt, then generated ids
  int num_prompt_tokens = 0;
  int num_computed = 0;              // tokens whose K/V is in the cache
  int num_cached_prompt_tokens = 0;  // prefix-cache hits at first admission
  kv::SeqBlocks blocks;
  SeqStatus status = SeqStatus::Waiting;
  bool admitted_once = false;
  void* owner = nullptr;

  int num_tokens() const { return static_cast<int>(tokens.size()); }
  int remaining() const { return num_tokens() - num_computed; }
};

}  // namespace aph::sched
