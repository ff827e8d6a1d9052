// The Llama decoder graph (pre-norm, RoPE, GQA attention, SwiGLU MLP), shared
// by the architectures that differ from Llama only in what they load: Mistral
// and Qwen2 (QKV bias). SmolLM2 is a LlamaForCausalLM with tied embeddings.
#pragma once

#include "core/model/decoder.hpp"

namespace aph::model {

struct LlamaVariant {
  bool qkv_bias = false;  // forced on (Qwen2) in addition to config.attention_bias
};

class LlamaGraph : public DecoderModel {
 public:
  explicit LlamaGraph(LlamaVariant variant) : variant_(variant) {}
  void load(const WeightLoader& weights, const weights::ModelConfig& config, const ModelSetup& setup) override;
  void reserve(int64_t max_tokens) override;
  FinalHidden forward(StepContext& ctx) override;
  uint64_t device_bytes() const override;

 private:
  struct Layer {
    Tensor attn_norm, ffn_norm;  // F32 [hidden]
    std::unique_ptr<ProjectionGroup> qkv, gate_up;
    std::unique_ptr<Linear> o_proj, down_proj;
  };
  LlamaVariant variant_;
  ModelSetup setup_;
  int64_t hidden_ = 0, inter_ = 0, heads_ = 0, kv_heads_ = 0, head_dim_ = 0, rotary_dim_ = 0;
  std::shared_ptr<Embedding> embed_;
  std::vector<Layer> layers_;
  // Workspaces, [max_tokens, ...], reused every step. The residual stream
  // alternates between two buffers: each add reads one and writes the other
  // (NormedInput), so a matvec that folds the add and norm in can store the
  // sum from one CTA while the others still read the old one.
  Tensor residual_, residual_alt_, normed_, q_, k_, v_, attn_out_, delta_, act_;
};

}  // namespace aph::model
