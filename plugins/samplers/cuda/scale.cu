// Temperature (with dynamic temperature) and min-p: one block per row.
#include "plugins/samplers/cuda/block_reduce.cuh"
#include "plugins/samplers/cuda/kernels.hpp"

namespace aph::samplers::cuda {
namespace {

constexpr float kMinTemperature = 2e-5f;  // as the CPU stage

__global__ void temperature_kernel(LogitsView logits, const TemperatureRow* rows) {
  const TemperatureRow p = rows[blockIdx.x];
  float* x = logits.data + static_cast<int64_t>(p.row) * logits.stride;
  float t = fmaxf(p.temperature, kMinTemperature);
  if (p.dynamic) {
    const float m = row_max(x, logits.vocab);
    double z = 0, live = 0;
    for (int64_t i = threadIdx.x; i < logits.vocab; i += blockDim.x) {
      if (x[i] == -INFINITY) continue;
      z += exp(static_cast<double>(x[i]) - m);
      live += 1;
    }
    z = block_sum(z);
    live = block_sum(live);
    const double log_z = log(z);
    double ent = 0;  // -sum p log p with log p = (x - m) - log z
    for (int64_t i = threadIdx.x; i < logits.vocab; i += blockDim.x) {
      if (x[i] == -INFINITY) continue;
      const double lp = static_cast<double>(x[i]) - m - log_z;
      const double pr = exp(lp);
      if (pr > 0) ent -= pr * lp;
    }
    ent = block_sum(ent);
    const double max_ent = live > 1 ? log(live) : 0.0;
    const double norm = max_ent > 0 ? ent / max_ent : 0.0;
    t = fmaxf(static_cast<float>(p.min + (p.max - p.min) * pow(norm, static_cast<double>(p.exponent))),
              kMinTemperature);
  }
  for (int64_t i = threadIdx.x; i < logits.vocab; i += blockDim.x) x[i] = __fdiv_rn(x[i], t);
}

__global__ void min_p_kernel(LogitsView logits, const int32_t* row_index, const float* log_min_p) {
  float* x = logits.data + static_cast<int64_t>(row_index[blockIdx.x]) * logits.stride;
  const float m = row_max(x, logits.vocab);
  const float t = log_min_p[blockIdx.x];  // <= 0, so the max always stays
  for (int64_t i = threadIdx.x; i < logits.vocab; i += blockDim.x) {
    if (x[i] != -INFINITY && __fsub_rn(x[i], m) < t) x[i] = -INFINITY;
  }
}

}  // namespace

std::string launch_temperature(LogitsView logits, int32_t n, const TemperatureRow* rows, void* stream) {
  if (n == 0) return "";
  temperature_kernel<<<n, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(logits, rows);
  return launch_error("temperature_kernel");
}

std::string launch_min_p(LogitsView logits, int32_t n, const int32_t* row_index, const float* log_min_p,
                         void* stream) {
  if (n == 0) return "";
  min_p_kernel<<<n, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(logits, row_index, log_min_p);
  return launch_error("min_p_kernel");
}

}  // namespace aph::samplers::cuda
