#include "core/attention/kv_cache_config.hpp"

#include <cctype>
#include <cmath>
#include <string>

#include "core/common/error.hpp"

namespace aph::attention {
namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// The N of "layers.N." in a tensor name, if any.
std::optional<int32_t> layer_index(std::string_view name) {
  constexpr std::string_view kKey = "layers.";
  size_t at = name.find(kKey);
  while (at != std::string_view::npos) {
    if (at == 0 || name[at - 1] == '.') {
      size_t i = at + kKey.size();
      int64_t n = 0;
      size_t digits = 0;
      while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])) && digits < 9) {
        n = n * 10 + (name[i] - '0');
        ++i;
        ++digits;
      }
      if (digits > 0 && i < name.size() && name[i] == '.') return static_cast<int32_t>(n);
    }
    at = name.find(kKey, at + 1);
  }
  return std::nullopt;
}

}  // namespace

aph_dtype parse_kv_cache_dtype(std::string_view name, aph_dtype model_dtype) {
  std::string n(name);
  for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (n == "auto") return model_dtype;
  if (n == "fp16" || n == "float16" || n == "half") return APH_DTYPE_F16;
  if (n == "bf16" || n == "bfloat16") return APH_DTYPE_BF16;
  if (n == "fp32" || n == "float32" || n == "float") return APH_DTYPE_F32;
  if (n == "fp8" || n == "fp8_e4m3") return APH_DTYPE_F8_E4M3;
  if (n == "fp8_e5m2") return APH_DTYPE_F8_E5M2;
  throw invalid_argument("kv_cache_dtype: unknown value '" + std::string(name) +
                         "' (auto, fp16, bf16, fp32, fp8, fp8_e4m3, fp8_e5m2)");
}

std::optional<KvScaleName> match_kv_scale_name(std::string_view name) {
  struct Pattern {
    std::string_view suffix;
    KvScaleKind kind;
  };
  // Longest spellings first, so ".k_proj.k_scale" is not read as ".k_scale"
  // under an unexpected parent.
  static constexpr Pattern kPatterns[] = {
      {"self_attn.k_proj.k_scale", KvScaleKind::kK},
      {"self_attn.v_proj.v_scale", KvScaleKind::kV},
      {"self_attn.qkv_proj.k_scale", KvScaleKind::kK},
      {"self_attn.qkv_proj.v_scale", KvScaleKind::kV},
      {"self_attn.k_proj.output_scale", KvScaleKind::kK},
      {"self_attn.v_proj.output_scale", KvScaleKind::kV},
      {"self_attn.attn.k_scale", KvScaleKind::kK},
      {"self_attn.attn.v_scale", KvScaleKind::kV},
      {"self_attn.k_scale", KvScaleKind::kK},
      {"self_attn.v_scale", KvScaleKind::kV},
      {"self_attn.kv_scale", KvScaleKind::kBoth},
  };
  for (const Pattern& p : kPatterns) {
    if (!ends_with(name, p.suffix)) continue;
    size_t head = name.size() - p.suffix.size();
    if (head > 0 && name[head - 1] != '.') continue;
    std::optional<int32_t> layer = layer_index(name.substr(0, head));
    if (!layer) return std::nullopt;
    return KvScaleName{*layer, p.kind};
  }
  return std::nullopt;
}

KvScales::KvScales(int32_t num_layers) {
  if (num_layers < 0) throw invalid_argument("KvScales: num_layers must not be negative");
  k_.resize(num_layers);
  v_.resize(num_layers);
}

bool KvScales::offer(std::string_view tensor_name, const float* values, int64_t numel) {
  std::optional<KvScaleName> m = match_kv_scale_name(tensor_name);
  if (!m) return false;
  const std::string name(tensor_name);
  if (numel != 1 || values == nullptr) {
    throw invalid_argument("KV cache scale " + name + " must be a scalar, has " + std::to_string(numel) +
                           " elements");
  }
  const float s = values[0];
  if (!std::isfinite(s) || s <= 0.0f) {
    throw invalid_argument("KV cache scale " + name + " must be positive and finite, is " + std::to_string(s));
  }
  if (m->layer >= static_cast<int32_t>(k_.size())) {
    throw invalid_argument("KV cache scale " + name + " names layer " + std::to_string(m->layer) +
                           " of a model with " + std::to_string(k_.size()) + " layers");
  }
  if (m->kind != KvScaleKind::kV) k_[m->layer] = s;
  if (m->kind != KvScaleKind::kK) v_[m->layer] = s;
  return true;
}

float KvScales::k_scale(int32_t layer) const {
  const auto& k = k_.at(layer);
  const auto& v = v_.at(layer);
  return k ? *k : v ? *v : 1.0f;
}

float KvScales::v_scale(int32_t layer) const {
  const auto& k = k_.at(layer);
  const auto& v = v_.at(layer);
  return v ? *v : k ? *k : 1.0f;
}

std::vector<int32_t> KvScales::defaulted_layers() const {
  std::vector<int32_t> out;
  for (size_t i = 0; i < k_.size(); ++i) {
    if (!k_[i] && !v_[i]) out.push_back(static_cast<int32_t>(i));
  }
  return out;
}

}  // namespace aph::attention
