// A PCRE2 pattern compiled for UTF-8 text with Unicode properties (UTF + UCP)
// and JIT, matched the way HF tokenizers' and llama.cpp's pre-tokenizers do.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace aph::text {

class Regex {
 public:
  // Throws aph::Error quoting the pattern and PCRE2's message.
  explicit Regex(const std::string& pattern);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Every non-empty, non-overlapping match in `subject`, left to right, as
  // [begin, end) byte offsets. The subject is the whole world of the match:
  // lookarounds and `$` see its ends, as when HF splits each piece alone.
  // Safe to call from several threads at once.
  void find_all(std::string_view subject, std::vector<std::pair<size_t, size_t>>& matches) const;

  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8*
  bool jit_ = false;
};

}  // namespace aph::text
