// The model graph's building blocks, on the CPU (the reference) and on CUDA
// (the fast path). Every op dispatches on the device of its tensors; all
// tensors of one call live on exec.device. CPU activations are F32; CUDA ones
// are F32, F16 or BF16. Norm weights, biases and RoPE tables are F32
// everywhere. CUDA ops only enqueue on exec.stream (no sync, no allocation),
// so a decode step can be captured into a CUDA graph.
#pragma once

#include <cstdint>

#include "core/common/tensor.hpp"
#include "core/ops/thread_pool.hpp"

namespace aph::ops {

struct Exec {
  int32_t device = APH_DEVICE_CPU;
  void* stream = nullptr;      // cudaStream_t
  ThreadPool* pool = nullptr;  // CPU; nullptr = single-threaded
  void* blas = nullptr;        // cublasHandle_t bound to `stream`
  bool on_cpu() const { return device == APH_DEVICE_CPU; }
};

// out[i, :] = table[ids[i], :]. table [V, H] F32/F16/BF16; ids I32 [M]; out [M, H].
// An id outside [0, V) yields a row of zeros on CUDA and an error on the CPU.
void embedding(const Exec& exec, const Tensor& table, const Tensor& ids, Tensor& out);

// out = x / rms(x) * weight, per row. x, out [M, H]; weight F32 [H].
void rms_norm(const Exec& exec, const Tensor& x, const Tensor& weight, float eps, Tensor& out);

// residual += delta; out = rms_norm(residual) * weight — one pass over memory.
void add_rms_norm(const Exec& exec, Tensor& residual, const Tensor& delta, const Tensor& weight, float eps,
                  Tensor& out);
// The same out of place: residual_out = residual + delta (residual_out may be
// residual itself), out = rms_norm(residual_out) * weight.
void add_rms_norm(const Exec& exec, const Tensor& residual, const Tensor& delta, const Tensor& weight, float eps,
                  Tensor& out, Tensor& residual_out);

// Rotary embedding. interleaved: rotate adjacent pairs (x[2i], x[2i+1]) (GGUF
// llama row order); otherwise NEOX pairs (x[i], x[i + rotary_dim/2]) (HF).
// inv_freq F32 [rotary_dim / 2] already holds the scaling (linear, yarn,
// llama3, ...); mscale multiplies cos and sin (yarn / longrope).
struct RopeParams {
  int32_t num_heads = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  int32_t rotary_dim = 0;
  bool interleaved = false;
  float mscale = 1.0f;
};

// Views of this step's q, k, v: rows of `*_stride` elements (they may be
// slices of one fused QKV output).
struct QkvIn {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  int64_t q_stride = 0, k_stride = 0, v_stride = 0;
};

// Applies RoPE to q and k and writes contiguous q_out [T, nh, d], k_out
// [T, nkv, d], v_out [T, nkv, d] (v copied unless it already is v_out).
// positions I32 [T]. In-place use (q == q_out.data(), same stride) is allowed.
void rope_qkv(const Exec& exec, const RopeParams& params, const QkvIn& in, const Tensor& positions,
              const Tensor& inv_freq, Tensor& q_out, Tensor& k_out, Tensor& v_out);

// out[t, i] = silu(gate[t, i]) * up[t, i]; rows of gate/up are `in_stride`
// elements apart (a fused gate_up output has gate and up in one row).
void silu_mul(const Exec& exec, const void* gate, const void* up, int64_t in_stride, Tensor& out);

// y[M, N] = x[M, K] · W[N, K]ᵀ (+ bias F32 [N]). W F32/F16/BF16. On the CPU
// x and y are F32; on CUDA x has W's dtype or F32 and y the act dtype or F32.
void linear(const Exec& exec, const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y);

// y[M, N] = silu(x · Wgᵀ + bias[:N]) * (x · Wuᵀ + bias[N:]) for W [2N, K]
// holding the gate rows then the up rows (a dense gate/up projection), bias
// F32 [2N] or none. On CUDA, at the dense GEMV's batch sizes, one kernel
// (kernels::gemv_silu_mul; APH_GATED_GEMV=0 turns it off); otherwise, and
// always on the CPU (the reference), linear into scratch [>= M, 2N] of y's
// dtype, then silu_mul: the same values either way.
void linear_silu_mul(const Exec& exec, const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& scratch,
                     Tensor& y);

// out[i, :] = x[idx[i], :]. idx I32 on the device.
void gather_rows(const Exec& exec, const Tensor& x, const Tensor& idx, Tensor& out);

// Element-wise dtype conversion between F32/F16/BF16, same element count.
void convert(const Exec& exec, const Tensor& in, Tensor& out);

// Logits for the rows `idx` of the final hidden states: norm, then the dense
// lm_head, into F32 [L, V]. `normed` is scratch of [L, H] in hidden's dtype.
void logits(const Exec& exec, const Tensor& hidden, const Tensor& idx, const Tensor& norm_weight, float eps,
            const Tensor& lm_head, Tensor& normed, Tensor& out);

// Waits for everything enqueued on exec.stream (no-op on the CPU). For load
// time only: the step path never synchronizes.
void synchronize(const Exec& exec);

}  // namespace aph::ops
