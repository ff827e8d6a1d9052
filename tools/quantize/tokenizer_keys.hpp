// The tokenizer.* keys of a GGUF written by aphrodite-quantize, from (in order
// of preference) the HF directory's tokenizer.json, another GGUF file
// (--vocab-from), or a synthetic byte-level vocabulary so random-weight
// benchmark models without a tokenizer still load.
#pragma once

#include <string>

#include "core/weights/hf_config.hpp"
#include "plugins/quant-gguf/container/gguf_writer.hpp"

namespace aph::quantize {

struct TokenizerOptions {
  std::string hf_dir;
  std::string vocab_from;  // a .gguf, or empty
  std::string pre;         // tokenizer.ggml.pre override, or empty
  std::string arch;        // "llama", "qwen2", ...
};

// Adds the keys to `w`; returns a one-line description of the source used.
std::string add_tokenizer_keys(gguf::GgufWriter& w, const weights::ModelConfig& cfg,
                               const TokenizerOptions& opt);

}  // namespace aph::quantize
