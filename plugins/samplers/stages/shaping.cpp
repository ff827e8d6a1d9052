#include "plugins/samplers/stages/shaping.hpp"

#include <algorithm>
#include <cmath>

#include "plugins/samplers/cpu_math.hpp"
#include "plugins/samplers/rng.hpp"
#include "plugins/samplers/sorted_math.hpp"

namespace aph::samplers {

// ---- quadratic -----------------------------------------------------------

std::span<const aph_sampler_field> QuadraticStage::fields() {
  static const aph_sampler_field f[] = {
      field_float("smoothing_factor", 0.0, 0.0, kUnbounded, "quadratic smoothing strength (0 = off)"),
      field_float("smoothing_curve", 1.0, kUnbounded, kUnbounded, "cubic term: 1 = purely quadratic"),
  };
  return f;
}
std::unique_ptr<QuadraticStage::Params> QuadraticStage::create(const Request& r, PluginState&) {
  auto p = std::make_unique<Params>();
  p->factor = static_cast<float>(r.number("smoothing_factor"));
  p->curve = static_cast<float>(r.number("smoothing_curve"));
  if (p->factor == 0.0f) return nullptr;
  return p;
}
void QuadraticStage::apply_cpu(PluginState&, std::span<const CpuRow<Params>> rows) {
  for (const auto& r : rows) {
    const float k = r.params->factor * (3.0f - r.params->curve) / 2.0f;
    const float s = r.params->factor * (r.params->curve - 1.0f) / 2.0f;
    const float m = row_max(r.logits, r.vocab);
    for (int64_t i = 0; i < r.vocab; ++i) {
      if (r.logits[i] == kNegInf) continue;
      const float d = r.logits[i] - m;
      r.logits[i] = m - k * d * d + s * d * d * d;
    }
  }
}

// ---- XTC -----------------------------------------------------------------

std::span<const aph_sampler_field> XtcStage::fields() {
  static const aph_sampler_field f[] = {
      field_float("xtc_threshold", 0.1, 0.0, kUnbounded, "tokens at or above this probability are 'top choices'"),
      field_float("xtc_probability", 0.0, 0.0, 1.0, "chance per step that XTC acts (0 = off)"),
  };
  return f;
}
std::unique_ptr<XtcStage::Params> XtcStage::create(const Request& r, PluginState&) {
  auto p = std::make_unique<Params>();
  p->threshold = static_cast<float>(r.number("xtc_threshold"));
  p->probability = static_cast<float>(r.number("xtc_probability"));
  if (p->probability == 0.0f) return nullptr;
  return p;
}
bool xtc_fires(const aph_sampler_row& row, float probability) {
  return rng_uniform(rng_key(row.seed, row.step, kRngXtc), 0) < static_cast<double>(probability);
}
void XtcStage::apply_cpu(PluginState&, std::span<const CpuRow<Params>> rows) {
  std::vector<double> probs;
  for (const auto& r : rows) {
    if (!xtc_fires(*r.row, r.params->probability)) continue;
    softmax(r.logits, r.vocab, probs);
    int64_t above = 0;
    float lowest = std::numeric_limits<float>::infinity();  // smallest logit among the top choices
    for (int64_t i = 0; i < r.vocab; ++i) {
      if (probs[i] >= r.params->threshold) {
        ++above;
        lowest = std::min(lowest, r.logits[i]);
      }
    }
    if (above < 2) continue;
    for (int64_t i = 0; i < r.vocab; ++i) {
      if (probs[i] >= r.params->threshold && r.logits[i] > lowest) r.logits[i] = kNegInf;
    }
  }
}

// ---- skew ----------------------------------------------------------------

std::span<const aph_sampler_field> SkewStage::fields() {
  static const aph_sampler_field f[] = {field_float("skew", 0.0, 0.0, kUnbounded, "moves probability mass along the sorted distribution, towards the tail as it grows (0 = off)")};
  return f;
}
std::unique_ptr<SkewStage::Params> SkewStage::create(const Request& r, PluginState&) {
  double s = r.number("skew");
  if (s == 0.0) return nullptr;
  return std::make_unique<Params>(Params{std::exp(s)});
}
void SkewStage::apply_cpu(PluginState&, std::span<const CpuRow<Params>> rows) {
  std::vector<double> probs;
  for (const auto& r : rows) {
    softmax(r.logits, r.vocab, probs);
    std::vector<int32_t> idx = order_desc(r.logits, r.vocab);
    double cum = 0;
    for (int32_t t : idx) {
      if (r.logits[t] == kNegInf) break;
      cum = std::min(1.0, cum + probs[t]);
      r.logits[t] = static_cast<float>(skew_log_prob(cum, probs[t], r.params->exponent));
    }
    // The most likely token keeps C^e > 0, so one token always survives.
  }
}

}  // namespace aph::samplers

#ifdef APH_HAVE_CUDA
#include "plugins/samplers/cuda/device_params.hpp"
#include "plugins/samplers/cuda/sorted_launch.hpp"

namespace aph::samplers {

void QuadraticStage::apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s) {
  std::vector<cuda::ThresholdRow> rows;
  for (uint32_t i = 0; i < b.n_rows; ++i) {
    if (auto* p = static_cast<Params*>(b.rows[i].params)) {
      // The same float k and s as the CPU stage computes.
      const float k = p->factor * (3.0f - p->curve) / 2.0f;
      const float sc = p->factor * (p->curve - 1.0f) / 2.0f;
      rows.push_back({static_cast<int32_t>(i), cuda::kQuadratic, k, sc});
    }
  }
  if (rows.empty()) return;
  const auto table = row_table(st, "quadratic.rows", rows, b, s);
  check_launch(cuda::launch_threshold(live_logits_view(st, b, s), static_cast<int32_t>(rows.size()), table, s),
               info.name);
}

// The per-step coin is drawn on the host (it depends only on seed and step);
// rows whose coin fails cost the device nothing.
void XtcStage::apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s) {
  std::vector<cuda::Indexed<float>> rows;
  for (uint32_t i = 0; i < b.n_rows; ++i) {
    auto* p = static_cast<Params*>(b.rows[i].params);
    if (p == nullptr || !xtc_fires(b.rows[i], p->probability)) continue;
    rows.push_back({static_cast<int32_t>(i), p->threshold});
  }
  if (rows.empty()) return;
  const auto table = row_table(st, "xtc.rows", rows, b, s);
  check_launch(cuda::launch_xtc(live_logits_view(st, b, s), static_cast<int32_t>(rows.size()), table, s), info.name);
}

void SkewStage::apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s) {
  for_sorted_rows<Params, double>(st, info.name, b, s, [](const Params& p) { return p.exponent; },
                                  cuda::launch_skew);
}

}  // namespace aph::samplers
#endif
