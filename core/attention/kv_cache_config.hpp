// The fp8 side of KV-cache configuration: the --kv-cache-dtype names and the
// per-layer k/v scales a checkpoint may carry (FORMATS.md §6.4).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "aphrodite/plugin.h"

namespace aph::attention {

// "auto" (the model's activation dtype), "fp16"/"float16"/"half",
// "bf16"/"bfloat16", "fp32"/"float32" (CPU), "fp8"/"fp8_e4m3", "fp8_e5m2".
// Throws aph::Error (invalid argument) naming kv_cache_dtype otherwise.
aph_dtype parse_kv_cache_dtype(std::string_view name, aph_dtype model_dtype);

enum class KvScaleKind { kK, kV, kBoth };

struct KvScaleName {
  int32_t layer;
  KvScaleKind kind;
};

// Recognizes every checkpoint spelling of a KV-cache scale:
// ...layers.N.self_attn.{k,v}_scale, ...self_attn.attn.{k,v}_scale,
// ModelOpt ...{k,v}_proj.{k,v}_scale, ...qkv_proj.{k,v}_scale,
// compressed-tensors ...{k,v}_proj.output_scale, and the deprecated
// ...self_attn.kv_scale (both). Anything else (weight scales, q_scale,
// o_proj.output_scale) is not a KV scale.
std::optional<KvScaleName> match_kv_scale_name(std::string_view tensor_name);

// Per-layer scales gathered while a checkpoint loads. A layer with neither
// scale uses 1.0 for both (the loader should warn: see defaulted_layers); a
// layer with only one uses it for both.
class KvScales {
 public:
  explicit KvScales(int32_t num_layers);

  // Records the tensor when it is a KV scale and returns true; false when the
  // name is something else. Throws aph::Error naming the tensor when the
  // scale is not a positive finite scalar or its layer does not exist.
  bool offer(std::string_view tensor_name, const float* values, int64_t numel);

  float k_scale(int32_t layer) const;
  float v_scale(int32_t layer) const;
  // Layers that had no scale at all (both default to 1.0).
  std::vector<int32_t> defaulted_layers() const;

 private:
  std::vector<std::optional<float>> k_, v_;
};

}  // namespace aph::attention
