// Temperature (with dynamic temperature) and min-p: one cluster per row
// (row_split.cuh).
#include "plugins/samplers/cuda/kernels.hpp"
#include "plugins/samplers/cuda/row_split.cuh"

namespace aph::samplers::cuda {
namespace {

constexpr float kMinTemperature = 2e-5f;  // as the CPU stage

__global__ void temperature_kernel(LogitsView logits, const __grid_constant__ Rows<TemperatureRow> rows) {
  dependent_start();
  const TemperatureRow p = rows[blockIdx.y];
  float* x = logits.data + static_cast<int64_t>(p.row) * logits.stride;
  float t = fmaxf(p.temperature, kMinTemperature);
  if (p.dynamic) {
    const float m = split_max(x, logits.vocab);
    double z = 0, live = 0;
    for (int64_t i = split_first(); i < logits.vocab; i += split_step()) {
      if (x[i] == -INFINITY) continue;
      z += exp(static_cast<double>(x[i]) - m);
      live += 1;
    }
    z = split_sum(z);
    live = split_sum(live);
    const double log_z = log(z);
    double ent = 0;  // -sum p log p with log p = (x - m) - log z
    for (int64_t i = split_first(); i < logits.vocab; i += split_step()) {
      if (x[i] == -INFINITY) continue;
      const double lp = static_cast<double>(x[i]) - m - log_z;
      const double pr = exp(lp);
      if (pr > 0) ent -= pr * lp;
    }
    ent = split_sum(ent);
    const double max_ent = live > 1 ? log(live) : 0.0;
    const double norm = max_ent > 0 ? ent / max_ent : 0.0;
    t = fmaxf(static_cast<float>(p.min + (p.max - p.min) * pow(norm, static_cast<double>(p.exponent))),
              kMinTemperature);
  }
  for (int64_t i = split_first(); i < logits.vocab; i += split_step()) x[i] = __fdiv_rn(x[i], t);
}

__global__ void min_p_kernel(LogitsView logits, const __grid_constant__ Rows<Indexed<float>> log_min_p) {
  dependent_start();
  float* x = logits.data + static_cast<int64_t>(log_min_p[blockIdx.y].row) * logits.stride;
  const float m = split_max(x, logits.vocab);
  const float t = log_min_p[blockIdx.y].value;  // <= 0, so the max always stays
  for (int64_t i = split_first(); i < logits.vocab; i += split_step()) {
    if (x[i] != -INFINITY && __fsub_rn(x[i], m) < t) x[i] = -INFINITY;
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
