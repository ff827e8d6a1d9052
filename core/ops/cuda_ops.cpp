// CUDA side of the ops: argument plumbing to kernels.cu, and the dense linear
// (a weight-streaming GEMV for decode-sized batches, cuBLAS above that).
#ifdef APH_HAVE_CUDA

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "core/common/env_flag.hpp"
#include "core/common/error.hpp"
#include "core/ops/backend.hpp"
#include "core/ops/kernels.hpp"

namespace aph::ops::cuda {

namespace {

void check(int status, const char* op) {
  if (status != 0) {
    throw Error(APH_ERR_DEVICE, std::string("ops::") + op + ": " +
                                    cudaGetErrorString(static_cast<cudaError_t>(status)));
  }
}

cudaDataType_t blas_type(aph_dtype d) {
  switch (d) {
    case APH_DTYPE_F32: return CUDA_R_32F;
    case APH_DTYPE_F16: return CUDA_R_16F;
    case APH_DTYPE_BF16: return CUDA_R_16BF;
    default: throw Error(APH_ERR_INTERNAL, "ops::linear: no cuBLAS type for this dtype");
  }
}

}  // namespace

void embedding(const Exec& exec, const Tensor& table, const Tensor& ids, Tensor& out) {
  check(kernels::embedding(table.data(), table.dtype(), ids.as<int32_t>(), ids.numel(), table.dim(0), table.dim(1),
                           out.data(), out.dtype(), exec.stream),
        "embedding");
}

void rms_norm(const Exec& exec, const Tensor& x, const Tensor& weight, float eps, Tensor& out) {
  const int64_t h = x.dim(-1);
  check(kernels::rms_norm(x.data(), weight.as<float>(), eps, x.numel() / h, h, out.data(), x.dtype(), exec.stream),
        "rms_norm");
}

void add_rms_norm(const Exec& exec, const Tensor& residual, const Tensor& delta, const Tensor& weight, float eps,
                  Tensor& out, Tensor& residual_out) {
  const int64_t h = residual.dim(-1);
  check(kernels::add_rms_norm(residual.data(), delta.data(), weight.as<float>(), eps, residual.numel() / h, h,
                              out.data(), residual_out.data(), residual.dtype(), exec.stream),
        "add_rms_norm");
}

void rope_qkv(const Exec& exec, const RopeParams& p, const QkvIn& in, const Tensor& positions,
              const Tensor& inv_freq, Tensor& q_out, Tensor& k_out, Tensor& v_out) {
  kernels::RopeLaunch a{};
  a.q = in.q;
  a.k = in.k;
  a.v = in.v;
  a.q_stride = in.q_stride;
  a.k_stride = in.k_stride;
  a.v_stride = in.v_stride;
  a.q_out = q_out.data();
  a.k_out = k_out.data();
  a.v_out = v_out.data();
  a.positions = positions.as<int32_t>();
  a.inv_freq = inv_freq.as<float>();
  a.tokens = positions.numel();
  a.num_heads = p.num_heads;
  a.num_kv_heads = p.num_kv_heads;
  a.head_dim = p.head_dim;
  a.rotary_dim = p.rotary_dim;
  a.interleaved = p.interleaved;
  a.mscale = p.mscale;
  a.dtype = q_out.dtype();
  check(kernels::rope_qkv(a, exec.stream), "rope_qkv");
}

void silu_mul(const Exec& exec, const void* gate, const void* up, int64_t in_stride, Tensor& out) {
  const int64_t n = out.dim(-1);
  check(kernels::silu_mul(gate, up, in_stride, out.numel() / n, n, out.data(), out.dtype(), exec.stream), "silu_mul");
}

void gather_rows(const Exec& exec, const Tensor& x, const Tensor& idx, Tensor& out) {
  const int64_t row_bytes = x.dim(0) ? static_cast<int64_t>(x.nbytes()) / x.dim(0) : 0;
  check(kernels::gather_rows(x.data(), idx.as<int32_t>(), idx.numel(), row_bytes, out.data(), exec.stream),
        "gather_rows");
}

void convert(const Exec& exec, const Tensor& in, Tensor& out) {
  check(kernels::convert(in.data(), in.dtype(), out.data(), out.dtype(), in.numel(), exec.stream), "convert");
}

void synchronize(const Exec& exec) {
  cudaError_t e = cudaStreamSynchronize(static_cast<cudaStream_t>(exec.stream));
  if (e != cudaSuccess) throw Error(APH_ERR_DEVICE, std::string("cudaStreamSynchronize: ") + cudaGetErrorString(e));
}

namespace {

// The largest batch the dense GEMV takes (APH_GEMV_MAX_M, 1..kGemvMaxRows,
// default 1: batch 1 only); larger ones go to cuBLAS. Each row of x costs the
// GEMV a load and a conversion of x per weight element: at 8 rows it is bound
// by that work, not by the weights' bytes. H100, 8B bf16 with 8 sequences,
// one run each (stop 40): 1212.3 tok/s with cuBLAS from 2 rows, 409.1 with
// the GEMV to 8. With 2 and 4 sequences, medians of 2 interleaved runs (stop
// 41, H100): 2 sequences 320.7 tok/s with cuBLAS against 308.5 with the GEMV;
// 4 sequences 644.4 with cuBLAS against 376.6 with the GEMV.
int64_t gemv_max_rows() {
  static const int64_t rows = [] {
    constexpr int64_t kDefault = 1;
    const long v = env_int("APH_GEMV_MAX_M", kDefault);
    return v >= 1 && v <= kernels::kGemvMaxRows ? static_cast<int64_t>(v) : kDefault;
  }();
  return rows;
}

}  // namespace

void linear(const Exec& exec, const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y) {
  const int64_t n = w.dim(0), k = w.dim(1), m = x.numel() / k;
  if (x.dtype() != w.dtype()) {
    throw Error(APH_ERR_INTERNAL, "ops::linear: CUDA x " + x.describe() + " must have the weight's dtype " +
                                      w.describe());
  }
  const float* b = bias ? bias->as<float>() : nullptr;
  if (m <= gemv_max_rows()) {
    check(kernels::gemv(x.data(), w.data(), b, y.data(), m, n, k, w.dtype(), y.dtype(), exec.stream), "linear");
    return;
  }
  if (exec.blas == nullptr) throw Error(APH_ERR_INTERNAL, "ops::linear: no cuBLAS handle in Exec");
  auto handle = static_cast<cublasHandle_t>(exec.blas);
  if (cublasSetStream(handle, static_cast<cudaStream_t>(exec.stream)) != CUBLAS_STATUS_SUCCESS) {
    throw Error(APH_ERR_DEVICE, "ops::linear: cublasSetStream failed");
  }
  const float alpha = 1.0f, beta = 0.0f;
  // Row-major y[M,N] = x[M,K]·W[N,K]ᵀ is column-major yᵀ[N,M] = W·xᵀ.
  cublasStatus_t st = cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                                   static_cast<int>(k), &alpha, w.data(), blas_type(w.dtype()), static_cast<int>(k),
                                   x.data(), blas_type(x.dtype()), static_cast<int>(k), &beta, y.data(),
                                   blas_type(y.dtype()), static_cast<int>(n), CUBLAS_COMPUTE_32F,
                                   CUBLAS_GEMM_DEFAULT);
  if (st != CUBLAS_STATUS_SUCCESS) {
    throw Error(APH_ERR_DEVICE, std::string("ops::linear: cublasGemmEx failed: ") + cublasGetStatusString(st));
  }
  if (b) check(kernels::add_bias(y.data(), b, m, n, y.dtype(), exec.stream), "linear bias");
}

// APH_GATED_GEMV=0 runs a dense gate/up projection as the GEMV and silu_mul
// again, to compare (docs/CONFIG.md).
bool gemv_silu_mul(const Exec& exec, const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y) {
  static const bool enabled = env_flag("APH_GATED_GEMV", true);
  const int64_t n = w.dim(0) / 2, k = w.dim(1), m = x.numel() / k;
  if (!enabled || m > gemv_max_rows() || x.dtype() != w.dtype()) return false;
  const int st = kernels::gemv_silu_mul(x.data(), w.data(), bias ? bias->as<float>() : nullptr, y.data(), m, n, k,
                                        w.dtype(), y.dtype(), exec.stream);
  if (st == kernels::kGemvNotTaken) return false;
  check(st, "linear_silu_mul");
  return true;
}

}  // namespace aph::ops::cuda

#endif  // APH_HAVE_CUDA
