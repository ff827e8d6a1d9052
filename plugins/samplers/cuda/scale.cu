// Temperature (with dynamic temperature) and min-p: one cluster per row
// (row_view.cuh: block 0 alone on a row with few live tokens).
#include "plugins/samplers/cuda/kernels.hpp"
#include "plugins/samplers/cuda/row_stats.cuh"
#include "plugins/samplers/cuda/row_view.cuh"

namespace aph::samplers::cuda {
namespace {

constexpr float kMinTemperature = 2e-5f;  // as the CPU stage

__global__ void __launch_bounds__(kThreads) temperature_kernel(LogitsView logits, const __grid_constant__ Rows<TemperatureRow> rows) {
  dependent_start();
  const TemperatureRow p = rows[blockIdx.y];
  float* x = logits.data + static_cast<int64_t>(p.row) * logits.stride;
  if (!p.dynamic) {  // one pass, no reduction: nothing for a scan to save
    const float t = fmaxf(p.temperature, kMinTemperature);
    if (const LiveList* list = listed_row(logits, p.row)) {  // the unlisted are -inf: t leaves them so
      if (blockIdx.x != 0) return;
      const int32_t n = min(list->n, kSparseCap);
      for (int32_t j = threadIdx.x; j < n; j += blockDim.x) x[list->ids[j]] = __fdiv_rn(x[list->ids[j]], t);
      return;
    }
    for (int64_t i = split_first(); i < logits.vocab; i += split_step()) x[i] = __fdiv_rn(x[i], t);
    return;
  }
  bool leave = false;
  const RowView row = open_row(logits, p.row, &leave, /*scan=*/false);
  if (leave) return;
  const SoftStats st = soft_stats(row);
  const double ent = entropy_of(st), live = st.n;
  const double max_ent = live > 1 ? log(live) : 0.0;
  const double norm = max_ent > 0 ? ent / max_ent : 0.0;
  const float t = fmaxf(static_cast<float>(p.min + (p.max - p.min) * pow(norm, static_cast<double>(p.exponent))),
                        kMinTemperature);
  // Removed tokens stay -inf: a sparse row skips them.
  for (int64_t j = row.first(); j < row.size(); j += row.step()) row.set(j, __fdiv_rn(row.value(j), t));
}

__global__ void __launch_bounds__(kThreads) min_p_kernel(LogitsView logits, const __grid_constant__ Rows<Indexed<float>> log_min_p) {
  dependent_start();
  float t = 0;  // <= 0, so the max always stays
  bool leave = false;
  const RowView row = open_indexed_row(logits, log_min_p, &t, &leave);
  if (leave) return;
  const float m = row.max();
  for (int64_t j = row.first(); j < row.size(); j += row.step()) {
    const float v = row.value(j);
    if (v != -INFINITY && __fsub_rn(v, m) < t) row.remove(j);
  }
}

}  // namespace

std::string launch_temperature(LogitsView logits, int32_t n, const Rows<TemperatureRow>& rows, void* stream) {
  return launch_split(temperature_kernel, n, stream, "temperature_kernel", logits, rows);
}

std::string launch_min_p(LogitsView logits, int32_t n, const Rows<Indexed<float>>& log_min_p, void* stream) {
  return launch_split(min_p_kernel, n, stream, "min_p_kernel", logits, log_min_p);
}

}  // namespace aph::samplers::cuda
