// top-a, epsilon, eta, top-nsigma and quadratic smoothing: one cluster per
// row (row_view.cuh: block 0 alone on a row with few live tokens) computes
// the statistic (max, partition, entropy, standard deviation), then one pass
// applies it with the CPU stage's comparisons. The most likely token
// always stays (its probability is the maximum).
#include "plugins/samplers/cuda/kernels.hpp"
#include "plugins/samplers/cuda/row_view.cuh"

namespace aph::samplers::cuda {
namespace {

__global__ void __launch_bounds__(kThreads) threshold_kernel(LogitsView logits, const __grid_constant__ Rows<ThresholdRow> rows) {
  dependent_start();
  const ThresholdRow p = rows[blockIdx.y];
  bool leave = false;
  const RowView row = open_row(logits, p.row, &leave);
  if (leave) return;
  const float m = row.max();
  if (p.kind == kQuadratic) {
    const float k = static_cast<float>(p.param), s = static_cast<float>(p.param2);
    for (int64_t j = row.first(); j < row.size(); j += row.step()) {
      const float v = row.value(j);
      if (v == -INFINITY) continue;
      const float d = __fsub_rn(v, m);
      row.set(j, __fadd_rn(__fsub_rn(m, __fmul_rn(__fmul_rn(k, d), d)), __fmul_rn(__fmul_rn(__fmul_rn(s, d), d), d)));
    }
    return;
  }
  if (p.kind == kNsigma) {
    double sum = 0, count = 0;
    for (int64_t j = row.first(); j < row.size(); j += row.step()) {
      const float v = row.value(j);
      if (v == -INFINITY) continue;
      sum += v;
      count += 1;
    }
    const Sum2 sum_count = row.reduce(Sum2{sum, count}, SumOp{}, Sum2{0.0, 0.0});
    sum = sum_count.a;
    count = sum_count.b;
    if (count < 2) return;
    const double mean = sum / count;
    double sq = 0;
    for (int64_t j = row.first(); j < row.size(); j += row.step()) {
      const float v = row.value(j);
      if (v != -INFINITY) sq += (v - mean) * (v - mean);
    }
    sq = row.reduce(sq, SumOp{}, 0.0);
    const double threshold = static_cast<double>(m) - p.param * sqrt(sq / (count - 1));
    for (int64_t j = row.first(); j < row.size(); j += row.step()) {
      const float v = row.value(j);
      if (v != -INFINITY && v != m && static_cast<double>(v) < threshold) row.remove(j);
    }
    return;
  }
  const double z = row.partition(m);
  double threshold = 0;
  if (p.kind == kTopA) {
    threshold = p.param / (z * z);  // a * p_max^2 with p_max = 1 / z
  } else if (p.kind == kEpsilon) {
    threshold = p.param;
  } else {  // kEta
    const double ent = row.entropy(m, z);
    threshold = fmin(p.param, sqrt(p.param) * exp(-ent));
  }
  for (int64_t j = row.first(); j < row.size(); j += row.step()) {
    const float v = row.value(j);
    if (v == -INFINITY || v == m) continue;
    if (exp(static_cast<double>(v) - m) / z < threshold) row.remove(j);
  }
}

}  // namespace

std::string launch_threshold(LogitsView logits, int32_t n, const Rows<ThresholdRow>& rows, void* stream) {
  return launch_split(threshold_kernel, n, stream, "threshold_kernel", logits, rows);
}

}  // namespace aph::samplers::cuda
