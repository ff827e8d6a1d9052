// RoPE inverse frequencies with the model's scaling folded in (FORMATS.md
// §7.4), computed once at load: the kernels only ever see a table.
#pragma once

#include <cstdint>
#include <vector>

#include "core/weights/hf_config.hpp"

namespace aph::model {

struct RopeTable {
  std::vector<float> inv_freq;  // [rotary_dim / 2]
  float mscale = 1.0f;          // multiplies cos and sin
};

// max_model_len: the context the runner serves (dynamic NTK and longrope
// choose their variant from it, once, so the KV cache stays consistent).
// divisors: GGUF rope_freqs.weight (Llama 3), each entry divides θ_i; empty
// when absent. Throws aph::Error on an inconsistent table size.
RopeTable compute_rope_table(const weights::ModelConfig& config, int64_t max_model_len,
                             const std::vector<float>& divisors = {});

}  // namespace aph::model
