#include "core/engine/histogram.hpp"

#include <algorithm>

namespace aph::engine {

Histogram make_histogram(std::vector<double> upper_bounds) {
  Histogram h;
  h.upper_bounds = std::move(upper_bounds);
  h.bucket_counts.assign(h.upper_bounds.size() + 1, 0);
  return h;
}

void observe(Histogram& h, double seconds) {
  const auto it = std::lower_bound(h.upper_bounds.begin(), h.upper_bounds.end(), seconds);
  ++h.bucket_counts[static_cast<size_t>(it - h.upper_bounds.begin())];
  h.sum += seconds;
  ++h.count;
}

// The bounds vLLM exports, so dashboards built for it read ours unchanged.
Histogram ttft_histogram() {
  return make_histogram({0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5,
                         5.0, 7.5, 10.0, 20.0, 40.0, 80.0});
}

Histogram inter_token_histogram() {
  return make_histogram({0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5,
                         5.0, 7.5, 10.0, 20.0, 40.0, 80.0});
}

Histogram e2e_histogram() {
  return make_histogram({0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0,
                         60.0, 120.0, 240.0, 480.0, 960.0});
}

}  // namespace aph::engine
