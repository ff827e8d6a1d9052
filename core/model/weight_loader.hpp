// Turns source tensors into device-ready layers: plain float tensors are
// copied (or, on the CPU, borrowed from the memory map); quantized ones go to
// the quant plugin's linear_create. Every error names the tensor.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/model/layers.hpp"
#include "core/model/weight_source.hpp"

namespace aph::model {

struct LoaderContext {
  const WeightSource* source = nullptr;
  // The plugin that builds linears; nullptr = dense only. With all_linears_via_plugin
  // (a plugin's own container) every linear goes to it; otherwise only those
  // whose weights are not plain floats.
  const LoadedQuantPlugin* linear_plugin = nullptr;
  bool all_linears_via_plugin = false;
  std::string quant_config_json;
  int32_t device = APH_DEVICE_CPU;
  aph_dtype act_dtype = APH_DTYPE_F32;
  void* stream = nullptr;
};

class WeightLoader {
 public:
  explicit WeightLoader(LoaderContext ctx) : ctx_(std::move(ctx)) {}
  const LoaderContext& context() const { return ctx_; }

  bool has(const std::string& name) const { return ctx_.source->find(name) != nullptr; }
  // A 1-D float tensor (norm weight, bias) as F32 on the device.
  Tensor vector_f32(const std::string& name, int64_t n) const;
  // The same on the host (rope_freqs).
  std::vector<float> host_f32(const std::string& name, int64_t n) const;
  // base: HF module name without ".weight". bias: whether base.bias must exist.
  std::unique_ptr<Linear> linear(const std::string& base, int64_t out_features, int64_t in_features,
                                 bool bias) const;
  std::unique_ptr<ProjectionGroup> group(const std::vector<std::string>& bases, const std::vector<int64_t>& outs,
                                         int64_t in_features, bool bias) const;
  std::shared_ptr<Embedding> embedding(const std::string& name, int64_t vocab, int64_t hidden) const;
  // The lm_head; `tied` reuses the embedding's weights.
  std::shared_ptr<Linear> lm_head(const std::string& name, bool tied, const Embedding& embedding, int64_t vocab,
                                  int64_t hidden) const;

 private:
  bool via_plugin(const std::string& base) const;
  std::unique_ptr<PluginLinear> plugin_linear(const std::string& base, int64_t out_features, int64_t in_features,
                                              bool bias) const;
  // Plain float matrix [rows, cols] -> a device tensor (CPU: borrowed when possible).
  Tensor matrix(const SourceTensor& t, int64_t rows, int64_t cols) const;
  // Copies t (converted) into dst, a device tensor of the same element count.
  void fill(const SourceTensor& t, Tensor& dst) const;
  LoaderContext ctx_;
};

bool is_float_dtype(int32_t dtype);

}  // namespace aph::model
