#include "plugins/samplers/stages/selection.hpp"

#include <algorithm>
#include <cmath>

#include "plugins/samplers/cpu_math.hpp"
#include "plugins/samplers/rng.hpp"
#include "plugins/samplers/sorted_math.hpp"
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

DeviceMu::~DeviceMu() {
  for (auto& [seed, slot] : slots_) pool_->give_back(device_, slot.mu);
}

DeviceMu::Slot& DeviceMu::slot(const std::shared_ptr<DeviceFloatPool>& pool, int32_t device, uint64_t seed) {
  auto it = slots_.find(seed);
  if (it != slots_.end()) return it->second;
  if (!slots_.empty() && device != device_) throw invalid_argument("mirostat: a request moved between devices");
  float* mu = pool->take(device);
  pool_ = pool;
  device_ = device;
  return slots_.emplace(seed, Slot{mu, true}).first->second;
}

const DeviceMu::Slot* DeviceMu::find(uint64_t seed) const {
  auto it = slots_.find(seed);
  return it == slots_.end() ? nullptr : &it->second;
}

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
  std::vector<double> probs, top;
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
      top.resize(std::min(kMirostatZipfTop, live));
      for (size_t i = 0; i < top.size(); ++i) top[i] = probs[idx[i]];
      keep = mirostat_v1_keep(top.data(), static_cast<int64_t>(top.size()), r.vocab, live, mu);
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
    mu = mirostat_next_mu(mu, p.eta, p.tau, observed);
  }
}

}  // namespace aph::samplers

#ifdef APH_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "plugins/samplers/cuda/device_params.hpp"
#include "plugins/samplers/cuda/sorted_launch.hpp"

namespace aph::samplers {

void SampleStage::apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s) {
  std::vector<cuda::SampleRow> rows;
  for (uint32_t i = 0; i < b.n_rows; ++i) {
    if (auto* p = static_cast<Params*>(b.rows[i].params)) {
      rows.push_back({static_cast<int32_t>(i), p->greedy ? 1 : 0, b.rows[i].seed, b.rows[i].step});
    }
  }
  if (rows.empty()) return;
  const auto table = row_table(st, "sample.rows", rows, b, s);
  check_launch(cuda::launch_sample(live_logits_view(st, b, s), static_cast<int32_t>(rows.size()), table,
                                   static_cast<int32_t*>(b.chosen.data), s),
               info.name);
}

void MirostatStage::apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s) {
  const std::shared_ptr<DeviceFloatPool> pool = st.float_pool();
  std::vector<cuda::MirostatRow> rows;
  std::vector<DeviceMu::Slot*> slots;
  for (uint32_t i = 0; i < b.n_rows; ++i) {
    auto* p = static_cast<Params*>(b.rows[i].params);
    if (p == nullptr) continue;
    DeviceMu::Slot& slot = p->device_mu.slot(pool, b.logits.device, b.rows[i].seed);
    rows.push_back({static_cast<int32_t>(i), p->mode, p->tau, p->eta, slot.mu, slot.fresh ? 1 : 0, b.rows[i].seed,
                    b.rows[i].step});
    slots.push_back(&slot);
  }
  if (rows.empty()) return;
  const auto table = row_table(st, "mirostat.rows", rows, b, s);
  const auto n = static_cast<int32_t>(rows.size());
  auto* chosen = static_cast<int32_t*>(b.chosen.data);
  const cuda::LogitsView logits = live_logits_view(st, b, s);  // listed rows are read at their lists
  for_sorted_chunks(st, info.name, b, n, s, [&](int32_t first, int32_t count, const cuda::FullSortScratch& full) {
    return cuda::launch_mirostat(logits, count, cuda::rows_from(table, first, n), full, chosen, s);
  });
  // The kernels are queued and will write every slot, decided row or not.
  for (DeviceMu::Slot* slot : slots) slot->fresh = false;
}

float MirostatStage::device_mu(const Params& p, uint64_t seed, aph_stream stream) {
  const DeviceMu::Slot* slot = p.device_mu.find(seed);
  if (slot == nullptr || slot->fresh) return 2.0f * p.tau;
  float mu = 0;
  cudaError_t e = cudaMemcpyAsync(&mu, slot->mu, sizeof(float), cudaMemcpyDeviceToHost, static_cast<cudaStream_t>(stream));
  if (e == cudaSuccess) e = cudaStreamSynchronize(static_cast<cudaStream_t>(stream));
  if (e != cudaSuccess) throw Error(APH_ERR_DEVICE, std::string("mirostat: reading mu: ") + cudaGetErrorString(e));
  return mu;
}

}  // namespace aph::samplers
#endif
