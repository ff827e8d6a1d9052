// What an architecture file implements: load its weights through the
// WeightLoader, then run embedding -> layers for one step. Architectures
// register themselves by HF name (APH_REGISTER_ARCHITECTURE); the runner
// never names one.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/attention/paged_attention.hpp"
#include "core/model/layers.hpp"
#include "core/model/weight_loader.hpp"
#include "core/ops/ops.hpp"
#include "core/weights/hf_config.hpp"

namespace aph::model {

struct LayerKv {
  Tensor k, v;  // [num_blocks, block_size, num_kv_heads, head_dim]
};

// One step's inputs, already on the device.
struct StepContext {
  ops::Exec exec;
  int64_t n_tokens = 0;
  Tensor token_ids;  // I32 [n_tokens]
  Tensor positions;  // I32 [n_tokens]
  // Batch fields filled by the runner; each layer adds q/k/v/out and its caches.
  attention::PagedAttentionArgs attention;
  const std::vector<LayerKv>* kv = nullptr;
};

// Fixed at load: what the weights do not say.
struct ModelSetup {
  int32_t device = APH_DEVICE_CPU;
  aph_dtype act_dtype = APH_DTYPE_F32;
  bool rope_interleaved = false;  // Q/K rows in GGUF (adjacent-pair) order
  Tensor inv_freq;                // F32 [rotary_dim / 2] on the device
  float rope_mscale = 1.0f;
};

// The final hidden states before the final norm, as the last residual add
// leaves them: stream + delta, [n_tokens, hidden] (delta undefined: stream
// alone). The add is left to whoever norms them (the runner, or the LM head's
// plugin folding the add and norm into its input); spare is a free buffer of
// stream's shape for the sum.
struct FinalHidden {
  Tensor stream, delta, spare;
};

class DecoderModel {
 public:
  virtual ~DecoderModel() = default;
  virtual void load(const WeightLoader& weights, const weights::ModelConfig& config, const ModelSetup& setup) = 0;
  // Sizes the workspaces for steps of up to max_tokens tokens.
  virtual void reserve(int64_t max_tokens) = 0;
  virtual FinalHidden forward(StepContext& ctx) = 0;
  virtual uint64_t device_bytes() const = 0;

  const Tensor& final_norm() const { return final_norm_; }
  const Linear& lm_head() const { return *lm_head_; }
  float norm_eps() const { return norm_eps_; }

 protected:
  Tensor final_norm_;
  std::shared_ptr<Linear> lm_head_;
  float norm_eps_ = 1e-6f;
};

using ArchitectureFactory = std::unique_ptr<DecoderModel> (*)(const weights::ModelConfig& config);

// Called from static initializers; a duplicate name throws.
bool register_architecture(const char* hf_name, ArchitectureFactory factory);
// The first of config.architectures that is registered. Throws aph::Error
// (APH_ERR_UNSUPPORTED) listing the supported names otherwise.
std::unique_ptr<DecoderModel> create_architecture(const weights::ModelConfig& config, const std::string& source);
std::vector<std::string> supported_architectures();

#define APH_REGISTER_ARCHITECTURE(ident, hf_name, factory)                    \
  [[maybe_unused]] static const bool aph_architecture_registered_##ident = \
      ::aph::model::register_architecture(hf_name, factory)

}  // namespace aph::model
