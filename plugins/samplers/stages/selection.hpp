// Selection stages: they write batch->chosen for the rows they decide.
#pragma once

#include <span>
#include <unordered_map>

#include "plugins/samplers/stage_shim.hpp"

namespace aph::samplers {

// Mirostat's mu for device batches: one float of device memory per row seed,
// which the kernel reads and updates in place, so the state never travels to
// the host between steps. Taken from the plugin's float pool on the engine
// thread at a seed's first step, given back with the request (any thread).
class DeviceMu {
 public:
  struct Slot {
    float* mu = nullptr;  // device
    bool fresh = true;    // no kernel has written it yet: it starts at 2 tau
  };
  DeviceMu() = default;
  DeviceMu(const DeviceMu&) = delete;
  DeviceMu& operator=(const DeviceMu&) = delete;
  ~DeviceMu();
  // The seed's slot, allocated on first use. Throws when the allocation fails.
  Slot& slot(const std::shared_ptr<DeviceFloatPool>& pool, int32_t device, uint64_t seed);
  // nullptr when the seed has no slot yet.
  const Slot* find(uint64_t seed) const;

 private:
  std::shared_ptr<DeviceFloatPool> pool_;
  int32_t device_ = -1;
  std::unordered_map<uint64_t, Slot> slots_;  // node-based: a Slot& stays valid
};

// Mirostat v1 / v2 with per-request state mu (starts at 2 tau), kept per row
// seed so the n choices of one request (seed + index) evolve separately.
// Decides its rows; the other rows go on to the final selection stage.
struct MirostatStage {
  struct Params {
    int32_t mode = 0;
    float tau = 0, eta = 0;
    std::unordered_map<uint64_t, float> mu;  // by row seed, CPU batches
    DeviceMu device_mu;                      // by row seed, device batches
  };
  static constexpr StageInfo info{"mirostat", "", -1, 2000, APH_SAMPLER_FIXED_POSITION | APH_SAMPLER_SELECTS,
                                  "mirostat=mirostat_mode"};
  static std::span<const aph_sampler_field> fields();
  static std::unique_ptr<Params> create(const Request& r, PluginState& st);
  static void apply_cpu(PluginState& st, std::span<const CpuRow<Params>> rows);
#ifdef APH_HAVE_CUDA
  static void apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s);
  // The device mu of a seed, 2 tau before its first step. Synchronizes
  // `stream` (for tests and debugging, never the sampling path).
  static float device_mu(const Params& p, uint64_t seed, aph_stream stream);
#endif
};

// The final selection for every row not yet decided: greedy when the
// request's temperature is ~0, else a seeded draw from softmax(logits) by the
// Gumbel-max trick with counter-based noise, so a (seed, step) pair gives the
// same token alone, in any batch, on CPU and GPU.
struct SampleStage {
  struct Params {
    bool greedy = false;
  };
  static constexpr StageInfo info{"sample", "", -1, 2100, APH_SAMPLER_FIXED_POSITION | APH_SAMPLER_SELECTS, ""};
  static std::span<const aph_sampler_field> fields();
  static std::unique_ptr<Params> create(const Request& r, PluginState& st);
  static void apply_cpu(PluginState& st, std::span<const CpuRow<Params>> rows);
#ifdef APH_HAVE_CUDA
  static void apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s);
#endif
};

// Gumbel noise of token `index` for a row's (seed, step): -log(-log u).
double gumbel_noise(uint64_t seed, uint64_t step, uint64_t purpose, int64_t index);
// argmax over live logits of logit + Gumbel noise; -1 if no token is live.
int32_t gumbel_argmax(const float* logits, int64_t vocab, uint64_t seed, uint64_t step, uint64_t purpose);

}  // namespace aph::samplers
