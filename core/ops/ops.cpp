// Argument checks shared by both devices, then dispatch. A shape mismatch is
// a bug in the caller (the model code), reported as APH_ERR_INTERNAL with the
// op's name and the tensors involved.
#include <algorithm>

#include "core/common/error.hpp"
#include "core/ops/backend.hpp"

namespace aph::ops {

namespace {

[[noreturn]] void fail(const char* op, const std::string& what) {
  throw Error(APH_ERR_INTERNAL, std::string("ops::") + op + ": " + what);
}

void same_device(const char* op, const Exec& exec, std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts) {
    if (!t->defined() && t->numel() != 0) fail(op, "undefined tensor");
    if (t->device() != exec.device) fail(op, t->describe() + " is not on the exec device");
  }
}

bool is_float(aph_dtype d) { return d == APH_DTYPE_F32 || d == APH_DTYPE_F16 || d == APH_DTYPE_BF16; }

void check_act(const char* op, const Exec& exec, const Tensor& t) {
  if (exec.on_cpu() ? t.dtype() != APH_DTYPE_F32 : !is_float(t.dtype())) {
    fail(op, t.describe() + " has an unsupported activation dtype");
  }
}

#ifndef APH_HAVE_CUDA
[[noreturn]] void no_cuda() { throw Error(APH_ERR_UNSUPPORTED, "this build has no CUDA support"); }
#endif

}  // namespace

#ifdef APH_HAVE_CUDA
#define APH_DISPATCH(fn, ...)              \
  do {                                     \
    if (exec.on_cpu()) {                   \
      cpu::fn(__VA_ARGS__);                \
    } else {                               \
      cuda::fn(__VA_ARGS__);               \
    }                                      \
  } while (0)
#else
#define APH_DISPATCH(fn, ...)              \
  do {                                     \
    if (exec.on_cpu()) {                   \
      cpu::fn(__VA_ARGS__);                \
    } else {                               \
      no_cuda();                           \
    }                                      \
  } while (0)
#endif

void embedding(const Exec& exec, const Tensor& table, const Tensor& ids, Tensor& out) {
  same_device("embedding", exec, {&table, &ids, &out});
  if (table.rank() != 2 || !is_float(table.dtype())) fail("embedding", "table " + table.describe() + " must be a float [V, H]");
  if (ids.dtype() != APH_DTYPE_I32 || out.rank() != 2 || out.dim(0) != ids.numel() || out.dim(1) != table.dim(1)) {
    fail("embedding", "ids " + ids.describe() + " / out " + out.describe() + " do not match " + table.describe());
  }
  check_act("embedding", exec, out);
  APH_DISPATCH(embedding, exec, table, ids, out);
}

void rms_norm(const Exec& exec, const Tensor& x, const Tensor& weight, float eps, Tensor& out) {
  same_device("rms_norm", exec, {&x, &weight, &out});
  check_act("rms_norm", exec, x);
  if (weight.dtype() != APH_DTYPE_F32 || weight.numel() != x.dim(-1) || out.numel() != x.numel() ||
      out.dtype() != x.dtype()) {
    fail("rms_norm", x.describe() + " / " + weight.describe() + " / " + out.describe());
  }
  APH_DISPATCH(rms_norm, exec, x, weight, eps, out);
}

void add_rms_norm(const Exec& exec, Tensor& residual, const Tensor& delta, const Tensor& weight, float eps,
                  Tensor& out) {
  add_rms_norm(exec, residual, delta, weight, eps, out, residual);
}

void add_rms_norm(const Exec& exec, const Tensor& residual, const Tensor& delta, const Tensor& weight, float eps,
                  Tensor& out, Tensor& residual_out) {
  same_device("add_rms_norm", exec, {&residual, &delta, &weight, &out, &residual_out});
  check_act("add_rms_norm", exec, residual);
  if (weight.dtype() != APH_DTYPE_F32 || weight.numel() != residual.dim(-1) || delta.numel() != residual.numel() ||
      out.numel() != residual.numel() || delta.dtype() != residual.dtype() || out.dtype() != residual.dtype() ||
      residual_out.numel() != residual.numel() || residual_out.dtype() != residual.dtype()) {
    fail("add_rms_norm", residual.describe() + " / " + delta.describe() + " / " + out.describe() + " / " +
                             residual_out.describe());
  }
  APH_DISPATCH(add_rms_norm, exec, residual, delta, weight, eps, out, residual_out);
}

void rope_qkv(const Exec& exec, const RopeParams& p, const QkvIn& in, const Tensor& positions,
              const Tensor& inv_freq, Tensor& q_out, Tensor& k_out, Tensor& v_out) {
  same_device("rope_qkv", exec, {&positions, &inv_freq, &q_out, &k_out, &v_out});
  const int64_t t = positions.numel();
  if (p.rotary_dim <= 0 || p.rotary_dim % 2 || p.rotary_dim > p.head_dim || inv_freq.numel() != p.rotary_dim / 2 ||
      inv_freq.dtype() != APH_DTYPE_F32 || positions.dtype() != APH_DTYPE_I32) {
    fail("rope_qkv", "rotary_dim " + std::to_string(p.rotary_dim) + " / inv_freq " + inv_freq.describe());
  }
  if (q_out.numel() != t * p.num_heads * p.head_dim || k_out.numel() != t * p.num_kv_heads * p.head_dim ||
      v_out.numel() != k_out.numel() || k_out.dtype() != q_out.dtype() || v_out.dtype() != q_out.dtype()) {
    fail("rope_qkv", "outputs " + q_out.describe() + " " + k_out.describe() + " " + v_out.describe());
  }
  if (in.q_stride < p.num_heads * p.head_dim || in.k_stride < p.num_kv_heads * p.head_dim ||
      in.v_stride < p.num_kv_heads * p.head_dim) {
    fail("rope_qkv", "input row strides are shorter than a row");
  }
  check_act("rope_qkv", exec, q_out);
  APH_DISPATCH(rope_qkv, exec, p, in, positions, inv_freq, q_out, k_out, v_out);
}

void silu_mul(const Exec& exec, const void* gate, const void* up, int64_t in_stride, Tensor& out) {
  same_device("silu_mul", exec, {&out});
  check_act("silu_mul", exec, out);
  if (in_stride < out.dim(-1)) fail("silu_mul", "input stride shorter than a row of " + out.describe());
  APH_DISPATCH(silu_mul, exec, gate, up, in_stride, out);
}

void linear(const Exec& exec, const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y) {
  same_device("linear", exec, {&x, &w, &y});
  if (bias) same_device("linear", exec, {bias});
  if (w.rank() != 2 || !is_float(w.dtype())) fail("linear", "weight " + w.describe() + " must be a float [N, K]");
  const int64_t n = w.dim(0), k = w.dim(1);
  if (x.dim(-1) != k || y.dim(-1) != n || x.numel() / k != y.numel() / n) {
    fail("linear", "x " + x.describe() + " · W " + w.describe() + " -> y " + y.describe());
  }
  if (bias && (bias->dtype() != APH_DTYPE_F32 || bias->numel() != n)) fail("linear", "bias " + bias->describe());
  if (exec.on_cpu() && (x.dtype() != APH_DTYPE_F32 || y.dtype() != APH_DTYPE_F32)) {
    fail("linear", "CPU activations must be f32");
  }
  APH_DISPATCH(linear, exec, x, w, bias, y);
}

void linear_silu_mul(const Exec& exec, const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& scratch,
                     Tensor& y) {
  same_device("linear_silu_mul", exec, {&x, &w, &scratch, &y});
  if (w.rank() != 2 || w.dim(0) % 2 != 0) {
    fail("linear_silu_mul", "weight " + w.describe() + " must be [2N, K]: the gate rows, then the up rows");
  }
  const int64_t n = w.dim(0) / 2, k = w.dim(1), m = y.numel() / std::max<int64_t>(n, 1);
  if (y.dim(-1) != n || x.numel() != m * k) {
    fail("linear_silu_mul", "x " + x.describe() + " · W " + w.describe() + " -> y " + y.describe());
  }
  if (scratch.dtype() != y.dtype() || scratch.dim(-1) != 2 * n || scratch.numel() < m * 2 * n) {
    fail("linear_silu_mul", "scratch " + scratch.describe() + " must hold " + std::to_string(m) + " rows of " +
                                std::to_string(2 * n) + " in y's dtype");
  }
  if (bias) {
    same_device("linear_silu_mul", exec, {bias});
    if (bias->dtype() != APH_DTYPE_F32 || bias->numel() != 2 * n) fail("linear_silu_mul", "bias " + bias->describe());
  }
#ifdef APH_HAVE_CUDA
  if (!exec.on_cpu() && cuda::gemv_silu_mul(exec, x, w, bias, y)) return;
#endif
  Tensor gate_up = scratch.reshape({scratch.numel() / (2 * n), 2 * n}).rows(0, m);
  linear(exec, x, w, bias, gate_up);
  const char* gate = static_cast<const char*>(gate_up.data());
  silu_mul(exec, gate, gate + n * dtype_size(gate_up.dtype()), 2 * n, y);
}

void gather_rows(const Exec& exec, const Tensor& x, const Tensor& idx, Tensor& out) {
  same_device("gather_rows", exec, {&x, &idx, &out});
  if (idx.dtype() != APH_DTYPE_I32 || out.dtype() != x.dtype() || out.dim(0) != idx.numel() ||
      (x.dim(0) > 0 && out.numel() / std::max<int64_t>(out.dim(0), 1) != x.numel() / x.dim(0))) {
    fail("gather_rows", x.describe() + " by " + idx.describe() + " -> " + out.describe());
  }
  APH_DISPATCH(gather_rows, exec, x, idx, out);
}

void convert(const Exec& exec, const Tensor& in, Tensor& out) {
  same_device("convert", exec, {&in, &out});
  if (!is_float(in.dtype()) || !is_float(out.dtype()) || in.numel() != out.numel()) {
    fail("convert", in.describe() + " -> " + out.describe());
  }
  APH_DISPATCH(convert, exec, in, out);
}

void logits(const Exec& exec, const Tensor& hidden, const Tensor& idx, const Tensor& norm_weight, float eps,
            const Tensor& lm_head, Tensor& normed, Tensor& out) {
  if (out.dtype() != APH_DTYPE_F32) fail("logits", "output must be f32");
  // Norm only the rows that need logits: one row per sequence when decoding.
  gather_rows(exec, hidden, idx, normed);
  rms_norm(exec, normed, norm_weight, eps, normed);
  linear(exec, normed, lm_head, nullptr, out);
}

void synchronize(const Exec& exec) {
  if (exec.on_cpu()) return;
#ifdef APH_HAVE_CUDA
  cuda::synchronize(exec);
#else
  no_cuda();
#endif
}

}  // namespace aph::ops
