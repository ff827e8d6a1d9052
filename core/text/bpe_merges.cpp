#include "core/text/bpe_merges.hpp"

#include <algorithm>

namespace aph::text {

BpeMerges::BpeMerges(const StringIdMap& token_to_id, int32_t vocab_size,
                     const std::vector<std::pair<std::string, std::string>>& merges)
    : vocab_size_(vocab_size) {
  pairs_.reserve(merges.size() * 2);
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    const int32_t l = intern(token_to_id, left);
    const int32_t r = intern(token_to_id, right);
    const int32_t result = intern(token_to_id, left + right);
    // The first occurrence of a pair keeps its rank (llama.cpp's emplace).
    pairs_.emplace(key(l, r), Merge{static_cast<int32_t>(rank), result});
  }
}

int32_t BpeMerges::intern(const StringIdMap& token_to_id, const std::string& text) {
  if (int32_t id = find_id(token_to_id, text); id >= 0) return id;
  if (int32_t id = find_id(extra_ids_, text); id >= 0) return id;
  const int32_t id = vocab_size_ + static_cast<int32_t>(extra_texts_.size());
  extra_texts_.push_back(text);
  extra_ids_.emplace(text, id);
  return id;
}

int32_t BpeMerges::interned_symbol(std::string_view text) const { return find_id(extra_ids_, text); }

const std::string& BpeMerges::interned_text(int32_t symbol) const {
  return extra_texts_.at(static_cast<size_t>(symbol - vocab_size_));
}

namespace {

struct Candidate {
  int32_t rank;
  int32_t left;  // index into the symbol list
  int32_t right;
  int32_t left_id;
  int32_t right_id;
  int32_t result;
};

struct LaterFirst {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

struct Link {
  int32_t prev;
  int32_t next;
};

}  // namespace

void BpeMerges::merge(std::vector<Symbol>& symbols) const {
  const auto n = static_cast<int32_t>(symbols.size());
  if (n < 2) return;
  thread_local std::vector<Link> links;
  thread_local std::vector<Candidate> heap_storage;
  links.resize(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) links[i] = Link{i - 1, i + 1 < n ? i + 1 : -1};

  auto& heap = heap_storage;
  heap.clear();
  auto consider = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const int32_t l = symbols[left].id;
    const int32_t r = symbols[right].id;
    if (l < 0 || r < 0) return;
    auto it = pairs_.find(key(l, r));
    if (it == pairs_.end()) return;
    heap.push_back(Candidate{it->second.rank, left, right, l, r, it->second.result});
    std::push_heap(heap.begin(), heap.end(), LaterFirst{});
  };
  for (int32_t i = 0; i + 1 < n; ++i) consider(i, i + 1);

  constexpr int32_t kMerged = -2;
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), LaterFirst{});
    const Candidate c = heap.back();
    heap.pop_back();
    Symbol& left = symbols[c.left];
    Symbol& right = symbols[c.right];
    // Stale when either side has changed since the pair was queued.
    if (left.id != c.left_id || right.id != c.right_id || links[c.left].next != c.right) continue;
    left.id = c.result;
    left.end = right.end;
    right.id = kMerged;
    const int32_t after = links[c.right].next;
    links[c.left].next = after;
    if (after >= 0) links[after].prev = c.left;
    consider(links[c.left].prev, c.left);
    consider(c.left, after);
  }

  size_t out = 0;
  for (int32_t i = 0; i >= 0 && i < n; i = links[i].next) symbols[out++] = symbols[i];
  symbols.resize(out);
}

}  // namespace aph::text
