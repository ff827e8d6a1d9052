// Latency histograms for /metrics (Prometheus buckets, in seconds).
#pragma once

#include <vector>

#include "core/engine/engine.hpp"

namespace aph::engine {

Histogram make_histogram(std::vector<double> upper_bounds);
// bucket_counts has one slot per bound plus the +Inf slot; not cumulative.
void observe(Histogram& h, double seconds);

Histogram ttft_histogram();
Histogram inter_token_histogram();
Histogram e2e_histogram();

}  // namespace aph::engine
