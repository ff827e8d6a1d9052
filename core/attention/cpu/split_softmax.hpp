// The CPU attention's arithmetic: an online softmax over one split of a
// unit's keys, tile by tile, and the merge of a unit's splits in order.
//
// A query's result depends only on its own keys: tiles start at key
// positions that are multiples of cpu::kTileKeys, splits at multiples of
// kSplitKeys, and splits merge in order. So a query gives the same bits in a
// decode or in a prefill chunk, alone or in a batch, whether its splits ran
// as separate work items or one after another (the engine's batch invariance
// on the CPU rests on it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/attention/cpu/tile_kernels.hpp"
#include "core/attention/paged_attention.hpp"

namespace aph::attention::cpu {

// Query tokens per unit: long prefills spread over threads, while a unit
// still converts each K/V tile only once for all its queries.
constexpr int32_t kQueryChunk = 32;
// Keys per split: one decode's long context spreads over threads.
constexpr int32_t kSplitKeys = 256;
static_assert(kSplitKeys % kTileKeys == 0, "splits hold whole tiles");

// One sequence's queries [q_begin, q_end) of one KV head (all heads of its
// group): they share every K/V tile. Its keys are [0, first_pos + q_end).
struct Unit {
  int32_t seq;
  int32_t kv_head;
  int32_t q_begin;  // relative to the sequence's first query token
  int32_t q_end;
  int32_t splits;   // key splits of kSplitKeys
};

// n floats of a reused buffer (thread-local ones: a call allocates nothing
// once the sizes have been seen).
inline float* scratch(std::vector<float>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

// The units of a call, in order of sequence, KV head and query chunk.
std::vector<Unit> plan_units(const PagedAttentionArgs& a);

// A unit's state holds, for each (query, head of the group), a row of m (the
// running max), l (the running sum of exp) and acc[head_dim] (the output
// before division by l): of one split, or of the splits merged so far.
class SplitSoftmax {
 public:
  // a's index data must be checked already (attention_cpu does).
  explicit SplitSoftmax(const PagedAttentionArgs& a);

  size_t state_floats(const Unit& u) const;
  // The online softmax of split `split` of the unit's keys into `state`.
  void run_split(const Unit& u, int32_t split, float* state) const;
  // Folds split `split`'s state into `total`, which holds splits [0, split)
  // merged (split 0: copies it). Queries before the split saw none of it.
  void merge_split(const Unit& u, int32_t split, const float* part, float* total) const;
  // out = acc / l for every row of the unit.
  void write_out(const Unit& u, const float* total) const;

 private:
  int32_t first_position(int32_t seq) const;

  const PagedAttentionArgs& a_;
  const KvLayout& L_;
  const int32_t hd_, group_, row_;
  const size_t esz_;
  const TileKernels& kern_;
};

}  // namespace aph::attention::cpu
