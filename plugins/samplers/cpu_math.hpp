// Small numeric helpers the CPU stages share. Probabilities are computed in
// double so that kept sets do not depend on summation order more than needed.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace aph::samplers {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

inline float row_max(const float* x, int64_t n) {
  float m = kNegInf;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, x[i]);
  return m;
}

inline int64_t row_argmax(const float* x, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i) {
    if (x[i] > x[best]) best = i;
  }
  return best;
}

// softmax(x) into p; returns log(sum exp(x - max)) + max (the log-partition).
inline double softmax(const float* x, int64_t n, std::vector<double>& p) {
  p.resize(n);
  const float m = row_max(x, n);
  if (m == kNegInf) {
    std::fill(p.begin(), p.end(), 0.0);
    return -std::numeric_limits<double>::infinity();
  }
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    p[i] = std::exp(static_cast<double>(x[i]) - m);
    sum += p[i];
  }
  for (int64_t i = 0; i < n; ++i) p[i] /= sum;
  return std::log(sum) + m;
}

// Ids sorted by descending logit, ties by ascending id.
inline std::vector<int32_t> order_desc(const float* x, int64_t n) {
  std::vector<int32_t> idx(n);
  for (int64_t i = 0; i < n; ++i) idx[i] = static_cast<int32_t>(i);
  std::stable_sort(idx.begin(), idx.end(), [&](int32_t a, int32_t b) { return x[a] > x[b]; });
  return idx;
}

}  // namespace aph::samplers
