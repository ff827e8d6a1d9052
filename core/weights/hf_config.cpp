#include "core/weights/hf_config.hpp"

#include <cmath>
#include <fstream>
#include <sstream>

#include "core/common/error.hpp"

namespace aph::weights {

namespace json = boost::json;

namespace {

const json::value* find(const json::object& o, const char* key) {
  const json::value* v = o.if_contains(key);
  return (v == nullptr || v->is_null()) ? nullptr : v;
}

int64_t get_int(const json::object& o, const char* key, int64_t fallback, const std::string& where) {
  const json::value* v = find(o, key);
  if (!v) return fallback;
  if (v->is_int64()) return v->as_int64();
  if (v->is_uint64() && v->as_uint64() <= INT64_MAX) return static_cast<int64_t>(v->as_uint64());
  // 4096.0 counts as an integer; anything fractional or out of range does not.
  if (v->is_double() && std::fabs(v->as_double()) < 9.0e18 && v->as_double() == std::floor(v->as_double())) {
    return static_cast<int64_t>(v->as_double());
  }
  throw invalid_argument(where + ": field '" + key + "' must be an integer");
}

double get_double(const json::object& o, const char* key, double fallback, const std::string& where) {
  const json::value* v = find(o, key);
  if (!v) return fallback;
  if (v->is_double()) return v->as_double();
  if (v->is_int64()) return static_cast<double>(v->as_int64());
  if (v->is_uint64()) return static_cast<double>(v->as_uint64());
  throw invalid_argument(where + ": field '" + key + "' must be a number");
}

bool get_bool(const json::object& o, const char* key, bool fallback, const std::string& where) {
  const json::value* v = find(o, key);
  if (!v) return fallback;
  if (!v->is_bool()) throw invalid_argument(where + ": field '" + key + "' must be true or false");
  return v->as_bool();
}

std::string get_string(const json::object& o, const char* key, const std::string& where) {
  const json::value* v = find(o, key);
  if (!v) return "";
  if (!v->is_string()) throw invalid_argument(where + ": field '" + key + "' must be a string");
  return std::string(v->as_string());
}

std::vector<double> get_double_list(const json::object& o, const char* key, const std::string& where) {
  std::vector<double> out;
  const json::value* v = find(o, key);
  if (!v) return out;
  if (!v->is_array()) throw invalid_argument(where + ": field '" + key + "' must be a list of numbers");
  for (const auto& e : v->as_array()) {
    if (!e.is_number()) throw invalid_argument(where + ": field '" + key + "' must be a list of numbers");
    out.push_back(e.to_number<double>());
  }
  return out;
}

int64_t require_positive(const json::object& o, const char* key, const std::string& where) {
  if (!find(o, key)) throw invalid_argument(where + ": required field '" + key + "' is missing");
  int64_t v = get_int(o, key, 0, where);
  if (v <= 0) throw invalid_argument(where + ": field '" + key + "' must be positive");
  return v;
}

}  // namespace

RopeScaling parse_rope_scaling(const json::object& config, const std::string& source,
                               double* rope_theta_out) {
  RopeScaling rs;
  const json::value* v = find(config, "rope_scaling");
  std::string field = "rope_scaling";
  if (!v) {
    v = find(config, "rope_parameters");
    field = "rope_parameters";
  }
  if (!v) return rs;
  if (!v->is_object()) throw invalid_argument(source + ": field '" + field + "' must be an object");
  const json::object& o = v->as_object();
  const std::string where = source + ": " + field;
  // transformers >= 5 moves rope_theta inside rope_parameters.
  if (rope_theta_out && find(o, "rope_theta")) *rope_theta_out = get_double(o, "rope_theta", 10000.0, where);
  std::string type = get_string(o, "rope_type", where);
  if (type.empty()) type = get_string(o, "type", where);
  if (type.empty() || type == "default") {
    rs.type = RopeType::Default;
  } else if (type == "linear") {
    rs.type = RopeType::Linear;
  } else if (type == "dynamic") {
    rs.type = RopeType::Dynamic;
  } else if (type == "yarn") {
    rs.type = RopeType::Yarn;
  } else if (type == "llama3") {
    rs.type = RopeType::Llama3;
  } else if (type == "longrope" || type == "su") {
    rs.type = RopeType::LongRope;
  } else {
    throw invalid_argument(where + ".rope_type '" + type +
                           "' is not supported (default, linear, dynamic, yarn, llama3, longrope)");
  }
  rs.factor = get_double(o, "factor", 1.0, where);
  if (rs.type != RopeType::Default && rs.type != RopeType::LongRope && rs.factor <= 0) {
    throw invalid_argument(where + ".factor must be positive");
  }
  rs.original_max_position_embeddings = get_int(o, "original_max_position_embeddings", 0, where);
  if (rs.type == RopeType::Llama3 && rs.original_max_position_embeddings == 0) {
    rs.original_max_position_embeddings = 8192;
  }
  rs.low_freq_factor = get_double(o, "low_freq_factor", 1.0, where);
  rs.high_freq_factor = get_double(o, "high_freq_factor", 4.0, where);
  if (rs.type == RopeType::Llama3 && rs.high_freq_factor <= rs.low_freq_factor) {
    throw invalid_argument(where + ": high_freq_factor must exceed low_freq_factor");
  }
  rs.beta_fast = get_double(o, "beta_fast", 32.0, where);
  rs.beta_slow = get_double(o, "beta_slow", 1.0, where);
  rs.attention_factor = get_double(o, "attention_factor", 0.0, where);
  rs.short_factor = get_double_list(o, "short_factor", where);
  rs.long_factor = get_double_list(o, "long_factor", where);
  if (rs.type == RopeType::LongRope && (rs.short_factor.empty() || rs.long_factor.empty())) {
    throw invalid_argument(where + ": longrope needs short_factor and long_factor");
  }
  return rs;
}

ModelConfig parse_model_config(const json::object& o, const std::string& source) {
  ModelConfig c;
  if (const json::value* a = find(o, "architectures")) {
    if (!a->is_array()) throw invalid_argument(source + ": field 'architectures' must be a list");
    for (const auto& e : a->as_array()) {
      if (!e.is_string()) throw invalid_argument(source + ": field 'architectures' must hold strings");
      c.architectures.emplace_back(e.as_string());
    }
  }
  c.model_type = get_string(o, "model_type", source);
  c.hidden_size = require_positive(o, "hidden_size", source);
  c.intermediate_size = require_positive(o, "intermediate_size", source);
  c.num_hidden_layers = require_positive(o, "num_hidden_layers", source);
  c.num_attention_heads = require_positive(o, "num_attention_heads", source);
  c.num_key_value_heads = get_int(o, "num_key_value_heads", c.num_attention_heads, source);
  if (c.num_key_value_heads <= 0 || c.num_attention_heads % c.num_key_value_heads != 0) {
    throw invalid_argument(source + ": field 'num_key_value_heads' (" + std::to_string(c.num_key_value_heads) +
                           ") must divide num_attention_heads (" + std::to_string(c.num_attention_heads) + ")");
  }
  // Mistral-Nemo's head_dim differs from hidden/heads: never derive a given one.
  c.head_dim = get_int(o, "head_dim", 0, source);
  if (c.head_dim == 0) {
    if (c.hidden_size % c.num_attention_heads != 0) {
      throw invalid_argument(source + ": hidden_size is not a multiple of num_attention_heads and no head_dim is given");
    }
    c.head_dim = c.hidden_size / c.num_attention_heads;
  }
  if (c.head_dim <= 0 || c.head_dim % 2 != 0) throw invalid_argument(source + ": field 'head_dim' must be positive and even");
  c.rms_norm_eps = get_double(o, "rms_norm_eps", 1e-6, source);
  c.rope_theta = get_double(o, "rope_theta", 10000.0, source);
  c.rope_scaling = parse_rope_scaling(o, source, &c.rope_theta);
  // Phi-3 style configs keep the original context at the top level.
  if (c.rope_scaling.original_max_position_embeddings == 0) {
    c.rope_scaling.original_max_position_embeddings = get_int(o, "original_max_position_embeddings", 0, source);
  }
  c.partial_rotary_factor = get_double(o, "partial_rotary_factor", 1.0, source);
  if (c.partial_rotary_factor <= 0 || c.partial_rotary_factor > 1 || c.rotary_dim() % 2 != 0) {
    throw invalid_argument(source + ": field 'partial_rotary_factor' gives an odd or empty rotary dimension");
  }
  if (c.rope_scaling.type == RopeType::LongRope &&
      (static_cast<int64_t>(c.rope_scaling.short_factor.size()) != c.rotary_dim() / 2 ||
       static_cast<int64_t>(c.rope_scaling.long_factor.size()) != c.rotary_dim() / 2)) {
    throw invalid_argument(source + ": rope_scaling short_factor/long_factor must have rotary_dim/2 entries");
  }
  c.max_position_embeddings = get_int(o, "max_position_embeddings", 2048, source);
  if (c.max_position_embeddings <= 0) throw invalid_argument(source + ": field 'max_position_embeddings' must be positive");
  c.vocab_size = require_positive(o, "vocab_size", source);
  c.tie_word_embeddings = get_bool(o, "tie_word_embeddings", false, source);
  c.torch_dtype = get_string(o, "torch_dtype", source);
  if (c.torch_dtype.empty()) c.torch_dtype = get_string(o, "dtype", source);
  c.bos_token_id = get_int(o, "bos_token_id", -1, source);
  if (const json::value* e = find(o, "eos_token_id")) {
    if (e->is_array()) {
      for (const auto& id : e->as_array()) {
        if (!id.is_int64()) throw invalid_argument(source + ": field 'eos_token_id' must hold integers in int64 range");
        c.eos_token_ids.push_back(id.get_int64());
      }
    } else {
      c.eos_token_ids.push_back(get_int(o, "eos_token_id", -1, source));
    }
  }
  c.hidden_act = get_string(o, "hidden_act", source);
  if (c.hidden_act.empty()) c.hidden_act = "silu";
  c.attention_bias = get_bool(o, "attention_bias", false, source);
  c.mlp_bias = get_bool(o, "mlp_bias", false, source);
  c.sliding_window = get_int(o, "sliding_window", 0, source);
  c.use_sliding_window = get_bool(o, "use_sliding_window", false, source);
  c.max_window_layers = get_int(o, "max_window_layers", 0, source);
  if (const json::value* q = find(o, "quantization_config")) {
    if (!q->is_object()) throw invalid_argument(source + ": field 'quantization_config' must be an object");
    c.quantization_config = q->as_object();
  }
  return c;
}

json::object parse_generation_defaults(const json::object& g, const std::string& source) {
  static const char* kKeys[] = {"temperature", "top_p", "top_k", "min_p", "typical_p",
                                "repetition_penalty", "presence_penalty", "frequency_penalty",
                                "do_sample", "max_new_tokens", "max_length", "eos_token_id",
                                "bos_token_id", "pad_token_id", "no_repeat_ngram_size"};
  json::object out;
  for (const char* key : kKeys) {
    const json::value* v = find(g, key);
    if (!v) continue;
    if (!v->is_number() && !v->is_bool() && !v->is_array()) {
      throw invalid_argument(source + ": field '" + key + "' must be a number");
    }
    out[key] = *v;
  }
  return out;
}

json::value read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(APH_ERR_IO, "cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return json::parse(ss.str());
  } catch (const std::exception& e) {
    throw invalid_argument(path + ": not valid JSON: " + e.what());
  }
}

}  // namespace aph::weights
