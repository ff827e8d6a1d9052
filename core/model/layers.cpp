#include "core/model/layers.hpp"

#include <algorithm>
#include <cstddef>
#include <string>

#include "core/common/error.hpp"

namespace aph::model {

// Whether the vtable has the optional trailing member and sets it: plugins
// built before a member was added have a smaller vtable.
#define APH_OFFERS(vt, member) \
  ((vt)->size >= offsetof(aph_quant_vtable, member) + sizeof((vt)->member) && (vt)->member != nullptr)

DenseLinear::DenseLinear(Tensor weight, Tensor bias)
    : Linear(weight.dim(1), weight.dim(0)), weight_(std::move(weight)), bias_(std::move(bias)) {}

void DenseLinear::forward(const ops::Exec& exec, const Tensor& x, Tensor& y) const {
  ops::linear(exec, x, weight_, bias_.defined() ? &bias_ : nullptr, y);
}

void DenseLinear::forward_silu_mul_rows(const ops::Exec& exec, const Tensor& x, Tensor& scratch, Tensor& y) const {
  ops::linear_silu_mul(exec, x, weight_, bias_.defined() ? &bias_ : nullptr, scratch, y);
}

uint64_t DenseLinear::device_bytes() const {
  if (weight_.on_cpu()) return 0;
  return weight_.nbytes() + (bias_.defined() ? bias_.nbytes() : 0);
}

PluginLinear::PluginLinear(const LoadedQuantPlugin& plugin, aph_quant_linear* handle, std::string name,
                           int64_t in_features, int64_t out_features)
    : Linear(in_features, out_features), plugin_(plugin), handle_(handle), name_(std::move(name)) {}

PluginLinear::~PluginLinear() { plugin_.vtable->linear_destroy(handle_); }

void PluginLinear::forward(const ops::Exec& exec, const Tensor& x, Tensor& y) const {
  aph_tensor xv = x.reshape({x.numel() / in_features(), in_features()}).view();
  aph_tensor yv = y.reshape({y.numel() / out_features(), out_features()}).view();
  aph_error err{};
  err.size = sizeof(err);
  check(plugin_.vtable->linear_forward(handle_, &xv, &yv, exec.stream, &err), err,
        "plugin " + plugin_.name + " linear " + name_);
}

bool PluginLinear::forward_silu_mul(const ops::Exec& exec, const void* gate, const void* up, int64_t stride,
                                    Tensor& y) const {
  const aph_quant_vtable* vt = plugin_.vtable;
  if (!APH_OFFERS(vt, linear_forward_silu_mul)) return false;
  const int64_t m = y.numel() / out_features();
  auto rows = [&](const void* p) {
    aph_tensor t{};
    t.size = sizeof(t);
    t.dtype = y.dtype();
    t.device = y.device();
    t.rank = 2;
    t.shape[0] = m;
    t.shape[1] = in_features();
    t.strides[0] = stride;
    t.strides[1] = 1;
    t.data = const_cast<void*>(p);
    return t;
  };
  const aph_tensor gv = rows(gate), uv = rows(up);
  aph_tensor yv = y.reshape({m, out_features()}).view();
  aph_error err{};
  err.size = sizeof(err);
  const aph_status st = vt->linear_forward_silu_mul(handle_, &gv, &uv, &yv, exec.stream, &err);
  if (st == APH_ERR_UNSUPPORTED) return false;
  check(st, err, "plugin " + plugin_.name + " linear " + name_ + " (silu * up)");
  return true;
}

std::vector<aph_quant_linear*> PluginLinear::shared_handles(const std::vector<std::unique_ptr<Linear>>& parts) {
  if (parts.empty()) return {};
  const auto* first = dynamic_cast<const PluginLinear*>(parts[0].get());
  if (!first) return {};
  const aph_quant_vtable* vt = first->plugin_.vtable;
  if (!APH_OFFERS(vt, linear_forward_shared)) return {};
  std::vector<aph_quant_linear*> handles;
  for (const auto& p : parts) {
    const auto* pl = dynamic_cast<const PluginLinear*>(p.get());
    if (!pl || pl->plugin_.vtable != vt || pl->in_features() != first->in_features()) return {};
    handles.push_back(pl->handle_);
  }
  return handles;
}

void PluginLinear::forward_shared(const ops::Exec& exec, const std::vector<aph_quant_linear*>& handles,
                                  const Tensor& x, std::vector<Tensor>& ys) const {
  aph_tensor xv = x.reshape({x.numel() / in_features(), in_features()}).view();
  std::vector<aph_tensor> yv;
  for (Tensor& y : ys) yv.push_back(y.reshape({y.dim(0), y.numel() / std::max<int64_t>(y.dim(0), 1)}).view());
  aph_error err{};
  err.size = sizeof(err);
  check(plugin_.vtable->linear_forward_shared(handles.data(), static_cast<uint32_t>(handles.size()), &xv, yv.data(),
                                              exec.stream, &err),
        err, "plugin " + plugin_.name + " linears " + name_ + " and the " + std::to_string(handles.size() - 1) +
                 " after it");
}

namespace {
// A NormedInput as the ABI's aph_rms_norm_input, with the tensor views it
// points to.
struct NormInputViews {
  aph_tensor residual{}, weight{}, delta{}, residual_out{};
  aph_rms_norm_input in{};
  explicit NormInputViews(const NormedInput& n) : residual(n.residual->view()), weight(n.weight->view()) {
    if (n.delta) {
      delta = n.delta->view();
      residual_out = n.residual_out->view();
    }
    in.size = sizeof(in);
    in.residual = &residual;
    in.delta = n.delta ? &delta : nullptr;
    in.weight = &weight;
    in.eps = n.eps;
    in.residual_out = n.delta ? &residual_out : nullptr;
  }
  NormInputViews(const NormInputViews&) = delete;
  NormInputViews& operator=(const NormInputViews&) = delete;
};
}  // namespace

bool PluginLinear::forward_shared_rms_norm(const ops::Exec& exec, const std::vector<aph_quant_linear*>& handles,
                                           const NormedInput& in, std::vector<Tensor>& ys) const {
  const aph_quant_vtable* vt = plugin_.vtable;
  if (!APH_OFFERS(vt, linear_forward_shared_rms_norm)) return false;
  const int64_t m = in.residual->dim(0);
  const NormInputViews ni(in);
  std::vector<aph_tensor> yv;
  for (Tensor& y : ys) yv.push_back(y.reshape({m, y.numel() / std::max<int64_t>(m, 1)}).view());
  aph_error err{};
  err.size = sizeof(err);
  const aph_status st = vt->linear_forward_shared_rms_norm(handles.data(), static_cast<uint32_t>(handles.size()),
                                                           &ni.in, yv.data(), exec.stream, &err);
  if (st == APH_ERR_UNSUPPORTED) return false;
  check(st, err, "plugin " + plugin_.name + " linears " + name_ + " and the " + std::to_string(handles.size() - 1) +
                     " after it (RMSNorm input)");
  return true;
}

bool PluginLinear::forward_qkv_rope_kv(const ops::Exec& exec, const std::vector<aph_quant_linear*>& handles,
                                       const NormedInput& in, const aph_rope_kv_store& kv, Tensor& q_out) const {
  const aph_quant_vtable* vt = plugin_.vtable;
  if (!APH_OFFERS(vt, linear_forward_qkv_rope_kv) || handles.size() != 3) return false;
  const int64_t m = in.residual->dim(0);
  const NormInputViews ni(in);
  aph_tensor qv = q_out.reshape({m, q_out.numel() / std::max<int64_t>(m, 1)}).view();
  aph_error err{};
  err.size = sizeof(err);
  const aph_status st = vt->linear_forward_qkv_rope_kv(handles.data(), &ni.in, &qv, &kv, exec.stream, &err);
  if (st == APH_ERR_UNSUPPORTED) return false;
  check(st, err, "plugin " + plugin_.name + " linears " + name_ + ", k and v (RoPE and the KV store)");
  return true;
}

bool PluginLinear::forward_rms_norm(const ops::Exec& exec, const NormedInput& in, Tensor& y) const {
  std::vector<Tensor> ys{y};  // a view: the plugin writes y's memory
  return forward_shared_rms_norm(exec, {handle_}, in, ys);
}

uint64_t PluginLinear::device_bytes() const {
  return plugin_.vtable->linear_device_bytes ? plugin_.vtable->linear_device_bytes(handle_) : 0;
}

void PluginLinear::get_rows(const ops::Exec& exec, const Tensor& ids, Tensor& out) const {
  if (!has_get_rows()) {
    throw Error(APH_ERR_UNSUPPORTED, "plugin " + plugin_.name + " cannot read rows of " + name_ +
                                         " (no linear_get_rows), needed for a quantized embedding");
  }
  aph_tensor iv = ids.view();
  aph_tensor ov = out.view();
  aph_error err{};
  err.size = sizeof(err);
  check(plugin_.vtable->linear_get_rows(handle_, &iv, &ov, exec.stream, &err), err,
        "plugin " + plugin_.name + " embedding rows of " + name_);
}

ProjectionGroup::ProjectionGroup(std::vector<int64_t> sizes, std::unique_ptr<DenseLinear> fused,
                                 std::vector<std::unique_ptr<Linear>> parts)
    : sizes_(std::move(sizes)), fused_(std::move(fused)), parts_(std::move(parts)) {
  if (sizes_.size() > 4) throw Error(APH_ERR_INTERNAL, "ProjectionGroup holds at most 4 projections");
  shared_ = PluginLinear::shared_handles(parts_);
}

void ProjectionGroup::reserve(int64_t max_tokens, aph_dtype dtype, int32_t device) {
  if (fused_) {
    fused_out_ = Tensor::empty({max_tokens, fused_->out_features()}, dtype, device);
  } else {
    part_out_.clear();
    for (const auto& p : parts_) part_out_.push_back(Tensor::empty({max_tokens, p->out_features()}, dtype, device));
  }
}

std::vector<Tensor> ProjectionGroup::part_outputs(int64_t m, Outputs& out) const {
  std::vector<Tensor> ys;
  for (size_t i = 0; i < parts_.size(); ++i) {
    ys.push_back(part_out_[i].rows(0, m));
    out.ptr[i] = ys.back().data();
    out.stride[i] = parts_[i]->out_features();
  }
  return ys;
}

ProjectionGroup::Outputs ProjectionGroup::forward(const ops::Exec& exec, const Tensor& x) const {
  Outputs out;
  const int64_t m = x.dim(0);
  if (fused_) {
    Tensor y = fused_out_.rows(0, m);
    fused_->forward(exec, x, y);
    int64_t offset = 0;
    const size_t es = dtype_size(y.dtype());
    for (size_t i = 0; i < sizes_.size(); ++i) {
      out.ptr[i] = static_cast<const char*>(y.data()) + offset * es;
      out.stride[i] = fused_->out_features();
      offset += sizes_[i];
    }
    return out;
  }
  std::vector<Tensor> ys = part_outputs(m, out);
  if (!shared_.empty()) {
    static_cast<const PluginLinear&>(*parts_[0]).forward_shared(exec, shared_, x, ys);
    return out;
  }
  for (size_t i = 0; i < parts_.size(); ++i) parts_[i]->forward(exec, x, ys[i]);
  return out;
}

void ProjectionGroup::normalize(const ops::Exec& exec, const NormedInput& in, Tensor& normed) {
  if (in.delta) {
    ops::add_rms_norm(exec, *in.residual, *in.delta, *in.weight, in.eps, normed, *in.residual_out);
  } else {
    ops::rms_norm(exec, *in.residual, *in.weight, in.eps, normed);
  }
}

ProjectionGroup::Outputs ProjectionGroup::forward_rms_norm(const ops::Exec& exec, const NormedInput& in,
                                                           Tensor& normed) const {
  const int64_t m = in.residual->dim(0);
  if (!shared_.empty() && m > 0) {
    Outputs out;
    std::vector<Tensor> ys = part_outputs(m, out);
    if (static_cast<const PluginLinear&>(*parts_[0]).forward_shared_rms_norm(exec, shared_, in, ys)) return out;
  }
  normalize(exec, in, normed);
  return forward(exec, normed);
}

bool ProjectionGroup::forward_rms_norm_silu_mul(const ops::Exec& exec, const NormedInput& in, Tensor& normed,
                                                Tensor& act) const {
  if (!fused_ || sizes_.size() != 2 || sizes_[0] != sizes_[1]) return false;
  normalize(exec, in, normed);
  const int64_t m = normed.dim(0);
  Tensor scratch = fused_out_.rows(0, m);
  fused_->forward_silu_mul_rows(exec, normed, scratch, act);
  return true;
}

bool ProjectionGroup::forward_rope_kv(const ops::Exec& exec, const NormedInput& in, const aph_rope_kv_store& kv,
                                      Tensor& q_out) const {
  if (shared_.size() != 3 || in.residual->dim(0) == 0) return false;
  return static_cast<const PluginLinear&>(*parts_[0]).forward_qkv_rope_kv(exec, shared_, in, kv, q_out);
}

uint64_t ProjectionGroup::device_bytes() const {
  uint64_t n = fused_ ? fused_->device_bytes() : 0;
  for (const auto& p : parts_) n += p->device_bytes();
  return n;
}

void Embedding::lookup(const ops::Exec& exec, const Tensor& ids, Tensor& out) const {
  if (rows_) {
    rows_->get_rows(exec, ids, out);
  } else {
    ops::embedding(exec, table_, ids, out);
  }
}

uint64_t Embedding::device_bytes() const {
  if (rows_) return rows_->device_bytes();
  return table_.on_cpu() ? 0 : table_.nbytes();
}

}  // namespace aph::model
