#include "core/text/spm_merges.hpp"

#include <algorithm>
#include <string_view>

#include "core/text/utf8.hpp"

namespace aph::text {
namespace {

struct Symbol {
  int32_t prev;
  int32_t next;
  const char* text;
  size_t n;
};

struct Bigram {
  float score;
  int32_t left;
  int32_t right;
  size_t size;
};

struct LowerPriority {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

class Session {
 public:
  explicit Session(const SpmVocabView& vocab) : vocab_(vocab) {}

  void run(std::string_view text, std::vector<int32_t>& out) {
    size_t offs = 0;
    int32_t index = 0;
    while (offs < text.size()) {
      const size_t len = std::min(utf8_sequence_length(static_cast<uint8_t>(text[offs])),
                                  text.size() - offs);
      symbols_.push_back(Symbol{index - 1, offs + len == text.size() ? -1 : index + 1,
                                text.data() + offs, len});
      offs += len;
      ++index;
    }
    for (int32_t i = 1; i < static_cast<int32_t>(symbols_.size()); ++i) try_add_bigram(i - 1, i);

    while (!queue_.empty()) {
      std::pop_heap(queue_.begin(), queue_.end(), LowerPriority{});
      const Bigram bigram = queue_.back();
      queue_.pop_back();
      Symbol& left = symbols_[bigram.left];
      Symbol& right = symbols_[bigram.right];
      // Stale: one side was merged away, or grew, since the pair was queued.
      if (left.n == 0 || right.n == 0 || left.n + right.n != bigram.size) continue;
      left.n += right.n;
      right.n = 0;
      left.next = right.next;
      if (right.next >= 0) symbols_[right.next].prev = bigram.left;
      try_add_bigram(left.prev, bigram.left);
      try_add_bigram(bigram.left, left.next);
    }
    for (int32_t i = symbols_.empty() ? -1 : 0; i != -1; i = symbols_[i].next) {
      resegment(symbols_[i], out);
    }
  }

 private:
  void try_add_bigram(int32_t left, int32_t right) {
    if (left == -1 || right == -1) return;
    // Adjacent symbols are adjacent in the text, so the pair is one view.
    const std::string_view text(symbols_[left].text, symbols_[left].n + symbols_[right].n);
    const int32_t token = find_id(*vocab_.token_to_id, text);
    if (token < 0 || static_cast<size_t>(token) >= vocab_.scores->size()) return;
    queue_.push_back(Bigram{(*vocab_.scores)[token], left, right, text.size()});
    std::push_heap(queue_.begin(), queue_.end(), LowerPriority{});
  }

  // Only pairs that form a token are ever merged, so a final symbol that is
  // not a token is a single character the vocabulary lacks (llama.cpp's
  // rev_merge lookup cannot succeed for it): it becomes byte tokens.
  void resegment(const Symbol& symbol, std::vector<int32_t>& out) {
    const std::string_view text(symbol.text, symbol.n);
    const int32_t token = find_id(*vocab_.token_to_id, text);
    if (token >= 0) {
      out.push_back(token);
      return;
    }
    for (char c : text) {
      const int32_t id = vocab_.byte_token[static_cast<uint8_t>(c)];
      if (id >= 0) out.push_back(id);
    }
  }

  const SpmVocabView& vocab_;
  std::vector<Symbol> symbols_;
  std::vector<Bigram> queue_;
};

}  // namespace

void spm_encode(std::string_view text, const SpmVocabView& vocab, std::vector<int32_t>& out) {
  Session session(vocab);
  session.run(text, out);
}

}  // namespace aph::text
