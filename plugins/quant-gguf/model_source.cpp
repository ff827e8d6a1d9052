#include "plugins/quant-gguf/model_source.hpp"

#include <map>
#include <regex>

#include "core/common/error.hpp"
#include "plugins/quant-gguf/container/ggml_types.hpp"

namespace aph::gguf {

namespace json = boost::json;

namespace {

// Per-layer renames; the rest of a GGUF name after "blk.N." is looked up here.
const std::map<std::string, std::string>& layer_names() {
  static const std::map<std::string, std::string> m = {
      {"attn_norm", "input_layernorm"},
      {"attn_q", "self_attn.q_proj"},
      {"attn_k", "self_attn.k_proj"},
      {"attn_v", "self_attn.v_proj"},
      {"attn_output", "self_attn.o_proj"},
      {"attn_q_norm", "self_attn.q_norm"},
      {"attn_k_norm", "self_attn.k_norm"},
      {"ffn_norm", "post_attention_layernorm"},
      {"ffn_gate", "mlp.gate_proj"},
      {"ffn_up", "mlp.up_proj"},
      {"ffn_down", "mlp.down_proj"},
      {"ffn_gate_inp", "block_sparse_moe.gate"},
  };
  return m;
}

// HF class names for the architectures whose GGUF layout we know.
const std::map<std::string, std::string>& arch_classes() {
  static const std::map<std::string, std::string> m = {
      {"llama", "LlamaForCausalLM"},
      {"qwen2", "Qwen2ForCausalLM"},
      {"qwen3", "Qwen3ForCausalLM"},
      {"mistral", "MistralForCausalLM"},
  };
  return m;
}

class Meta {
 public:
  Meta(const GgufFile& f) : f_(f), md_(f.metadata()) {}

  const json::value* get(const std::string& key) const {
    auto it = md_.find(key);
    return it == md_.end() ? nullptr : &it->value();
  }
  [[noreturn]] void wrong(const std::string& key, const char* what) const {
    throw invalid_argument("GGUF " + f_.path() + ": key '" + key + "' " + what);
  }
  // Integers may be stored in any width, or as a per-layer array (first entry
  // is taken when all entries agree; otherwise the array is returned as is).
  std::optional<json::value> integer(const std::string& key) const {
    const json::value* v = get(key);
    if (!v) return std::nullopt;
    if (v->is_uint64() || v->is_int64()) return *v;
    if (v->is_array()) {
      const auto& a = v->get_array();
      if (a.empty()) wrong(key, "is an empty array");
      for (const auto& e : a)
        if (!(e.is_uint64() || e.is_int64())) wrong(key, "is not an integer array");
      for (const auto& e : a)
        if (e != a[0]) return *v;
      return a[0];
    }
    wrong(key, "is not an integer");
  }
  json::value required_integer(const std::string& key) const {
    auto v = integer(key);
    if (!v) throw invalid_argument("GGUF " + f_.path() + ": required key '" + key + "' is missing");
    return *v;
  }
  std::optional<double> number(const std::string& key) const {
    const json::value* v = get(key);
    if (!v) return std::nullopt;
    if (v->is_double()) return v->get_double();
    if (v->is_uint64()) return static_cast<double>(v->get_uint64());
    if (v->is_int64()) return static_cast<double>(v->get_int64());
    wrong(key, "is not a number");
  }
  std::optional<std::string> string(const std::string& key) const {
    const json::value* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_string()) wrong(key, "is not a string");
    return std::string(v->get_string());
  }

 private:
  const GgufFile& f_;
  const json::object& md_;
};

int64_t as_i64(const json::value& v) {
  return v.is_uint64() ? static_cast<int64_t>(v.get_uint64()) : v.get_int64();
}

std::optional<int64_t> opt_i64(const std::optional<json::value>& v) {
  if (!v || v->is_array()) return std::nullopt;
  return as_i64(*v);
}

json::object rope_scaling(const Meta& m, const std::string& arch, int64_t context) {
  const std::string p = arch + ".rope.scaling.";
  auto type = m.string(p + "type");
  auto factor = m.number(p + "factor");
  if (!type && !factor) return {};
  std::string t = type.value_or("linear");
  if (t == "none" || !factor || *factor == 0.0 || *factor == 1.0) return {};
  json::object r;
  r["rope_type"] = t;
  r["type"] = t;
  r["factor"] = *factor;
  if (t == "yarn") {
    r["original_max_position_embeddings"] = as_i64(
        m.integer(p + "original_context_length").value_or(json::value(context)));
    if (auto v = m.number(p + "yarn_beta_fast")) r["beta_fast"] = *v;
    if (auto v = m.number(p + "yarn_beta_slow")) r["beta_slow"] = *v;
    if (auto v = m.number(p + "attn_factor")) r["attention_factor"] = *v;
  } else if (t != "linear") {
    if (auto v = m.integer(p + "original_context_length")) r["original_max_position_embeddings"] = *v;
  }
  return r;
}

}  // namespace

std::string hf_tensor_name(const std::string& g) {
  static const std::map<std::string, std::string> top = {
      {"token_embd.weight", "model.embed_tokens.weight"},
      {"output_norm.weight", "model.norm.weight"},
      {"output.weight", "lm_head.weight"},
      {"rope_freqs.weight", "rope_freqs.weight"},
  };
  if (auto it = top.find(g); it != top.end()) return it->second;
  static const std::regex layer(R"(blk\.(\d+)\.([a-z_]+)\.(weight|bias))");
  std::smatch sm;
  if (std::regex_match(g, sm, layer)) {
    auto it = layer_names().find(sm[2].str());
    if (it != layer_names().end())
      return "model.layers." + sm[1].str() + "." + it->second + "." + sm[3].str();
  }
  return g;
}

json::object hf_config(const GgufFile& file) {
  Meta m(file);
  auto arch = m.string("general.architecture");
  if (!arch) throw invalid_argument("GGUF " + file.path() + ": required key 'general.architecture' is missing");
  const std::string& a = *arch;
  json::object c;
  auto cls = arch_classes().find(a);
  c["architectures"] = json::array{json::string(cls != arch_classes().end() ? cls->second : a)};
  c["model_type"] = a;
  c["hidden_act"] = "silu";
  json::value hidden = m.required_integer(a + ".embedding_length");
  json::value layers = m.required_integer(a + ".block_count");
  json::value heads = m.required_integer(a + ".attention.head_count");
  c["hidden_size"] = hidden;
  c["num_hidden_layers"] = layers;
  c["num_attention_heads"] = heads;
  c["num_key_value_heads"] = m.integer(a + ".attention.head_count_kv").value_or(heads);
  if (auto ff = m.integer(a + ".feed_forward_length")) c["intermediate_size"] = *ff;
  if (!hidden.is_array() && !heads.is_array()) {
    int64_t h = as_i64(heads);
    if (h <= 0) throw invalid_argument("GGUF " + file.path() + ": key '" + a + ".attention.head_count' is 0");
    int64_t head_dim = opt_i64(m.integer(a + ".attention.key_length")).value_or(as_i64(hidden) / h);
    c["head_dim"] = head_dim;
    if (auto rot = m.integer(a + ".rope.dimension_count"); rot && as_i64(*rot) != head_dim)
      c["partial_rotary_factor"] = static_cast<double>(as_i64(*rot)) / static_cast<double>(head_dim);
  }
  auto eps = m.number(a + ".attention.layer_norm_rms_epsilon");
  if (!eps) throw invalid_argument("GGUF " + file.path() + ": required key '" + a + ".attention.layer_norm_rms_epsilon' is missing");
  c["rms_norm_eps"] = *eps;
  c["rope_theta"] = m.number(a + ".rope.freq_base").value_or(10000.0);
  int64_t context = opt_i64(m.integer(a + ".context_length")).value_or(0);
  if (context > 0) c["max_position_embeddings"] = context;
  json::object scaling = rope_scaling(m, a, context);
  c["rope_scaling"] = scaling.empty() ? json::value(nullptr) : json::value(scaling);
  if (const json::value* toks = m.get("tokenizer.ggml.tokens"); toks && toks->is_array())
    c["vocab_size"] = toks->get_array().size();
  else if (auto vs = m.integer(a + ".vocab_size"))
    c["vocab_size"] = *vs;
  else if (const TensorInfo* e = file.find("token_embd.weight"); e && e->ne.size() == 2)
    c["vocab_size"] = e->ne[1];
  c["tie_word_embeddings"] = file.find("output.weight") == nullptr;
  c["attention_bias"] = file.find("blk.0.attn_q.bias") != nullptr;
  if (auto v = m.integer("tokenizer.ggml.bos_token_id")) c["bos_token_id"] = *v;
  if (auto v = m.integer("tokenizer.ggml.eos_token_id")) c["eos_token_id"] = *v;
  if (auto v = m.integer(a + ".expert_count")) c["num_local_experts"] = *v;
  if (auto v = m.integer(a + ".expert_used_count")) c["num_experts_per_tok"] = *v;
  return c;
}

ModelSource::ModelSource(const std::string& path) : file_(GgufFile::open(path)) {
  const GgufFile& f = *file_;
  json::object out;
  // A vocab-only file (tokenizer tests, `aphrodited tokenize`) has no model
  // hyper-parameters; it still serves its tokenizer, with an empty config.
  if (f.tensors().empty() && f.metadata().contains("tokenizer.ggml.tokens")) {
    try {
      out["config"] = hf_config(f);
    } catch (const Error&) {
      out["config"] = json::object{};
    }
    out["vocab_only"] = true;
  } else {
    out["config"] = hf_config(f);
  }
  const json::value* arch_value = f.metadata().if_contains("general.architecture");
  const std::string arch = arch_value && arch_value->is_string() ? std::string(arch_value->get_string()) : "";
  // llama.cpp's converter permutes Q/K rows of llama-arch checkpoints for
  // adjacent-pair RoPE (FORMATS.md §1.4); the other architectures keep HF order.
  out["rope_interleaved"] = arch == "llama";
  json::object tokenizer, metadata, templates;
  json::value chat_template = nullptr;
  for (const auto& kv : f.metadata()) {
    std::string_view key = kv.key();
    if (key == "tokenizer.chat_template") {
      chat_template = kv.value();
    } else if (key.starts_with("tokenizer.chat_template.")) {
      templates[key.substr(std::string_view("tokenizer.chat_template.").size())] = kv.value();
    } else if (key.starts_with("tokenizer.")) {
      tokenizer[key] = kv.value();
    } else {
      metadata[key] = kv.value();
    }
  }
  out["tokenizer"] = std::move(tokenizer);
  out["chat_template"] = std::move(chat_template);
  if (!templates.empty()) out["chat_templates"] = std::move(templates);
  out["metadata"] = std::move(metadata);
  metadata_json_ = json::serialize(out);

  for (const auto& t : f.tensors()) {
    Entry e{hf_tensor_name(t.name), &t, -1, std::string(type_traits(t.type)->name)};
    switch (t.type) {
      case kF32: e.dtype = APH_DTYPE_F32; break;
      case kF16: e.dtype = APH_DTYPE_F16; break;
      case kBF16: e.dtype = APH_DTYPE_BF16; break;
      case kI8: e.dtype = APH_DTYPE_I8; break;
      case kI16: e.dtype = APH_DTYPE_I16; break;
      case kI32: e.dtype = APH_DTYPE_I32; break;
      case kI64: e.dtype = APH_DTYPE_I64; break;
      case kF64: e.dtype = APH_DTYPE_F64; break;
      default: break;
    }
    if (t.ne.size() > APH_MAX_RANK)
      throw invalid_argument("GGUF " + f.path() + ": tensor '" + t.name + "' has too many dims");
    tensors_.push_back(std::move(e));
  }
}

aph_weight_info ModelSource::tensor(uint64_t index) const {
  if (index >= tensors_.size())
    throw invalid_argument("GGUF tensor index " + std::to_string(index) + " out of range");
  const Entry& e = tensors_[index];
  aph_weight_info w{};
  w.size = sizeof(w);
  w.name = e.hf_name.c_str();
  w.dtype = e.dtype;
  w.format_type = e.info->type;
  w.type_name = e.type_name.c_str();
  w.rank = static_cast<int32_t>(e.info->ne.size());
  // ggml's ne[0] is the innermost dimension: the logical shape is reversed.
  for (int32_t d = 0; d < w.rank; ++d) w.shape[d] = static_cast<int64_t>(e.info->ne[w.rank - 1 - d]);
  w.data = e.info->data;
  w.nbytes = e.info->nbytes;
  return w;
}

}  // namespace aph::gguf
