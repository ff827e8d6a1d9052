// Qwen2 / Qwen2.5: the Llama graph with biases on q/k/v (always present in
// Qwen2 checkpoints, whatever attention_bias says) and NEOX RoPE.
#include "core/model/arch/llama_graph.hpp"

namespace {
std::unique_ptr<aph::model::DecoderModel> make_qwen2(const aph::weights::ModelConfig&) {
  aph::model::LlamaVariant v;
  v.qkv_bias = true;
  return std::make_unique<aph::model::LlamaGraph>(v);
}
}  // namespace

APH_REGISTER_ARCHITECTURE(qwen2, "Qwen2ForCausalLM", make_qwen2);
