// Text <-> token ids, exact to the reference tokenizers (HF tokenizers,
// llama.cpp's llama-vocab). Built from an HF tokenizer.json or from a GGUF's
// tokenizer.ggml.* metadata.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace aph::text {

struct EncodeOptions {
  bool add_special = false;    // BOS/EOS as the model declares (add_bos_token, ...)
  bool parse_special = false;  // match special-token text in the input
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // From GGUF metadata: an object keyed by the GGUF names (tokenizer.ggml.model,
  // tokenizer.ggml.tokens, ...), as aph_quant_vtable.source_metadata_json's
  // "tokenizer" member delivers it. Throws aph::Error naming the bad key.
  static std::unique_ptr<Tokenizer> from_gguf_metadata(const boost::json::object& tokenizer);
  // From an HF directory or a tokenizer.json path (tokenizer_config.json and
  // special_tokens_map.json beside it are read when present).
  static std::unique_ptr<Tokenizer> from_hf(const std::string& path);
  // The same from texts already in memory: tokenizer.json, and optionally
  // tokenizer_config.json and special_tokens_map.json ("" = absent). `source`
  // names the origin in error messages.
  static std::unique_ptr<Tokenizer> from_hf_json(std::string_view tokenizer_json,
                                                 std::string_view tokenizer_config_json = {},
                                                 std::string_view special_tokens_map_json = {},
                                                 const std::string& source = "tokenizer.json");

  virtual std::vector<int32_t> encode(std::string_view text, const EncodeOptions& options) const = 0;
  // The raw bytes of one token as it contributes to decoded text (SentencePiece
  // '▁' already turned into ' ', byte tokens into their byte).
  virtual std::string token_bytes(int32_t id) const = 0;
  // The token's text as stored in the vocabulary (for logprobs "token" fields).
  virtual const std::string& token_text(int32_t id) const = 0;
  virtual std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const = 0;
  virtual bool is_special(int32_t id) const = 0;
  virtual int32_t vocab_size() const = 0;
  virtual int32_t bos_id() const = 0;  // -1 if none
  virtual int32_t eos_id() const = 0;  // -1 if none
  // Every id that ends generation (eos, eot, eom ...).
  virtual std::vector<int32_t> eog_ids() const = 0;
  virtual bool adds_bos() const = 0;
  virtual bool adds_eos() const = 0;
  // Whether decoding strips one leading space at the start of a sequence
  // (SentencePiece add_space_prefix).
  virtual bool strips_leading_space() const = 0;
};

}  // namespace aph::text
