#include "core/sampling/raw_logprobs.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace aph::sampling {

RawLogprobs raw_logprobs(const float* logits, int64_t vocab, int32_t top_n) {
  RawLogprobs out;
  out.logits.assign(logits, logits + vocab);
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < vocab; ++i) m = std::max(m, logits[i]);
  double sum = 0;
  for (int64_t i = 0; i < vocab; ++i) sum += std::exp(static_cast<double>(logits[i]) - m);
  out.log_z = std::log(sum) + m;
  const int64_t n = std::min<int64_t>(top_n, vocab);
  if (n > 0) {
    std::vector<int32_t> idx(vocab);
    std::iota(idx.begin(), idx.end(), 0);
    std::partial_sort(idx.begin(), idx.begin() + n, idx.end(), [&](int32_t a, int32_t b) {
      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    });
    for (int64_t i = 0; i < n; ++i) {
      out.top.push_back({idx[i], static_cast<float>(static_cast<double>(logits[idx[i]]) - out.log_z)});
    }
  }
  return out;
}

}  // namespace aph::sampling
