#include "plugins/samplers/stages/selection.hpp"

#include <algorithm>
#include <cmath>

#include "plugins/samplers/cpu_math.hpp"
#include "plugins/samplers/rng.hpp"
#include "plugins/samplers/stages/temperature.hpp"

namespace aph::samplers {

double gumbel_noise(uint64_t seed, uint64_t step, uint64_t purpose, int64_t index) {
  const double u = rng_uniform(rng_key(seed, step, purpose), static_cast<uint64_t>(index));
  return -std::log(-std::log(u));
}

int32_t gumbel_argmax(const float* logits, int64_t vocab, uint64_t seed, uint64_t step, uint64_t purpose) {
  const uint64_t key = rng_key(seed, step, purpose);
  int32_t best = -1;
  double best_score = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < vocab; ++i) {
    if (logits[i] == kNegInf) continue;
    const double u = rng_uniform(key, static_cast<uint64_t>(i));
    const double score = static_cast<double>(logits[i]) - std::log(-std::log(u));
    if (score > best_score) {
      best_score = score;
      best = static_cast<int32_t>(i);
    }
  }
  return best;
}

// ---- sample --------------------------------------------------------------

std::span<const aph_sampler_field> SampleStage::fields() {
  static const aph_sampler_field f[] = {
      field_float("temperature", 1.0, 0.0, kUnbounded, "logits are divided by it; 0 = greedy"),
  };
  return f;
}
std::unique_ptr<SampleStage::Params> SampleStage::create(const Request& r, PluginState&) {
  auto p = std::make_unique<Params>();
  p->greedy = r.number("temperature") < kGreedyTemperature;
  return p;
}
void SampleStage::apply_cpu(PluginState&, std::span<const CpuRow<Params>> rows) {
  for (const auto& r : rows) {
    if (*r.chosen >= 0) continue;
    if (r.params->greedy) {
      *r.chosen = static_cast<int32_t>(row_argmax(r.logits, r.vocab));
    } else {
      const int32_t t = gumbel_argmax(r.logits, r.vocab, r.row->seed, r.row->step, kRngSample);
      *r.chosen = t >= 0 ? t : static_cast<int32_t>(row_argmax(r.logits, r.vocab));
    }
  }
}

// ---- mirostat ------------------------------------------------------------

std::span<const aph_sampler_field> MirostatStage::fields() {
  static const aph_sampler_field f[] = {
      field_int("mirostat_mode", 0, 0, 2, "0 = off, 1 = mirostat, 2 = mirostat 2.0"),
      field_float("mirostat_tau", 0.0, 0.0, kUnbounded, "target surprise (bits)"),
      field_float("mirostat_eta", 0.0, 0.0, kUnbounded, "learning rate of mu"),
  };
  return f;
}
std::unique_ptr<MirostatStage::Params> MirostatStage::create(const Request& r, PluginState&) {
  auto p = std::make_unique<Params>();
  p->mode = static_cast<int32_t>(r.integer("mirostat_mode"));
  if (p->mode == 0) return nullptr;
  p->tau = static_cast<float>(r.number("mirostat_tau"));
  p->eta = static_cast<float>(r.number("mirostat_eta"));
  return p;
}

void MirostatStage::apply_cpu(PluginState&, std::span<const CpuRow<Params>> rows) {
  std::vector<double> probs;
  for (const auto& r : rows) {
    if (*r.chosen >= 0) continue;
    Params& p = *r.params;
    float& mu = p.mu.try_emplace(r.row->seed, 2.0f * p.tau).first->second;
    softmax(r.logits, r.vocab, probs);
    std::vector<int32_t> idx = order_desc(r.logits, r.vocab);
    int64_t live = 0;
    while (live < r.vocab && r.logits[idx[live]] != kNegInf) ++live;
    if (live == 0) continue;
    int64_t keep = 1;
    if (p.mode == 1) {
      // Estimate the Zipf exponent s from the top m = 100 probabilities,
      // then the k that gives an expected surprise of mu.
      const int64_t m = std::min<int64_t>(100, live);
      double sum_tb = 0, sum_tt = 0;
      for (int64_t i = 0; i + 1 < m; ++i) {
        const double t = std::log(static_cast<double>(i + 2) / static_cast<double>(i + 1));
        const double b = std::log(probs[idx[i]] / probs[idx[i + 1]]);
        sum_tb += t * b;
        sum_tt += t * t;
      }
      const double s_hat = sum_tt > 0 ? sum_tb / sum_tt : 1.0;
      const double eps = s_hat - 1.0;
      const double n = static_cast<double>(r.vocab);
      double k = std::pow(eps * std::pow(2.0, mu) / (1.0 - std::pow(n, -eps)), 1.0 / s_hat);
      if (!std::isfinite(k)) k = static_cast<double>(live);
      keep = std::clamp<int64_t>(static_cast<int64_t>(std::llround(k)), 1, live);
    } else {
      // Tokens whose surprise -log2 p exceeds mu go; at least one stays.
      keep = 0;
      while (keep < live && -std::log2(probs[idx[keep]]) <= mu) ++keep;
      keep = std::max<int64_t>(keep, 1);
    }
    for (int64_t i = keep; i < live; ++i) r.logits[idx[i]] = kNegInf;
    const int32_t t = gumbel_argmax(r.logits, r.vocab, r.row->seed, r.row->step, kRngMirostat);
    *r.chosen = t;
    // Surprise of the chosen token under the truncated distribution.
    double kept_mass = 0;
    for (int64_t i = 0; i < keep; ++i) kept_mass += probs[idx[i]];
    const double observed = -std::log2(probs[t] / kept_mass);
    mu -= p.eta * static_cast<float>(observed - p.tau);
  }
}

}  // namespace aph::samplers

#ifdef APH_HAVE_CUDA
#include "plugins/samplers/cuda/device_params.hpp"

namespace aph::samplers {

void SampleStage::apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s) {
  std::vector<cuda::SampleRow> rows;
  for (uint32_t i = 0; i < b.n_rows; ++i) {
    if (auto* p = static_cast<Params*>(b.rows[i].params)) {
      rows.push_back({static_cast<int32_t>(i), p->greedy ? 1 : 0, b.rows[i].seed, b.rows[i].step});
    }
  }
  if (rows.empty()) return;
  auto* d_rows = upload(st, "sample.rows", rows, b, s);
  check_launch(cuda::launch_sample(logits_view(b), static_cast<int32_t>(rows.size()), d_rows,
                                   static_cast<int32_t*>(b.chosen.data), s),
               info.name);
}

}  // namespace aph::samplers
#endif
