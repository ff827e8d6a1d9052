#include "tools/quantize/plan.hpp"

#include <cmath>
#include <map>
#include <numbers>
#include <regex>

#include "core/common/error.hpp"
#include "plugins/quant-gguf/container/ggml_types.hpp"

namespace aph::quantize {

using namespace aph::gguf;

Scheme parse_scheme(const std::string& name) {
  // file_type labels from llama.cpp's LlamaFileType (FORMATS.md §1.2).
  static const std::map<std::string, Scheme> known = {
      {"F16", {"F16", kF16, false, 1}},       {"Q8_0", {"Q8_0", kQ8_0, false, 7}},
      {"Q4_0", {"Q4_0", kQ4_0, false, 2}},    {"Q4_1", {"Q4_1", kQ4_1, false, 3}},
      {"Q4_K", {"Q4_K", kQ4_K, false, 14}},
      {"Q5_K", {"Q5_K", kQ5_K, false, 16}},   {"Q6_K", {"Q6_K", kQ6_K, false, 18}},
      {"Q4_K_M", {"Q4_K_M", kQ4_K, true, 15}},
  };
  auto it = known.find(name);
  if (it == known.end())
    throw invalid_argument("unknown --type '" + name + "' (F16, Q8_0, Q4_0, Q4_1, Q4_K, Q5_K, Q6_K, Q4_K_M)");
  return it->second;
}

int64_t TensorPlan::source_row(int64_t r) const {
  if (permute_heads == 0) return r;
  // GGUF row 2i+j of a head of size d is HF row j*d/2 + i (FORMATS.md §1.4).
  const int64_t d = rows / permute_heads;
  const int64_t head = r / d, g = r % d;
  return head * d + (g % 2) * (d / 2) + g / 2;
}

std::string gguf_arch(const weights::ModelConfig& cfg, const std::string& dir) {
  const std::string a = cfg.architectures.empty() ? cfg.model_type : cfg.architectures[0];
  if (a == "LlamaForCausalLM" || a == "MistralForCausalLM" || a == "llama" || a == "mistral") return "llama";
  if (a == "Qwen2ForCausalLM" || a == "qwen2") return "qwen2";
  if (a == "Qwen3ForCausalLM" || a == "qwen3") return "qwen3";
  throw Error(APH_ERR_UNSUPPORTED, dir + "/config.json: architecture '" + a +
                                       "' is not supported (llama, mistral, qwen2, qwen3)");
}

void add_model_keys(GgufWriter& w, const weights::ModelConfig& c, const std::string& arch,
                    const Scheme& scheme, const std::string& name) {
  const std::string p = arch + ".";
  w.add_string("general.architecture", arch);
  w.add_string("general.name", name);
  w.add_u32("general.file_type", scheme.file_type);
  w.add_u32("general.quantization_version", 2);
  w.add_u32(p + "context_length", static_cast<uint32_t>(c.max_position_embeddings));
  w.add_u32(p + "embedding_length", static_cast<uint32_t>(c.hidden_size));
  w.add_u32(p + "block_count", static_cast<uint32_t>(c.num_hidden_layers));
  w.add_u32(p + "feed_forward_length", static_cast<uint32_t>(c.intermediate_size));
  w.add_u32(p + "attention.head_count", static_cast<uint32_t>(c.num_attention_heads));
  w.add_u32(p + "attention.head_count_kv", static_cast<uint32_t>(c.num_key_value_heads));
  w.add_f32(p + "attention.layer_norm_rms_epsilon", static_cast<float>(c.rms_norm_eps));
  w.add_f32(p + "rope.freq_base", static_cast<float>(c.rope_theta));
  w.add_u32(p + "rope.dimension_count", static_cast<uint32_t>(c.rotary_dim()));
  if (c.head_dim * c.num_attention_heads != c.hidden_size) {
    w.add_u32(p + "attention.key_length", static_cast<uint32_t>(c.head_dim));
    w.add_u32(p + "attention.value_length", static_cast<uint32_t>(c.head_dim));
  }
  if (c.vocab_size > 0) w.add_u32(p + "vocab_size", static_cast<uint32_t>(c.vocab_size));
  const auto& rs = c.rope_scaling;
  using weights::RopeType;
  if (rs.type == RopeType::Linear) {
    w.add_string(p + "rope.scaling.type", "linear");
    w.add_f32(p + "rope.scaling.factor", static_cast<float>(rs.factor));
  } else if (rs.type == RopeType::Yarn) {
    w.add_string(p + "rope.scaling.type", "yarn");
    w.add_f32(p + "rope.scaling.factor", static_cast<float>(rs.factor));
    w.add_u32(p + "rope.scaling.original_context_length",
              static_cast<uint32_t>(rs.original_max_position_embeddings > 0 ? rs.original_max_position_embeddings
                                                                            : c.max_position_embeddings));
    w.add_f32(p + "rope.scaling.yarn_beta_fast", static_cast<float>(rs.beta_fast));
    w.add_f32(p + "rope.scaling.yarn_beta_slow", static_cast<float>(rs.beta_slow));
    if (rs.attention_factor > 0) w.add_f32(p + "rope.scaling.attn_factor", static_cast<float>(rs.attention_factor));
  } else if (rs.type == RopeType::Dynamic || rs.type == RopeType::LongRope) {
    throw Error(APH_ERR_UNSUPPORTED, "rope_scaling dynamic/longrope has no GGUF form");
  }
}

namespace {

// Llama 3 scaling becomes per-frequency divisors (FORMATS.md §1.2, §7.4).
std::vector<float> llama3_rope_freqs(const weights::ModelConfig& c) {
  const auto& rs = c.rope_scaling;
  const int64_t dim = c.rotary_dim();
  const double l0 = rs.original_max_position_embeddings > 0 ? rs.original_max_position_embeddings : 8192;
  const double low_wl = l0 / rs.low_freq_factor, high_wl = l0 / rs.high_freq_factor;
  std::vector<float> out;
  for (int64_t i = 0; i < dim / 2; ++i) {
    const double freq = std::pow(c.rope_theta, -2.0 * i / dim);
    const double wl = 2 * std::numbers::pi / freq;
    double div;
    if (wl < high_wl) {
      div = 1.0;
    } else if (wl > low_wl) {
      div = rs.factor;
    } else {
      const double smooth = (l0 / wl - rs.low_freq_factor) / (rs.high_freq_factor - rs.low_freq_factor);
      div = 1.0 / ((1 - smooth) / rs.factor + smooth);
    }
    out.push_back(static_cast<float>(div));
  }
  return out;
}

// llama.cpp's use_more_bits: the first and last eighth of the layers and
// every third one in between get more bits in the _M mixes.
bool use_more_bits(int64_t i, int64_t n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

uint32_t fallback(uint32_t type, int64_t cols) {
  if (cols % 256 == 0 || type == kF16 || type == kF32) return cols % 32 == 0 || type == kF16 ? type : kF16;
  // Rows not a multiple of 256: llama-quant's fallbacks (FORMATS.md §2.3).
  uint32_t t = type == kQ4_K ? kQ5_0 : type == kQ5_K ? kQ5_1 : type == kQ6_K ? kQ8_0 : type;
  return cols % 32 == 0 ? t : kF16;
}

}  // namespace

std::vector<TensorPlan> plan_tensors(const weights::HfCheckpoint& ck, const std::string& arch,
                                     const Scheme& scheme) {
  const auto& c = ck.config();
  static const std::map<std::string, std::string> layer = {
      {"input_layernorm.weight", "attn_norm.weight"},
      {"post_attention_layernorm.weight", "ffn_norm.weight"},
      {"self_attn.q_proj.weight", "attn_q.weight"},
      {"self_attn.q_proj.bias", "attn_q.bias"},
      {"self_attn.k_proj.weight", "attn_k.weight"},
      {"self_attn.k_proj.bias", "attn_k.bias"},
      {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.v_proj.bias", "attn_v.bias"},
      {"self_attn.o_proj.weight", "attn_output.weight"},
      {"self_attn.q_norm.weight", "attn_q_norm.weight"},
      {"self_attn.k_norm.weight", "attn_k_norm.weight"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},
      {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.down_proj.weight", "ffn_down.weight"},
  };
  static const std::regex layer_re(R"(model\.layers\.(\d+)\.(.+))");
  const bool tied = ck.find("lm_head.weight") == nullptr;
  std::vector<TensorPlan> plans;
  for (const weights::StoredTensor* t : ck.with_prefix("")) {
    if (t->name.find("rotary_emb.inv_freq") != std::string::npos) continue;
    TensorPlan p;
    p.source = t;
    int64_t layer_index = -1;
    std::string role;
    std::smatch m;
    if (t->name == "model.embed_tokens.weight") {
      p.gguf_name = "token_embd.weight";
    } else if (t->name == "model.norm.weight") {
      p.gguf_name = "output_norm.weight";
    } else if (t->name == "lm_head.weight") {
      if (c.tie_word_embeddings) continue;
      p.gguf_name = "output.weight";
    } else if (std::regex_match(t->name, m, layer_re) && layer.count(m[2].str())) {
      layer_index = std::stoll(m[1].str());
      role = layer.at(m[2].str());
      p.gguf_name = "blk." + m[1].str() + "." + role;
    } else {
      throw Error(APH_ERR_UNSUPPORTED, ck.dir() + ": tensor '" + t->name + "' has no GGUF mapping");
    }
    if (t->dtype != APH_DTYPE_F32 && t->dtype != APH_DTYPE_F16 && t->dtype != APH_DTYPE_BF16)
      throw Error(APH_ERR_UNSUPPORTED, t->file + ": tensor '" + t->name + "' is " + t->dtype_name +
                                           " (need F32, F16 or BF16)");
    if (t->shape.empty() || t->shape.size() > 2)
      throw invalid_argument(t->file + ": tensor '" + t->name + "' must be 1-D or 2-D");
    p.rows = t->shape.size() == 2 ? t->shape[0] : 1;
    p.cols = t->shape.back();
    p.ne = t->shape.size() == 2 ? std::vector<uint64_t>{uint64_t(p.cols), uint64_t(p.rows)}
                                : std::vector<uint64_t>{uint64_t(p.cols)};
    if (arch == "llama" && (role == "attn_q.weight" || role == "attn_q.bias"))
      p.permute_heads = c.num_attention_heads;
    if (arch == "llama" && (role == "attn_k.weight" || role == "attn_k.bias"))
      p.permute_heads = c.num_key_value_heads;
    if (role == "attn_q.bias" || role == "attn_k.bias") {
      // A bias is one "column" per row: permute its elements like the rows.
      std::swap(p.rows, p.cols);
    }
    if (t->shape.size() == 1) {
      p.type = kF32;
    } else {
      uint32_t type = scheme.base_type;
      // llama-quant gives the output matrix (the embedding when tied) Q6_K
      // in every quantized scheme but Q8_0; the fallback below then makes
      // it Q8_0 for rows not a multiple of 256, as in community files (the
      // SmolLM2-135M Q4_1 file's tied embedding is Q8_0).
      const bool is_output = p.gguf_name == "output.weight" || (tied && p.gguf_name == "token_embd.weight");
      if (is_output && type != kF16 && type != kQ8_0) type = kQ6_K;
      if (scheme.q4_k_m && (role == "attn_v.weight" || role == "ffn_down.weight") &&
          use_more_bits(layer_index, c.num_hidden_layers))
        type = kQ6_K;
      p.type = fallback(type, p.cols);
    }
    plans.push_back(std::move(p));
  }
  if (c.rope_scaling.type == weights::RopeType::Llama3) {
    TensorPlan p;
    p.gguf_name = "rope_freqs.weight";
    p.generated = llama3_rope_freqs(c);
    p.type = kF32;
    p.cols = static_cast<int64_t>(p.generated.size());
    p.ne = {uint64_t(p.cols)};
    plans.push_back(std::move(p));
  }
  return plans;
}

}  // namespace aph::quantize
