// Llama 1/2/3/3.1/3.2 and everything shaped like it (SmolLM2, TinyLlama, ...).
// Llama 3 rope scaling comes in as config (HF) or rope_freqs (GGUF); both are
// folded into the RoPE table by the runner.
#include "core/model/arch/llama_graph.hpp"

namespace {
std::unique_ptr<aph::model::DecoderModel> make_llama(const aph::weights::ModelConfig&) {
  return std::make_unique<aph::model::LlamaGraph>(aph::model::LlamaVariant{});
}
}  // namespace

APH_REGISTER_ARCHITECTURE(llama, "LlamaForCausalLM", make_llama);
