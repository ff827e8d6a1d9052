#include "core/model/weight_loader.hpp"

#include "core/common/error.hpp"
#include "core/common/half.hpp"

#include <cstring>

namespace aph::model {

bool is_float_dtype(int32_t d) { return d == APH_DTYPE_F32 || d == APH_DTYPE_F16 || d == APH_DTYPE_BF16; }

namespace {

std::string shape_str(const std::vector<int64_t>& s) {
  std::string o = "[";
  for (size_t i = 0; i < s.size(); ++i) o += (i ? "," : "") + std::to_string(s[i]);
  return o + "]";
}

void expect_shape(const SourceTensor& t, const std::vector<int64_t>& shape) {
  if (t.shape != shape) {
    throw invalid_argument("tensor " + t.describe() + " should have shape " + shape_str(shape));
  }
}

// Safetensors data need not be aligned (the header length is arbitrary), so
// elements are read with memcpy rather than through a typed pointer.
template <typename T>
T unaligned_load(const void* base, int64_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(base) + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}

float host_load(const SourceTensor& t, int64_t i) {
  switch (t.dtype) {
    case APH_DTYPE_F32: return unaligned_load<float>(t.data, i);
    case APH_DTYPE_F16: return f16_to_f32(unaligned_load<uint16_t>(t.data, i));
    case APH_DTYPE_BF16: return bf16_to_f32(unaligned_load<uint16_t>(t.data, i));
    default: throw invalid_argument("tensor " + t.describe() + " must be F32, F16 or BF16");
  }
}

}  // namespace

std::vector<float> WeightLoader::host_f32(const std::string& name, int64_t n) const {
  const SourceTensor& t = ctx_.source->get(name);
  if (!is_float_dtype(t.dtype)) throw invalid_argument("tensor " + t.describe() + " must be F32, F16 or BF16");
  expect_shape(t, {n});
  std::vector<float> out(n);
  for (int64_t i = 0; i < n; ++i) out[i] = host_load(t, i);
  return out;
}

Tensor WeightLoader::vector_f32(const std::string& name, int64_t n) const {
  std::vector<float> host = host_f32(name, n);
  Tensor t = Tensor::empty({n}, APH_DTYPE_F32, ctx_.device);
  copy_bytes(t.data(), ctx_.device, host.data(), APH_DEVICE_CPU, n * sizeof(float));
  return t;
}

void WeightLoader::fill(const SourceTensor& t, Tensor& dst) const {
  if (dst.on_cpu()) {
    if (dst.dtype() == t.dtype) {
      copy_bytes(dst.data(), APH_DEVICE_CPU, t.data, APH_DEVICE_CPU, t.nbytes);
      return;
    }
    float* out = dst.as<float>();
    for (int64_t i = 0; i < t.numel(); ++i) out[i] = host_load(t, i);
    return;
  }
  if (dst.dtype() == t.dtype) {
    copy_bytes(dst.data(), dst.device(), t.data, APH_DEVICE_CPU, t.nbytes);
    return;
  }
  // Upload as stored, then convert on the device (cheaper than on the host).
  Tensor raw = Tensor::empty({t.numel()}, static_cast<aph_dtype>(t.dtype), dst.device());
  copy_bytes(raw.data(), dst.device(), t.data, APH_DEVICE_CPU, t.nbytes);
  ops::Exec exec;
  exec.device = dst.device();
  exec.stream = ctx_.stream;
  Tensor flat = dst.reshape({dst.numel()});
  ops::convert(exec, raw, flat);
  // `raw` is freed on return: the conversion reading it must be done.
  ops::synchronize(exec);
}

Tensor WeightLoader::matrix(const SourceTensor& t, int64_t rows, int64_t cols) const {
  if (!is_float_dtype(t.dtype)) throw invalid_argument("tensor " + t.describe() + " must be F32, F16 or BF16");
  expect_shape(t, {rows, cols});
  const bool aligned = reinterpret_cast<uintptr_t>(t.data) % 4 == 0;
  if (ctx_.device == APH_DEVICE_CPU && aligned) {
    // The memory map already holds the matrix in a dtype the CPU linear reads.
    return Tensor::borrow(const_cast<void*>(t.data), {rows, cols}, static_cast<aph_dtype>(t.dtype), APH_DEVICE_CPU);
  }
  // Unaligned mapped data (a header whose length is not a multiple of 4) is
  // copied once so the kernels can read it through typed pointers.
  const aph_dtype dtype = ctx_.device == APH_DEVICE_CPU ? static_cast<aph_dtype>(t.dtype) : ctx_.act_dtype;
  Tensor out = Tensor::empty({rows, cols}, dtype, ctx_.device);
  fill(t, out);
  return out;
}

bool WeightLoader::via_plugin(const std::string& base) const {
  if (!ctx_.linear_plugin) return false;
  if (ctx_.all_linears_via_plugin) return true;
  const SourceTensor* w = ctx_.source->find(base + ".weight");
  return w == nullptr || !is_float_dtype(w->dtype);
}

std::unique_ptr<PluginLinear> WeightLoader::plugin_linear(const std::string& base, int64_t out_features,
                                                          int64_t in_features, bool bias) const {
  const LoadedQuantPlugin& plugin = *ctx_.linear_plugin;
  std::vector<aph_weight_info> parts;
  const SourceTensor* bias_t = nullptr;
  for (const SourceTensor* t : ctx_.source->with_prefix(base + ".")) {
    const std::string suffix = t->name.substr(base.size() + 1);
    if (suffix.find('.') != std::string::npos) continue;  // a deeper module, not a part of this one
    if (suffix == "bias") {
      bias_t = t;
      continue;
    }
    parts.push_back(t->info());
  }
  if (parts.empty()) throw invalid_argument(ctx_.source->describe() + ": no tensors for linear '" + base + "'");
  if (bias && !bias_t) throw invalid_argument(ctx_.source->describe() + ": tensor '" + base + ".bias' is missing");
  aph_weight_info bias_info{};
  if (bias_t) bias_info = bias_t->info();
  aph_linear_desc desc{};
  desc.size = sizeof(desc);
  desc.name = base.c_str();
  desc.in_features = in_features;
  desc.out_features = out_features;
  desc.device = ctx_.device;
  desc.act_dtype = ctx_.act_dtype;
  desc.n_parts = static_cast<uint32_t>(parts.size());
  desc.parts = parts.data();
  desc.bias = bias_t ? &bias_info : nullptr;
  desc.quant_config_json = ctx_.quant_config_json.empty() ? nullptr : ctx_.quant_config_json.c_str();
  desc.stream = ctx_.stream;
  aph_quant_linear* handle = nullptr;
  aph_error err{};
  err.size = sizeof(err);
  check(plugin.vtable->linear_create(plugin.state, &desc, &handle, &err), err,
        "plugin " + plugin.name + " cannot build linear '" + base + "'");
  return std::make_unique<PluginLinear>(plugin, handle, base, in_features, out_features);
}

std::unique_ptr<Linear> WeightLoader::linear(const std::string& base, int64_t out_features, int64_t in_features,
                                             bool bias) const {
  if (via_plugin(base)) return plugin_linear(base, out_features, in_features, bias);
  Tensor w = matrix(ctx_.source->get(base + ".weight"), out_features, in_features);
  Tensor b = bias ? vector_f32(base + ".bias", out_features) : Tensor();
  return std::make_unique<DenseLinear>(std::move(w), std::move(b));
}

std::unique_ptr<ProjectionGroup> WeightLoader::group(const std::vector<std::string>& bases,
                                                     const std::vector<int64_t>& outs, int64_t in_features,
                                                     bool bias) const {
  bool any_plugin = false;
  for (const auto& b : bases) any_plugin = any_plugin || via_plugin(b);
  if (any_plugin) {
    std::vector<std::unique_ptr<Linear>> parts;
    for (size_t i = 0; i < bases.size(); ++i) parts.push_back(linear(bases[i], outs[i], in_features, bias));
    return std::make_unique<ProjectionGroup>(outs, nullptr, std::move(parts));
  }
  int64_t total = 0;
  for (int64_t n : outs) total += n;
  // One matmul for the whole group: fewer launches, one pass over x.
  aph_dtype dtype = ctx_.act_dtype;
  if (ctx_.device == APH_DEVICE_CPU) {
    dtype = static_cast<aph_dtype>(ctx_.source->get(bases[0] + ".weight").dtype);
    for (const auto& b : bases)
      if (ctx_.source->get(b + ".weight").dtype != dtype) dtype = APH_DTYPE_F32;
    if (!is_float_dtype(dtype)) dtype = APH_DTYPE_F32;
  }
  Tensor w = Tensor::empty({total, in_features}, dtype, ctx_.device);
  Tensor b;
  std::vector<float> host_bias;
  int64_t row = 0;
  for (size_t i = 0; i < bases.size(); ++i) {
    const SourceTensor& t = ctx_.source->get(bases[i] + ".weight");
    if (!is_float_dtype(t.dtype)) throw invalid_argument("tensor " + t.describe() + " must be F32, F16 or BF16");
    expect_shape(t, {outs[i], in_features});
    Tensor slice = w.rows(row, row + outs[i]);
    fill(t, slice);
    if (bias) {
      std::vector<float> bi = host_f32(bases[i] + ".bias", outs[i]);
      host_bias.insert(host_bias.end(), bi.begin(), bi.end());
    }
    row += outs[i];
  }
  if (bias) {
    b = Tensor::empty({total}, APH_DTYPE_F32, ctx_.device);
    copy_bytes(b.data(), ctx_.device, host_bias.data(), APH_DEVICE_CPU, total * sizeof(float));
  }
  return std::make_unique<ProjectionGroup>(outs, std::make_unique<DenseLinear>(std::move(w), std::move(b)),
                                           std::vector<std::unique_ptr<Linear>>{});
}

std::shared_ptr<Embedding> WeightLoader::embedding(const std::string& name, int64_t vocab, int64_t hidden) const {
  const SourceTensor& t = ctx_.source->get(name);
  if (is_float_dtype(t.dtype)) return std::make_shared<Embedding>(matrix(t, vocab, hidden));
  if (!ctx_.linear_plugin) throw invalid_argument("tensor " + t.describe() + " is quantized but no quant plugin handles it");
  const std::string base = name.substr(0, name.rfind(".weight"));
  std::shared_ptr<PluginLinear> rows = plugin_linear(base, vocab, hidden, false);
  if (!rows->has_get_rows()) {
    throw Error(APH_ERR_UNSUPPORTED, "plugin " + ctx_.linear_plugin->name + " cannot read rows of the quantized embedding " + t.describe());
  }
  return std::make_shared<Embedding>(std::move(rows));
}

std::shared_ptr<Linear> WeightLoader::lm_head(const std::string& name, bool tied, const Embedding& embedding,
                                              int64_t vocab, int64_t hidden) const {
  if (!tied) return linear(name.substr(0, name.rfind(".weight")), vocab, hidden, false);
  if (embedding.plugin_rows()) return embedding.plugin_rows();
  return std::make_shared<DenseLinear>(embedding.table(), Tensor());
}

}  // namespace aph::model
