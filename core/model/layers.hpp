// The weight-carrying pieces of a model: linears (dense or a quant plugin's),
// projection groups (q/k/v, gate/up fused when dense) and the token embedding.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/common/tensor.hpp"
#include "core/ops/ops.hpp"
#include "core/plugins/registry.hpp"

namespace aph::model {

// The input of a projection group that follows a residual add:
// x = RMSNorm(residual + delta) * weight, with residual + delta stored in
// residual_out (another buffer: readers of residual may still be running).
// delta == nullptr: x = RMSNorm(residual) * weight, residual_out unused.
struct NormedInput {
  const Tensor* residual = nullptr;
  const Tensor* delta = nullptr;
  const Tensor* weight = nullptr;
  float eps = 0.0f;
  Tensor* residual_out = nullptr;
};

class Linear {
 public:
  Linear(int64_t in_features, int64_t out_features) : in_features_(in_features), out_features_(out_features) {}
  virtual ~Linear() = default;
  // x [M, K] act dtype -> y [M, N] (act dtype, or F32 where the layer allows).
  virtual void forward(const ops::Exec& exec, const Tensor& x, Tensor& y) const = 0;
  virtual uint64_t device_bytes() const = 0;
  // y = (silu(gate) * up) · W from the gate/up rows (`stride` elements apart,
  // M = y's rows) when the layer can fold the activation in; false (nothing
  // done) when the caller must run silu_mul and forward itself.
  virtual bool forward_silu_mul(const ops::Exec& /*exec*/, const void* /*gate*/, const void* /*up*/,
                                int64_t /*stride*/, Tensor& /*y*/) const {
    return false;
  }
  int64_t in_features() const { return in_features_; }
  int64_t out_features() const { return out_features_; }

 private:
  int64_t in_features_, out_features_;
};

class DenseLinear : public Linear {
 public:
  DenseLinear(Tensor weight, Tensor bias);
  void forward(const ops::Exec& exec, const Tensor& x, Tensor& y) const override;
  // y = silu(gate) * up where this linear's rows are gate then up
  // (ops::linear_silu_mul; scratch holds the [M, out_features] projections
  // where the device does not fold the product into the matmul).
  void forward_silu_mul_rows(const ops::Exec& exec, const Tensor& x, Tensor& scratch, Tensor& y) const;
  uint64_t device_bytes() const override;
  const Tensor& weight() const { return weight_; }

 private:
  Tensor weight_, bias_;
};

// A linear layer owned by a quant plugin; destroyed through its vtable.
class PluginLinear : public Linear {
 public:
  PluginLinear(const LoadedQuantPlugin& plugin, aph_quant_linear* handle, std::string name, int64_t in_features,
               int64_t out_features);
  ~PluginLinear() override;
  void forward(const ops::Exec& exec, const Tensor& x, Tensor& y) const override;
  // Through the plugin's optional linear_forward_silu_mul.
  bool forward_silu_mul(const ops::Exec& exec, const void* gate, const void* up, int64_t stride,
                        Tensor& y) const override;
  uint64_t device_bytes() const override;
  // The parts' handles when every part is a linear of one plugin that offers
  // linear_forward_shared (same input width); empty if not.
  static std::vector<aph_quant_linear*> shared_handles(const std::vector<std::unique_ptr<Linear>>& parts);
  // ys[i] = x · handles[i] in one call to this linear's plugin (handles from
  // shared_handles, this linear the first).
  void forward_shared(const ops::Exec& exec, const std::vector<aph_quant_linear*>& handles, const Tensor& x,
                      std::vector<Tensor>& ys) const;
  // The same with x = RMSNorm(residual + delta) * weight, through the
  // plugin's optional linear_forward_shared_rms_norm; false (nothing done)
  // when the plugin has none or declines.
  bool forward_shared_rms_norm(const ops::Exec& exec, const std::vector<aph_quant_linear*>& handles,
                               const NormedInput& in, std::vector<Tensor>& ys) const;
  // ys of the q/k/v group (handles: q, k, v) with q rotated by RoPE into
  // q_out and k, v rotated and stored into the KV cache by the plugin
  // (aphrodite/quant.h, linear_forward_qkv_rope_kv); false (nothing done)
  // when the plugin has no such entry or declines.
  bool forward_qkv_rope_kv(const ops::Exec& exec, const std::vector<aph_quant_linear*>& handles,
                           const NormedInput& in, const aph_rope_kv_store& kv, Tensor& q_out) const;
  // y = RMSNorm(residual + delta) * weight · W for this linear alone (the LM
  // head after the last layer); false (nothing done) as above.
  bool forward_rms_norm(const ops::Exec& exec, const NormedInput& in, Tensor& y) const;
  bool has_get_rows() const { return plugin_.vtable->linear_get_rows != nullptr; }
  // out[i, :] = W[ids[i], :] dequantized (quantized embedding tables).
  void get_rows(const ops::Exec& exec, const Tensor& ids, Tensor& out) const;

 private:
  const LoadedQuantPlugin& plugin_;
  aph_quant_linear* handle_;
  std::string name_;
};

// Projections of one input. Dense weights are concatenated into one matmul;
// plugin linears run one by one into their own buffers.
class ProjectionGroup {
 public:
  struct Outputs {
    const void* ptr[4] = {};
    int64_t stride[4] = {};
  };
  ProjectionGroup(std::vector<int64_t> sizes, std::unique_ptr<DenseLinear> fused,
                  std::vector<std::unique_ptr<Linear>> parts);
  void reserve(int64_t max_tokens, aph_dtype dtype, int32_t device);
  Outputs forward(const ops::Exec& exec, const Tensor& x) const;
  // forward(RMSNorm(residual + delta) * weight): the quant plugin folds the
  // norm into its x when it can, else add_rms_norm (or rms_norm) writes
  // `normed` first. Either way in.residual_out holds residual + delta after.
  Outputs forward_rms_norm(const ops::Exec& exec, const NormedInput& in, Tensor& normed) const;
  // act = silu(gate) * up of a dense gate/up group from the same input, the
  // product folded into the matmul where the device can
  // (DenseLinear::forward_silu_mul_rows); false, nothing done, for a group of
  // plugin linears or other than two equal parts.
  bool forward_rms_norm_silu_mul(const ops::Exec& exec, const NormedInput& in, Tensor& normed, Tensor& act) const;
  // A q/k/v group's forward_rms_norm with q rotated into q_out and k, v
  // rotated and stored into the KV cache by its quant plugin
  // (PluginLinear::forward_qkv_rope_kv); false, nothing done, when it cannot.
  bool forward_rope_kv(const ops::Exec& exec, const NormedInput& in, const aph_rope_kv_store& kv,
                       Tensor& q_out) const;
  uint64_t device_bytes() const;

 private:
  std::vector<int64_t> sizes_;
  std::unique_ptr<DenseLinear> fused_;
  std::vector<std::unique_ptr<Linear>> parts_;
  // normed = RMSNorm(residual (+ delta)) * weight, the sum into residual_out.
  static void normalize(const ops::Exec& exec, const NormedInput& in, Tensor& normed);
  // The first m rows of each part's buffer, recorded in out too.
  std::vector<Tensor> part_outputs(int64_t m, Outputs& out) const;
  std::vector<aph_quant_linear*> shared_;  // parts_ as one plugin call (PluginLinear::shared_handles)
  Tensor fused_out_;
  std::vector<Tensor> part_out_;
};

class Embedding {
 public:
  explicit Embedding(Tensor table) : table_(std::move(table)) {}
  explicit Embedding(std::shared_ptr<PluginLinear> rows) : rows_(std::move(rows)) {}
  void lookup(const ops::Exec& exec, const Tensor& ids, Tensor& out) const;
  const Tensor& table() const { return table_; }
  const std::shared_ptr<PluginLinear>& plugin_rows() const { return rows_; }
  uint64_t device_bytes() const;

 private:
  Tensor table_;
  std::shared_ptr<PluginLinear> rows_;
};

}  // namespace aph::model
