// top-a, epsilon, eta, top-nsigma and quadratic smoothing: one cluster per
// row (row_split.cuh) computes the statistic (max, partition, entropy, standard deviation), then
// one pass applies it with the CPU stage's comparisons. The most likely token
// always stays (its probability is the maximum).
#include "plugins/samplers/cuda/kernels.hpp"
#include "plugins/samplers/cuda/row_split.cuh"

namespace aph::samplers::cuda {
namespace {

__global__ void threshold_kernel(LogitsView logits, const __grid_constant__ Rows<ThresholdRow> rows) {
  dependent_start();
  const ThresholdRow p = rows[blockIdx.y];
  float* x = logits.data + static_cast<int64_t>(p.row) * logits.stride;
  const int64_t v = logits.vocab;
  const float m = split_max(x, v);
  if (p.kind == kQuadratic) {
    const float k = static_cast<float>(p.param), s = static_cast<float>(p.param2);
    for (int64_t i = split_first(); i < v; i += split_step()) {
      if (x[i] == -INFINITY) continue;
      const float d = __fsub_rn(x[i], m);
      x[i] = __fadd_rn(__fsub_rn(m, __fmul_rn(__fmul_rn(k, d), d)), __fmul_rn(__fmul_rn(__fmul_rn(s, d), d), d));
    }
    return;
  }
  if (p.kind == kNsigma) {
    double sum = 0, count = 0;
    for (int64_t i = split_first(); i < v; i += split_step()) {
      if (x[i] == -INFINITY) continue;
      sum += x[i];
      count += 1;
    }
    sum = split_sum(sum);
    count = split_sum(count);
    if (count < 2) return;
    const double mean = sum / count;
    double sq = 0;
    for (int64_t i = split_first(); i < v; i += split_step()) {
      if (x[i] != -INFINITY) sq += (x[i] - mean) * (x[i] - mean);
    }
    sq = split_sum(sq);
    const double threshold = static_cast<double>(m) - p.param * sqrt(sq / (count - 1));
    for (int64_t i = split_first(); i < v; i += split_step()) {
      if (x[i] != -INFINITY && x[i] != m && static_cast<double>(x[i]) < threshold) x[i] = -INFINITY;
    }
    return;
  }
  const double z = split_partition(x, v, m);
  double threshold = 0;
  if (p.kind == kTopA) {
    threshold = p.param / (z * z);  // a * p_max^2 with p_max = 1 / z
  } else if (p.kind == kEpsilon) {
    threshold = p.param;
  } else {  // kEta
    double ent = 0;
    for (int64_t i = split_first(); i < v; i += split_step()) {
      if (x[i] == -INFINITY) continue;  // adds nothing; skipping spares a double exp
      const double pr = exp(static_cast<double>(x[i]) - m) / z;
      if (pr > 0) ent -= pr * log(pr);
    }
    ent = split_sum(ent);
    threshold = fmin(p.param, sqrt(p.param) * exp(-ent));
  }
  for (int64_t i = split_first(); i < v; i += split_step()) {
    if (x[i] == -INFINITY || x[i] == m) continue;
    if (exp(static_cast<double>(x[i]) - m) / z < threshold) x[i] = -INFINITY;
  }
}

}  // namespace

std::string launch_threshold(LogitsView logits, int32_t n, const Rows<ThresholdRow>& rows, void* stream) {
  return launch_split(threshold_kernel, n, stream, "threshold_kernel", logits, rows);
}

}  // namespace aph::samplers::cuda
