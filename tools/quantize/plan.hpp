// What aphrodite-quantize writes: the GGUF metadata of an HF llama/mistral/
// qwen2 checkpoint and, per tensor, its GGUF name, ggml type and row order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/weights/hf_checkpoint.hpp"
#include "plugins/quant-gguf/container/gguf_writer.hpp"

namespace aph::quantize {

// A named scheme: one ggml type for every matrix, or the Q4_K_M mix.
struct Scheme {
  std::string name;
  uint32_t base_type;
  bool q4_k_m;
  uint32_t file_type;  // general.file_type (llama.cpp's LlamaFileType label)
};
// Throws aph::Error listing the known names.
Scheme parse_scheme(const std::string& name);

struct TensorPlan {
  std::string gguf_name;
  const weights::StoredTensor* source = nullptr;  // nullptr for generated tensors
  std::vector<float> generated;                   // rope_freqs.weight
  uint32_t type = 0;
  std::vector<uint64_t> ne;  // ggml order
  int64_t rows = 1, cols = 1;
  // Q/K rows for adjacent-pair RoPE (llama arch): output row r reads source
  // row permute_source_row(r). heads = 0 means no permutation.
  int64_t permute_heads = 0;
  int64_t source_row(int64_t r) const;
};

std::string gguf_arch(const weights::ModelConfig& cfg, const std::string& dir);
// The {arch}.* and general.* keys.
void add_model_keys(gguf::GgufWriter& w, const weights::ModelConfig& cfg, const std::string& arch,
                    const Scheme& scheme, const std::string& name);
// Every tensor to write, in file order. Throws for tensors it cannot map.
std::vector<TensorPlan> plan_tensors(const weights::HfCheckpoint& ck, const std::string& arch,
                                     const Scheme& scheme);

}  // namespace aph::quantize
