// An HF config.json (FORMATS.md §7.3) and generation_config.json, parsed once
// into plain fields. Every error names the config field at fault.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace aph::weights {

enum class RopeType { Default, Linear, Dynamic, Yarn, Llama3, LongRope };

struct RopeScaling {
  RopeType type = RopeType::Default;
  double factor = 1.0;
  int64_t original_max_position_embeddings = 0;  // 0 = max_position_embeddings
  double low_freq_factor = 1.0;                  // llama3
  double high_freq_factor = 4.0;                 // llama3
  double beta_fast = 32.0;                       // yarn
  double beta_slow = 1.0;                        // yarn
  double attention_factor = 0.0;                 // yarn / longrope; 0 = the formula's default
  std::vector<double> short_factor, long_factor; // longrope, [rotary_dim / 2]
};

struct ModelConfig {
  std::vector<std::string> architectures;
  std::string model_type;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;  // = num_attention_heads when absent
  int64_t head_dim = 0;             // given, or hidden_size / num_attention_heads
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  double partial_rotary_factor = 1.0;
  RopeScaling rope_scaling;
  int64_t max_position_embeddings = 2048;
  int64_t vocab_size = 0;
  bool tie_word_embeddings = false;
  std::string torch_dtype;  // "" when absent
  int64_t bos_token_id = -1;
  std::vector<int64_t> eos_token_ids;
  std::string hidden_act = "silu";
  bool attention_bias = false;
  bool mlp_bias = false;
  int64_t sliding_window = 0;  // 0 = none
  bool use_sliding_window = false;
  int64_t max_window_layers = 0;
  boost::json::object quantization_config;  // empty when absent

  int64_t rotary_dim() const { return static_cast<int64_t>(head_dim * partial_rotary_factor); }
};

// `source` names the file for messages ("model/config.json").
ModelConfig parse_model_config(const boost::json::object& config, const std::string& source);
// Reads rope_scaling or rope_parameters (transformers >= 5) into `out`.
RopeScaling parse_rope_scaling(const boost::json::object& config, const std::string& source,
                               double* rope_theta_out);
// The sampling defaults of a generation_config.json (temperature, top_p, top_k,
// min_p, repetition_penalty, ...), plus eos_token_id when present.
boost::json::object parse_generation_defaults(const boost::json::object& generation_config,
                                              const std::string& source);

// Reads and parses a JSON file; throws aph::Error naming it.
boost::json::value read_json_file(const std::string& path);

}  // namespace aph::weights
