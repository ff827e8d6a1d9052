#include "plugins/samplers/stages/temperature.hpp"

#include <algorithm>
#include <cmath>

#include "plugins/samplers/cpu_math.hpp"

namespace aph::samplers {

std::span<const aph_sampler_field> TemperatureStage::fields() {
  static const aph_sampler_field f[] = {
      field_float("temperature", 1.0, 0.0, kUnbounded, "logits are divided by it; 0 = greedy"),
      field_float("dynatemp_min", 0.0, 0.0, kUnbounded, "dynamic temperature lower bound"),
      field_float("dynatemp_max", 0.0, 0.0, kUnbounded, "dynamic temperature upper bound (min = max = 0: off)"),
      field_float("dynatemp_exponent", 1.0, 0.0, kUnbounded, "exponent on the normalized entropy"),
      field_float("dynatemp_range", 0.0, 0.0, kUnbounded, "Kobold: dynatemp over temperature +- range"),
  };
  return f;
}

std::unique_ptr<TemperatureStage::Params> TemperatureStage::create(const Request& r, PluginState&) {
  auto p = std::make_unique<Params>();
  p->temperature = static_cast<float>(r.number("temperature"));
  p->min = static_cast<float>(r.number("dynatemp_min"));
  p->max = static_cast<float>(r.number("dynatemp_max"));
  p->exponent = static_cast<float>(r.number("dynatemp_exponent"));
  const float range = static_cast<float>(r.number("dynatemp_range"));
  if (range > 0.0f && p->min == 0.0f && p->max == 0.0f) {
    p->min = std::max(0.0f, p->temperature - range);
    p->max = p->temperature + range;
  }
  p->dynamic = p->min != 0.0f || p->max != 0.0f;
  if (p->dynamic && p->min > p->max) throw invalid_argument("dynatemp_min: greater than dynatemp_max");
  if (!p->dynamic && (p->temperature == 1.0f || p->temperature < kGreedyTemperature)) return nullptr;
  return p;
}

float effective_temperature(const TemperatureStage::Params& p, const float* logits, int64_t vocab) {
  if (!p.dynamic) return std::max(p.temperature, kMinTemperature);
  std::vector<double> probs;
  softmax(logits, vocab, probs);
  double entropy = 0;
  int64_t live = 0;
  for (int64_t i = 0; i < vocab; ++i) {
    if (logits[i] == kNegInf) continue;
    ++live;
    if (probs[i] > 0) entropy -= probs[i] * std::log(probs[i]);
  }
  const double max_entropy = live > 1 ? std::log(static_cast<double>(live)) : 0.0;
  const double normalized = max_entropy > 0 ? entropy / max_entropy : 0.0;
  const double t = p.min + (p.max - p.min) * std::pow(normalized, static_cast<double>(p.exponent));
  return std::max(static_cast<float>(t), kMinTemperature);
}

void TemperatureStage::apply_cpu(PluginState&, std::span<const CpuRow<Params>> rows) {
  for (const auto& r : rows) {
    const float t = effective_temperature(*r.params, r.logits, r.vocab);
    for (int64_t i = 0; i < r.vocab; ++i) r.logits[i] /= t;
  }
}

}  // namespace aph::samplers

#ifdef APH_HAVE_CUDA
#include "plugins/samplers/cuda/device_params.hpp"

namespace aph::samplers {

void TemperatureStage::apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s) {
  std::vector<cuda::TemperatureRow> rows;
  for (uint32_t i = 0; i < b.n_rows; ++i) {
    if (auto* p = static_cast<Params*>(b.rows[i].params)) {
      rows.push_back({static_cast<int32_t>(i), p->dynamic ? 1 : 0, p->temperature, p->min, p->max, p->exponent});
    }
  }
  if (rows.empty()) return;
  const auto table = row_table(st, "temperature.rows", rows, b, s);
  check_launch(cuda::launch_temperature(live_logits_view(st, b, s), static_cast<int32_t>(rows.size()), table, s),
               info.name);
}

}  // namespace aph::samplers
#endif
