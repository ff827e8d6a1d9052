#include "plugins/quant-gguf/linear.hpp"

#include <cstddef>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <vector>

#include "core/common/error.hpp"
#include "core/common/half.hpp"
#include "plugins/quant-gguf/container/ggml_types.hpp"
#include "plugins/quant-gguf/cuda/cuda_linear.hpp"
#include "plugins/quant-gguf/plugin_state.hpp"

namespace aph::gguf {

namespace {

// Output rows per chunk: enough work per chunk to amortize the hand-off.
constexpr uint64_t kMinRowsPerChunk = 32;

// The host's parallel_for (ABI minor 1) as a ParallelRows; empty when the
// host is older. The C callback reaches the std::function through ctx.
ParallelRows host_parallel_rows(const aph_host_services* services) {
  if (services == nullptr ||
      services->size < offsetof(aph_host_services, parallel_for) + sizeof(services->parallel_for) ||
      services->parallel_for == nullptr)
    return {};
  return [services](int64_t n, const std::function<void(int64_t, int64_t)>& body) {
    // Exceptions must not cross the C boundary: the first is kept and
    // rethrown here, on the plugin's side.
    struct Call {
      const std::function<void(int64_t, int64_t)>* body;
      std::mutex mutex;
      std::exception_ptr error;
    } call{&body, {}, nullptr};
    auto trampoline = [](void* ctx, uint64_t begin, uint64_t end) {
      auto* c = static_cast<Call*>(ctx);
      try {
        (*c->body)(static_cast<int64_t>(begin), static_cast<int64_t>(end));
      } catch (...) {
        std::lock_guard<std::mutex> lock(c->mutex);
        if (!c->error) c->error = std::current_exception();
      }
    };
    services->parallel_for(services->host, static_cast<uint64_t>(n), kMinRowsPerChunk, trampoline, &call);
    if (call.error) std::rethrow_exception(call.error);
  };
}

std::vector<float> bias_values(const aph_weight_info* b, int64_t n, const std::string& layer) {
  if (!b) return {};
  if (b->rank != 1 || b->shape[0] != n)
    throw invalid_argument("linear " + layer + ": bias shape does not match out_features " + std::to_string(n));
  std::vector<float> out(n);
  const auto* p = static_cast<const uint8_t*>(b->data);
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    switch (b->dtype) {
      case APH_DTYPE_F32: std::memcpy(&out[i], p + 4 * i, 4); break;
      case APH_DTYPE_F16: std::memcpy(&h, p + 2 * i, 2); out[i] = f16_to_f32(h); break;
      case APH_DTYPE_BF16: std::memcpy(&h, p + 2 * i, 2); out[i] = bf16_to_f32(h); break;
      default: throw invalid_argument("linear " + layer + ": bias dtype must be F32, F16 or BF16");
    }
  }
  return out;
}

void check_matrix(const aph_tensor& t, int32_t dtype, int32_t device, int64_t cols, const char* what,
                  const std::string& layer) {
  if (t.size < sizeof(aph_tensor)) throw invalid_argument(layer + ": " + what + " descriptor too small");
  if (t.dtype != dtype) throw invalid_argument("linear " + layer + ": " + what + " has the wrong dtype");
  if (t.device != device) throw invalid_argument("linear " + layer + ": " + what + " is on the wrong device");
  if (t.rank != 2 || t.shape[1] != cols || t.shape[0] < 0)
    throw invalid_argument("linear " + layer + ": " + what + " must be [M, " + std::to_string(cols) + "]");
  if (t.shape[0] > 0 && (t.strides[1] != 1 || t.strides[0] != cols))
    throw invalid_argument("linear " + layer + ": " + what + " must be contiguous");
  if (t.shape[0] > 0 && t.data == nullptr) throw invalid_argument("linear " + layer + ": " + what + " has no data");
}

}  // namespace

uint32_t ggml_type_of(const aph_weight_info& w, const std::string& layer) {
  switch (w.dtype) {
    case -1: return w.format_type;
    case APH_DTYPE_F32: return kF32;
    case APH_DTYPE_F16: return kF16;
    case APH_DTYPE_BF16: return kBF16;
    default:
      throw Error(APH_ERR_UNSUPPORTED, "linear " + layer + ": weight dtype " + std::to_string(w.dtype) +
                                           " is not a GGUF weight type");
  }
}

Linear::Linear(PluginState& state, const aph_linear_desc& desc)
    : name_(desc.name ? desc.name : "?"), device_(desc.device), act_dtype_(desc.act_dtype),
      k_(desc.in_features), n_(desc.out_features) {
  if (desc.n_parts != 1 || !desc.parts)
    throw invalid_argument("linear " + name_ + ": a GGUF linear has exactly one weight tensor, got " +
                           std::to_string(desc.n_parts));
  const aph_weight_info& w = desc.parts[0];
  uint32_t type = ggml_type_of(w, name_);
  auto traits = type_traits(type);
  if (!traits) throw invalid_argument("linear " + name_ + ": unknown ggml type " + std::to_string(type));
  if (w.rank != 2 || w.shape[0] != n_ || w.shape[1] != k_)
    throw invalid_argument("linear " + name_ + ": weight shape is not [" + std::to_string(n_) + ", " +
                           std::to_string(k_) + "]");
  if (k_ <= 0 || n_ <= 0 || k_ % traits->block_elems != 0)
    throw invalid_argument("linear " + name_ + ": in_features " + std::to_string(k_) +
                           " is not a multiple of the " + std::string(traits->name) + " block size");
  uint64_t row_bytes = static_cast<uint64_t>(k_ / traits->block_elems) * traits->block_bytes;
  if (w.nbytes != row_bytes * static_cast<uint64_t>(n_) || !w.data)
    throw invalid_argument("linear " + name_ + ": weight has " + std::to_string(w.nbytes) +
                           " bytes, expected " + std::to_string(row_bytes * n_));
  std::vector<float> bias = bias_values(desc.bias, n_, name_);
  const auto* bytes = static_cast<const uint8_t*>(w.data);
  if (device_ == APH_DEVICE_CPU) {
    if (act_dtype_ != APH_DTYPE_F32)
      throw Error(APH_ERR_UNSUPPORTED, "linear " + name_ + ": CPU activations must be F32");
    cpu_ = std::make_unique<CpuLinear>(type, k_, n_, bytes, std::move(bias), state.cpu_exact);
    parallel_ = host_parallel_rows(state.services);
  } else {
    if (act_dtype_ != APH_DTYPE_F16 && act_dtype_ != APH_DTYPE_BF16)
      throw Error(APH_ERR_UNSUPPORTED, "linear " + name_ + ": CUDA activations must be F16 or BF16");
    cuda_ = std::make_unique<CudaLinear>(state, type, k_, n_, bytes, bias, device_, act_dtype_,
                                         desc.stream, name_);
  }
}

Linear::~Linear() = default;

void Linear::forward(const aph_tensor& x, aph_tensor& y, aph_stream stream) {
  check_matrix(x, act_dtype_, device_, k_, "x", name_);
  check_matrix(y, act_dtype_, device_, n_, "y", name_);
  if (x.shape[0] != y.shape[0]) throw invalid_argument("linear " + name_ + ": x and y differ in M");
  const int64_t m = x.shape[0];
  if (m == 0) return;
  if (cpu_)
    cpu_->forward(static_cast<const float*>(x.data), m, static_cast<float*>(y.data), parallel_);
  else
    cuda_->forward(x.data, m, y.data, stream);
}

void Linear::forward_shared(const std::vector<Linear*>& group, const aph_tensor& x, aph_tensor* ys,
                            aph_stream stream) {
  std::vector<CudaLinear*> cuda;
  for (size_t i = 0; i < group.size(); ++i) {
    Linear& l = *group[i];
    check_matrix(x, l.act_dtype_, l.device_, l.k_, "x", l.name_);
    check_matrix(ys[i], l.act_dtype_, l.device_, l.n_, "y", l.name_);
    if (x.shape[0] != ys[i].shape[0]) throw invalid_argument("linear " + l.name_ + ": x and y differ in M");
    if (l.cuda_) cuda.push_back(l.cuda_.get());
  }
  const int64_t m = x.shape[0];
  if (m == 0) return;
  if (cuda.size() != group.size()) {  // CPU (or mixed): one by one
    for (size_t i = 0; i < group.size(); ++i) group[i]->forward(x, ys[i], stream);
    return;
  }
  std::vector<void*> outs;
  for (size_t i = 0; i < group.size(); ++i) outs.push_back(ys[i].data);
  CudaLinear::forward_shared(cuda, x.data, m, outs, stream);
}

RmsNormX Linear::checked_norm_input(const std::vector<Linear*>& group, const aph_rms_norm_input& in) {
  const Linear& first = *group[0];
  const std::string& name = first.name_;
  if (in.size < sizeof(aph_rms_norm_input) || !in.residual || !in.weight)
    throw invalid_argument("linear " + name + ": RMSNorm input without residual or weight");
  check_matrix(*in.residual, first.act_dtype_, first.device_, first.k_, "residual", name);
  const int64_t m = in.residual->shape[0];
  if (in.delta) {
    check_matrix(*in.delta, first.act_dtype_, first.device_, first.k_, "delta", name);
    if (!in.residual_out) throw invalid_argument("linear " + name + ": RMSNorm input has delta but no residual_out");
    check_matrix(*in.residual_out, first.act_dtype_, first.device_, first.k_, "residual_out", name);
    if (in.delta->shape[0] != m || in.residual_out->shape[0] != m)
      throw invalid_argument("linear " + name + ": residual, delta and residual_out differ in M");
    if (m > 0 && (in.residual_out->data == in.residual->data || in.residual_out->data == in.delta->data))
      throw invalid_argument("linear " + name + ": residual_out must not be residual or delta");
  }
  const aph_tensor& w = *in.weight;
  if (w.size < sizeof(aph_tensor) || w.dtype != APH_DTYPE_F32 || w.device != first.device_ || w.rank != 1 ||
      w.shape[0] != first.k_ || w.data == nullptr)
    throw invalid_argument("linear " + name + ": RMSNorm weight must be F32 [" + std::to_string(first.k_) +
                           "] on the layer's device");
  for (const Linear* l : group)
    if (l->k_ != first.k_ || l->act_dtype_ != first.act_dtype_ || l->device_ != first.device_)
      throw invalid_argument("linear " + l->name_ + ": differs from " + name + " in input width, dtype or device");
  RmsNormX x;
  x.residual = in.residual->data;
  x.delta = in.delta ? in.delta->data : nullptr;
  x.weight = static_cast<const float*>(w.data);
  x.eps = in.eps;
  x.residual_out = in.delta ? in.residual_out->data : nullptr;
  return x;
}

std::vector<CudaLinear*> Linear::cuda_parts(const std::vector<Linear*>& group) {
  std::vector<CudaLinear*> cuda;
  for (Linear* l : group)
    if (l->cuda_) cuda.push_back(l->cuda_.get());
  if (cuda.size() != group.size()) cuda.clear();
  return cuda;
}

bool Linear::forward_shared_rms_norm(const std::vector<Linear*>& group, const aph_rms_norm_input& in, aph_tensor* ys,
                                     aph_stream stream) {
  const RmsNormX x = checked_norm_input(group, in);
  const int64_t m = in.residual->shape[0];
  for (size_t i = 0; i < group.size(); ++i) {
    const Linear& l = *group[i];
    check_matrix(ys[i], l.act_dtype_, l.device_, l.n_, "y", l.name_);
    if (ys[i].shape[0] != m) throw invalid_argument("linear " + l.name_ + ": residual and y differ in M");
  }
  const std::vector<CudaLinear*> cuda = cuda_parts(group);
  if (m == 0 || cuda.empty()) return false;  // the CPU: the host's two steps
  std::vector<void*> outs;
  for (size_t i = 0; i < group.size(); ++i) outs.push_back(ys[i].data);
  return CudaLinear::forward_shared_rms_norm(cuda, x, m, outs, stream);
}

bool Linear::forward_qkv_rope_kv(const std::vector<Linear*>& group, const aph_rms_norm_input& in, aph_tensor& q_out,
                                 const aph_rope_kv_store& kv, aph_stream stream) {
  if (group.size() != 3) throw invalid_argument("linear_forward_qkv_rope_kv: needs 3 linears (q, k, v)");
  const RmsNormX x = checked_norm_input(group, in);
  const Linear &q = *group[0], &k = *group[1], &v = *group[2];
  const std::string what = "linear " + q.name_ + " (q/k/v with RoPE and the KV store): ";
  const int64_t m = in.residual->shape[0];
  check_matrix(q_out, q.act_dtype_, q.device_, q.n_, "q_out", q.name_);
  if (q_out.shape[0] != m) throw invalid_argument(what + "residual and q_out differ in M");
  if (kv.size < sizeof(aph_rope_kv_store)) throw Error(APH_ERR_VERSION, what + "aph_rope_kv_store is older than this plugin");
  if (kv.head_dim <= 0 || kv.head_dim % 2 != 0 || q.n_ % kv.head_dim != 0 || k.n_ % kv.head_dim != 0)
    throw invalid_argument(what + "head_dim " + std::to_string(kv.head_dim) + " must be even and divide q's " +
                           std::to_string(q.n_) + " and k's " + std::to_string(k.n_) + " rows");
  if (v.n_ != k.n_) throw invalid_argument(what + "k and v differ in rows");
  if (kv.rotary_dim <= 0 || kv.rotary_dim % 2 != 0 || kv.rotary_dim > kv.head_dim)
    throw invalid_argument(what + "rotary_dim " + std::to_string(kv.rotary_dim) + " must be even, in (0, head_dim]");
  if (kv.kv_dtype != APH_DTYPE_F16 && kv.kv_dtype != APH_DTYPE_BF16 && kv.kv_dtype != APH_DTYPE_F8_E4M3 &&
      kv.kv_dtype != APH_DTYPE_F8_E5M2)
    throw invalid_argument(what + "kv_dtype " + std::to_string(kv.kv_dtype) + " is not F16, BF16 or FP8");
  if (!(kv.k_scale > 0.0f) || !(kv.v_scale > 0.0f)) throw invalid_argument(what + "k_scale and v_scale must be positive");
  if (m > 0 && (!kv.positions || !kv.inv_freq || !kv.slot_mapping || !kv.k_cache || !kv.v_cache))
    throw invalid_argument(what + "positions, inv_freq, slot_mapping and both caches are required");
  const std::vector<CudaLinear*> cuda = cuda_parts(group);
  if (m == 0 || cuda.empty()) return false;  // the CPU: the host's own steps
  cuda::RopeKv r;
  r.positions = kv.positions;
  r.inv_freq = kv.inv_freq;
  r.head_dim = kv.head_dim;
  r.rotary_dim = kv.rotary_dim;
  r.mscale = kv.mscale;
  r.slots = kv.slot_mapping;
  r.total_slots = kv.total_slots;
  r.k_cache = static_cast<uint8_t*>(kv.k_cache);
  r.v_cache = static_cast<uint8_t*>(kv.v_cache);
  r.kv_width = k.n_;
  r.kv_dtype = kv.kv_dtype;
  r.k_scale = kv.k_scale;
  r.v_scale = kv.v_scale;
  return CudaLinear::forward_qkv_rope_kv(cuda, x, m, q_out.data, r, stream);
}

bool Linear::forward_silu_mul(const aph_tensor& gate, const aph_tensor& up, aph_tensor& y, aph_stream stream) {
  check_matrix(y, act_dtype_, device_, n_, "y", name_);
  for (const aph_tensor* t : {&gate, &up}) {
    const char* what = t == &gate ? "gate" : "up";
    if (t->size < sizeof(aph_tensor) || t->dtype != act_dtype_ || t->device != device_ || t->rank != 2 ||
        t->shape[1] != k_ || t->shape[0] != y.shape[0] || t->strides[1] != 1 || t->strides[0] < k_ ||
        (t->shape[0] > 0 && t->data == nullptr))
      throw invalid_argument("linear " + name_ + ": " + what + " must be [M, " + std::to_string(k_) +
                             "] rows of the activation dtype on the layer's device, M as y's");
  }
  if (!cuda_ || y.shape[0] == 0) return false;
  return cuda_->forward_silu_mul(gate.data, up.data, y.shape[0], y.data, stream);
}

void Linear::get_rows(const aph_tensor& ids, aph_tensor& out, aph_stream stream) {
  if (ids.dtype != APH_DTYPE_I32 || ids.rank != 1 || ids.device != device_)
    throw invalid_argument("linear " + name_ + ": get_rows ids must be I32 [M] on the layer's device");
  check_matrix(out, act_dtype_, device_, k_, "out", name_);
  if (out.shape[0] != ids.shape[0]) throw invalid_argument("linear " + name_ + ": ids and out differ in M");
  const int64_t m = ids.shape[0];
  if (m == 0) return;
  if (cpu_)
    cpu_->get_rows(static_cast<const int32_t*>(ids.data), m, static_cast<float*>(out.data));
  else
    cuda_->get_rows(static_cast<const int32_t*>(ids.data), m, out.data, stream);
}

uint64_t Linear::device_bytes() const { return cuda_ ? cuda_->device_bytes() : 0; }

}  // namespace aph::gguf
