// Per-device entry points behind ops.hpp; ops.cpp checks arguments once and
// dispatches here. Not for use outside core/ops.
#pragma once

#include "core/ops/ops.hpp"

namespace aph::ops::cpu {
void embedding(const Exec& exec, const Tensor& table, const Tensor& ids, Tensor& out);
void rms_norm(const Exec& exec, const Tensor& x, const Tensor& weight, float eps, Tensor& out);
void add_rms_norm(const Exec& exec, const Tensor& residual, const Tensor& delta, const Tensor& weight, float eps,
                  Tensor& out, Tensor& residual_out);
void rope_qkv(const Exec& exec, const RopeParams& p, const QkvIn& in, const Tensor& positions,
              const Tensor& inv_freq, Tensor& q_out, Tensor& k_out, Tensor& v_out);
void silu_mul(const Exec& exec, const void* gate, const void* up, int64_t in_stride, Tensor& out);
void linear(const Exec& exec, const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y);
void gather_rows(const Exec& exec, const Tensor& x, const Tensor& idx, Tensor& out);
void convert(const Exec& exec, const Tensor& in, Tensor& out);
}  // namespace aph::ops::cpu

namespace aph::ops::cuda {
void embedding(const Exec& exec, const Tensor& table, const Tensor& ids, Tensor& out);
void rms_norm(const Exec& exec, const Tensor& x, const Tensor& weight, float eps, Tensor& out);
void add_rms_norm(const Exec& exec, const Tensor& residual, const Tensor& delta, const Tensor& weight, float eps,
                  Tensor& out, Tensor& residual_out);
void rope_qkv(const Exec& exec, const RopeParams& p, const QkvIn& in, const Tensor& positions,
              const Tensor& inv_freq, Tensor& q_out, Tensor& k_out, Tensor& v_out);
void silu_mul(const Exec& exec, const void* gate, const void* up, int64_t in_stride, Tensor& out);
void linear(const Exec& exec, const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y);
// linear_silu_mul as one GEMV launch; false (nothing done) where the batch,
// dtypes or alignment have no such form, or APH_GATED_GEMV=0.
bool gemv_silu_mul(const Exec& exec, const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y);
void gather_rows(const Exec& exec, const Tensor& x, const Tensor& idx, Tensor& out);
void convert(const Exec& exec, const Tensor& in, Tensor& out);
void synchronize(const Exec& exec);
}  // namespace aph::ops::cuda
