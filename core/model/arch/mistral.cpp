// Mistral: the Llama graph. Its sliding window is honoured by the runner
// capping the context at the window (the paged attention op has no window).
#include "core/model/arch/llama_graph.hpp"

namespace {
std::unique_ptr<aph::model::DecoderModel> make_mistral(const aph::weights::ModelConfig&) {
  return std::make_unique<aph::model::LlamaGraph>(aph::model::LlamaVariant{});
}
}  // namespace

APH_REGISTER_ARCHITECTURE(mistral, "MistralForCausalLM", make_mistral);
