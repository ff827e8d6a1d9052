#include "plugins/samplers/stages/truncation.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "plugins/samplers/cpu_math.hpp"
#include "plugins/samplers/sorted_math.hpp"

namespace aph::samplers {

namespace {

// Removes every live token whose key is strictly below `threshold`, but
// never the argmax of the logits.
template <typename Key>
void remove_below(float* logits, int64_t vocab, double threshold, Key key) {
  const int64_t keep = row_argmax(logits, vocab);
  for (int64_t i = 0; i < vocab; ++i) {
    if (i != keep && logits[i] != kNegInf && key(i) < threshold) logits[i] = kNegInf;
  }
}

// Keeps token i iff the mass of tokens ranked strictly before it (by `rank`,
// smaller first; equal ranks are one group) is < mass_limit.
void keep_by_ranked_mass(float* logits, int64_t vocab, const std::vector<double>& probs,
                         const std::vector<double>& rank, double mass_limit) {
  std::vector<int32_t> idx;
  for (int64_t i = 0; i < vocab; ++i) {
    if (logits[i] != kNegInf) idx.push_back(static_cast<int32_t>(i));
  }
  std::sort(idx.begin(), idx.end(), [&](int32_t a, int32_t b) { return rank[a] < rank[b]; });
  double before = 0;  // mass of groups strictly ahead of the current group
  size_t g = 0;
  while (g < idx.size()) {
    size_t end = g;
    double group = 0;
    while (end < idx.size() && rank[idx[end]] == rank[idx[g]]) group += probs[idx[end++]];
    if (g > 0 && before >= mass_limit) {
      for (size_t j = g; j < idx.size(); ++j) logits[idx[j]] = kNegInf;
      return;
    }
    before += group;
    g = end;
  }
}

double float_field(const Request& r, const char* name) { return r.number(name); }

}  // namespace

// ---- top-nsigma ----------------------------------------------------------

std::span<const aph_sampler_field> TopNsigmaStage::fields() {
  static const aph_sampler_field f[] = {field_float("nsigma", 0.0, 0.0, kUnbounded,
                                                    "keep logits within nsigma standard deviations of the max (0 = off)")};
  return f;
}
std::unique_ptr<TopNsigmaStage::Params> TopNsigmaStage::create(const Request& r, PluginState&) {
  float n = static_cast<float>(float_field(r, "nsigma"));
  if (n == 0.0f) return nullptr;
  return std::make_unique<Params>(Params{n});
}
void TopNsigmaStage::apply_cpu(PluginState&, std::span<const CpuRow<Params>> rows) {
  for (const auto& r : rows) {
    double sum = 0, sq = 0;
    int64_t n = 0;
    float m = kNegInf;
    for (int64_t i = 0; i < r.vocab; ++i) {
      if (r.logits[i] == kNegInf) continue;
      sum += r.logits[i];
      ++n;
      m = std::max(m, r.logits[i]);
    }
    if (n < 2) continue;
    const double mean = sum / n;
    for (int64_t i = 0; i < r.vocab; ++i) {
      if (r.logits[i] != kNegInf) sq += (r.logits[i] - mean) * (r.logits[i] - mean);
    }
    const double sd = std::sqrt(sq / static_cast<double>(n - 1));
    const double threshold = static_cast<double>(m) - r.params->nsigma * sd;
    remove_below(r.logits, r.vocab, threshold, [&](int64_t i) { return static_cast<double>(r.logits[i]); });
  }
}

// ---- top-k ---------------------------------------------------------------

std::span<const aph_sampler_field> TopKStage::fields() {
  static const aph_sampler_field f[] = {field_int("top_k", -1, -1, kUnbounded, "keep the k most likely tokens (-1 or 0 = off)")};
  return f;
}
std::unique_ptr<TopKStage::Params> TopKStage::create(const Request& r, PluginState&) {
  int64_t k = r.integer("top_k");
  if (k <= 0) return nullptr;
  return std::make_unique<Params>(Params{k});
}
void TopKStage::apply_cpu(PluginState&, std::span<const CpuRow<Params>> rows) {
  std::vector<float> sorted;
  for (const auto& r : rows) {
    if (r.params->k >= r.vocab) continue;
    sorted.assign(r.logits, r.logits + r.vocab);
    std::nth_element(sorted.begin(), sorted.begin() + (r.params->k - 1), sorted.end(), std::greater<float>());
    const float kth = sorted[r.params->k - 1];
    remove_below(r.logits, r.vocab, kth, [&](int64_t i) { return static_cast<double>(r.logits[i]); });
  }
}

// ---- top-p ---------------------------------------------------------------

std::span<const aph_sampler_field> TopPStage::fields() {
  static const aph_sampler_field f[] = {field_float("top_p", 1.0, 0.0, 1.0, "nucleus: keep the smallest top mass >= top_p (1 = off)")};
  return f;
}
std::unique_ptr<TopPStage::Params> TopPStage::create(const Request& r, PluginState&) {
  float p = static_cast<float>(r.number("top_p"));
  if (!(p > 0.0f)) throw invalid_argument("top_p: must be in (0, 1]");
  if (p >= 1.0f) return nullptr;
  return std::make_unique<Params>(Params{p});
}
void TopPStage::apply_cpu(PluginState&, std::span<const CpuRow<Params>> rows) {
  std::vector<double> probs, rank;
  for (const auto& r : rows) {
    softmax(r.logits, r.vocab, probs);
    rank.resize(r.vocab);
    for (int64_t i = 0; i < r.vocab; ++i) rank[i] = -static_cast<double>(r.logits[i]);
    keep_by_ranked_mass(r.logits, r.vocab, probs, rank, r.params->p);
  }
}

// ---- top-a ---------------------------------------------------------------

std::span<const aph_sampler_field> TopAStage::fields() {
  static const aph_sampler_field f[] = {field_float("top_a", 0.0, 0.0, kUnbounded, "keep p >= top_a * p_max^2 (0 = off)")};
  return f;
}
std::unique_ptr<TopAStage::Params> TopAStage::create(const Request& r, PluginState&) {
  float a = static_cast<float>(r.number("top_a"));
  if (a == 0.0f) return nullptr;
  return std::make_unique<Params>(Params{a});
}
void TopAStage::apply_cpu(PluginState&, std::span<const CpuRow<Params>> rows) {
  std::vector<double> probs;
  for (const auto& r : rows) {
    softmax(r.logits, r.vocab, probs);
    const double pmax = *std::max_element(probs.begin(), probs.end());
    const double threshold = r.params->a * pmax * pmax;
    remove_below(r.logits, r.vocab, threshold, [&](int64_t i) { return probs[i]; });
  }
}

// ---- min-p ---------------------------------------------------------------

std::span<const aph_sampler_field> MinPStage::fields() {
  static const aph_sampler_field f[] = {field_float("min_p", 0.0, 0.0, 1.0, "keep p >= min_p * p_max (0 = off)")};
  return f;
}
std::unique_ptr<MinPStage::Params> MinPStage::create(const Request& r, PluginState&) {
  double p = r.number("min_p");
  if (p == 0.0) return nullptr;
  // The threshold is fixed here, once, so CPU and GPU compare against the
  // same float.
  return std::make_unique<Params>(Params{static_cast<float>(std::log(p))});
}
void MinPStage::apply_cpu(PluginState&, std::span<const CpuRow<Params>> rows) {
  for (const auto& r : rows) {
    const float m = row_max(r.logits, r.vocab);
    const float t = r.params->log_min_p;
    remove_below(r.logits, r.vocab, t, [&](int64_t i) { return static_cast<double>(r.logits[i] - m); });
  }
}

// ---- tail-free -----------------------------------------------------------

std::span<const aph_sampler_field> TfsStage::fields() {
  static const aph_sampler_field f[] = {field_float("tfs", 1.0, 0.0, 1.0, "tail-free sampling z (1 = off)")};
  return f;
}
std::unique_ptr<TfsStage::Params> TfsStage::create(const Request& r, PluginState&) {
  float z = static_cast<float>(r.number("tfs"));
  if (!(z > 0.0f)) throw invalid_argument("tfs: must be in (0, 1]");
  if (z >= 1.0f) return nullptr;
  return std::make_unique<Params>(Params{z});
}
void TfsStage::apply_cpu(PluginState&, std::span<const CpuRow<Params>> rows) {
  std::vector<double> probs;
  for (const auto& r : rows) {
    softmax(r.logits, r.vocab, probs);
    std::vector<int32_t> idx = order_desc(r.logits, r.vocab);
    int64_t live = 0;
    while (live < r.vocab && r.logits[idx[live]] != kNegInf) ++live;
    if (live < 3) continue;
    std::vector<double> d2(live - 2);
    double total = 0;
    for (int64_t i = 0; i + 2 < live; ++i) {
      d2[i] = second_difference(probs[idx[i]], probs[idx[i + 1]], probs[idx[i + 2]]);
      total += d2[i];
    }
    if (total <= 0) continue;  // a flat distribution has no tail to cut
    // Sorted token i+1 goes once the curvature mass up to d2[i] passes z;
    // the first token always stays and the last live one always goes.
    double cdf = 0;
    for (int64_t i = 0; i + 2 < live; ++i) {
      cdf += d2[i] / total;
      if (cdf > r.params->z) r.logits[idx[i + 1]] = kNegInf;
    }
    r.logits[idx[live - 1]] = kNegInf;
  }
}

// ---- eta / epsilon -------------------------------------------------------

std::span<const aph_sampler_field> EtaCutoffStage::fields() {
  static const aph_sampler_field f[] = {field_float("eta_cutoff", 0.0, 0.0, kUnbounded, "eta sampling, units of 1e-4 (0 = off)")};
  return f;
}
std::unique_ptr<EtaCutoffStage::Params> EtaCutoffStage::create(const Request& r, PluginState&) {
  double e = r.number("eta_cutoff");
  if (e == 0.0) return nullptr;
  return std::make_unique<Params>(Params{e * 1e-4});
}
void EtaCutoffStage::apply_cpu(PluginState&, std::span<const CpuRow<Params>> rows) {
  std::vector<double> probs;
  for (const auto& r : rows) {
    softmax(r.logits, r.vocab, probs);
    double entropy = 0;
    for (double p : probs) {
      if (p > 0) entropy -= p * std::log(p);
    }
    const double eta = r.params->eta;
    const double eps = std::min(eta, std::sqrt(eta) * std::exp(-entropy));
    remove_below(r.logits, r.vocab, eps, [&](int64_t i) { return probs[i]; });
  }
}

std::span<const aph_sampler_field> EpsilonCutoffStage::fields() {
  static const aph_sampler_field f[] = {field_float("epsilon_cutoff", 0.0, 0.0, 1000.0, "remove p < epsilon, units of 1e-4 (0 = off)")};
  return f;
}
std::unique_ptr<EpsilonCutoffStage::Params> EpsilonCutoffStage::create(const Request& r, PluginState&) {
  double e = r.number("epsilon_cutoff");
  if (e == 0.0) return nullptr;
  return std::make_unique<Params>(Params{e * 1e-4});
}
void EpsilonCutoffStage::apply_cpu(PluginState&, std::span<const CpuRow<Params>> rows) {
  std::vector<double> probs;
  for (const auto& r : rows) {
    softmax(r.logits, r.vocab, probs);
    remove_below(r.logits, r.vocab, r.params->epsilon, [&](int64_t i) { return probs[i]; });
  }
}

// ---- typical -------------------------------------------------------------

std::span<const aph_sampler_field> TypicalPStage::fields() {
  static const aph_sampler_field f[] = {field_float("typical_p", 1.0, 0.0, 1.0, "locally typical sampling mass (1 = off)")};
  return f;
}
std::unique_ptr<TypicalPStage::Params> TypicalPStage::create(const Request& r, PluginState&) {
  float p = static_cast<float>(r.number("typical_p"));
  if (p >= 1.0f) return nullptr;
  return std::make_unique<Params>(Params{p});
}
void TypicalPStage::apply_cpu(PluginState&, std::span<const CpuRow<Params>> rows) {
  std::vector<double> probs, rank;
  for (const auto& r : rows) {
    const double log_z = softmax(r.logits, r.vocab, probs);
    double entropy = 0;
    for (double p : probs) {
      if (p > 0) entropy -= p * std::log(p);
    }
    rank.resize(r.vocab);
    for (int64_t i = 0; i < r.vocab; ++i) {
      // -log p_i = log_z - logit_i, so the rank needs no log of tiny p.
      rank[i] = std::fabs(log_z - static_cast<double>(r.logits[i]) - entropy);
    }
    keep_by_ranked_mass(r.logits, r.vocab, probs, rank, r.params->p);
  }
}

}  // namespace aph::samplers

#ifdef APH_HAVE_CUDA
#include "plugins/samplers/cuda/device_params.hpp"
#include "plugins/samplers/cuda/sorted_launch.hpp"

namespace aph::samplers {

namespace {
// Gathers (row, value) of the active rows and launches `launch`.
template <typename P, typename V, typename Value, typename Launch>
void per_row_launch(PluginState& st, const char* stage, const aph_sampler_batch& b, aph_stream s, Value value,
                    Launch launch) {
  std::vector<cuda::Indexed<V>> rows;
  for (uint32_t i = 0; i < b.n_rows; ++i) {
    if (auto* p = static_cast<P*>(b.rows[i].params)) rows.push_back({static_cast<int32_t>(i), value(*p)});
  }
  if (rows.empty()) return;
  const auto table = row_table(st, std::string(stage) + ".rows", rows, b, s);
  check_launch(launch(live_logits_view(st, b, s), static_cast<int32_t>(rows.size()), table, s), stage);
}
}  // namespace

void TopKStage::apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s) {
  per_row_launch<Params, int32_t>(st, info.name, b, s,
                                  [&](const Params& p) { return static_cast<int32_t>(std::min<int64_t>(p.k, b.logits.shape[1])); },
                                  cuda::launch_top_k);
}

void TopPStage::apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s) {
  per_row_launch<Params, float>(st, info.name, b, s, [](const Params& p) { return p.p; }, cuda::launch_top_p);
}

void TypicalPStage::apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s) {
  per_row_launch<Params, float>(st, info.name, b, s, [](const Params& p) { return p.p; }, cuda::launch_typical);
}

void MinPStage::apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s) {
  per_row_launch<Params, float>(st, info.name, b, s, [](const Params& p) { return p.log_min_p; }, cuda::launch_min_p);
}

namespace {
template <typename P, typename Param>
void threshold_launch(PluginState& st, const char* stage, const aph_sampler_batch& b, aph_stream s,
                      int32_t kind, Param param) {
  std::vector<cuda::ThresholdRow> rows;
  for (uint32_t i = 0; i < b.n_rows; ++i) {
    if (auto* p = static_cast<P*>(b.rows[i].params)) rows.push_back({static_cast<int32_t>(i), kind, param(*p), 0.0});
  }
  if (rows.empty()) return;
  const auto table = row_table(st, std::string(stage) + ".rows", rows, b, s);
  check_launch(cuda::launch_threshold(live_logits_view(st, b, s), static_cast<int32_t>(rows.size()), table, s), stage);
}
}  // namespace

void TopNsigmaStage::apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s) {
  threshold_launch<Params>(st, info.name, b, s, cuda::kNsigma, [](const Params& p) { return static_cast<double>(p.nsigma); });
}
void TopAStage::apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s) {
  threshold_launch<Params>(st, info.name, b, s, cuda::kTopA, [](const Params& p) { return static_cast<double>(p.a); });
}
void EtaCutoffStage::apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s) {
  threshold_launch<Params>(st, info.name, b, s, cuda::kEta, [](const Params& p) { return p.eta; });
}
void EpsilonCutoffStage::apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s) {
  threshold_launch<Params>(st, info.name, b, s, cuda::kEpsilon, [](const Params& p) { return p.epsilon; });
}

void TfsStage::apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s) {
  for_sorted_rows<Params, float>(st, info.name, b, s, [](const Params& p) { return p.z; },
                                 cuda::launch_tail_free);
}

}  // namespace aph::samplers
#endif
