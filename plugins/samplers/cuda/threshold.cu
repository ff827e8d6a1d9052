// top-a, epsilon, eta, top-nsigma and quadratic smoothing: one cluster per
// row (row_view.cuh: block 0 alone on a row with few live tokens) computes
// the statistic (max, partition, entropy, standard deviation; row_stats.cuh:
// one reduction each), then one pass
// applies it with the CPU stage's comparisons. The most likely token
// always stays (its probability is the maximum).
#include "plugins/samplers/cuda/kernels.hpp"
#include "plugins/samplers/cuda/row_stats.cuh"
#include "plugins/samplers/cuda/row_view.cuh"

namespace aph::samplers::cuda {
namespace {

__global__ void __launch_bounds__(kThreads) threshold_kernel(LogitsView logits, const __grid_constant__ Rows<ThresholdRow> rows) {
  dependent_start();
  const ThresholdRow p = rows[blockIdx.y];
  bool leave = false;
  // top-nsigma usually sees a full row (it leads the truncations): no scan.
  const RowView row = open_row(logits, p.row, &leave, /*scan=*/p.kind != kNsigma);
  if (leave) return;
  if (p.kind == kQuadratic) {
    const float m = row.max();
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
    const NormStats st = norm_stats(row);  // max, mean and deviation in one reduction
    if (st.n < 2) return;
    const float m = static_cast<float>(st.m);
    const double threshold = st.m - p.param * sqrt(st.m2 / (st.n - 1));
    for (int64_t j = row.first(); j < row.size(); j += row.step()) {
      const float v = row.value(j);
      if (v != -INFINITY && v != m && static_cast<double>(v) < threshold) row.remove(j);
    }
    return;
  }
  const SoftStats st = soft_stats(row);  // max, partition and entropy in one reduction
  if (st.n == 0) return;
  const float m = static_cast<float>(st.m);
  const double z = st.z;
  double threshold = 0;
  if (p.kind == kTopA) {
    threshold = p.param / (z * z);  // a * p_max^2 with p_max = 1 / z
  } else if (p.kind == kEpsilon) {
    threshold = p.param;
  } else {  // kEta
    threshold = fmin(p.param, sqrt(p.param) * exp(-entropy_of(st)));
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
