// Rank-ordered BPE merging of one word: a pair table keyed by symbol ids and
// a priority queue (lowest rank first, leftmost on ties), as HF tokenizers'
// Word::merge_all and llama.cpp's llm_tokenizer_bpe_session do.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/text/string_map.hpp"

namespace aph::text {

// Symbols are token ids; strings that merges mention but the vocabulary
// lacks get ids from vocab_size up, so merging reproduces the string-keyed
// references exactly even for such vocabularies.
class BpeMerges {
 public:
  // `token_to_id` resolves vocabulary strings; merges not resolvable to
  // symbols are interned. Throws aph::Error naming the merge at fault.
  BpeMerges(const StringIdMap& token_to_id, int32_t vocab_size,
            const std::vector<std::pair<std::string, std::string>>& merges);

  // Symbol id of a string the vocabulary lacks but merges mention, or -1.
  int32_t interned_symbol(std::string_view text) const;
  const std::string& interned_text(int32_t symbol) const;  // symbol >= vocab_size
  int32_t vocab_size() const { return vocab_size_; }

  struct Symbol {
    int32_t id;     // -1: a unit no merge knows
    uint32_t begin; // first unit of the word it covers
    uint32_t end;   // one past its last unit
  };
  // Merges `symbols` (one per initial unit, in order) in place until no pair
  // has a rank; the survivors stay in order.
  void merge(std::vector<Symbol>& symbols) const;

 private:
  struct Merge {
    int32_t rank;
    int32_t result;
  };
  static uint64_t key(int32_t l, int32_t r) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(l)) << 32) | static_cast<uint32_t>(r);
  }
  int32_t intern(const StringIdMap& token_to_id, const std::string& text);

  int32_t vocab_size_;
  StringIdMap extra_ids_;
  std::vector<std::string> extra_texts_;
  std::unordered_map<uint64_t, Merge> pairs_;
};

}  // namespace aph::text
