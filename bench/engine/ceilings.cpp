#include "ceilings.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/common/error.hpp"

#ifdef APH_HAVE_CUDA
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#endif

namespace aph::bench {

#ifdef APH_HAVE_CUDA
namespace {

void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw Error(APH_ERR_DEVICE, std::string(what) + ": " + cudaGetErrorString(e));
}

void cublas_ok(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw Error(APH_ERR_DEVICE, std::string(what) + ": cuBLAS status " + std::to_string(s));
}

}  // namespace

double time_stream_ms(void* stream_handle, int iters, const std::function<void()>& body) {
  auto stream = static_cast<cudaStream_t>(stream_handle);
  cudaEvent_t a, b;
  cuda_ok(cudaEventCreate(&a), "cudaEventCreate");
  cuda_ok(cudaEventCreate(&b), "cudaEventCreate");
  body();  // warm-up
  cuda_ok(cudaEventRecord(a, stream), "cudaEventRecord");
  for (int i = 0; i < iters; ++i) body();
  cuda_ok(cudaEventRecord(b, stream), "cudaEventRecord");
  cuda_ok(cudaEventSynchronize(b), "cudaEventSynchronize");
  float ms = 0;
  cuda_ok(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms;
}

Ceilings measure_ceilings() {
  Ceilings c;
  cuda_ok(cudaSetDevice(0), "cudaSetDevice");
  cudaStream_t stream;
  cuda_ok(cudaStreamCreate(&stream), "cudaStreamCreate");

  // Copy: 2 GiB buffers, far beyond L2, so it measures HBM.
  const size_t bytes = 2ull << 30;
  void *src = nullptr, *dst = nullptr;
  cuda_ok(cudaMalloc(&src, bytes), "cudaMalloc");
  cuda_ok(cudaMalloc(&dst, bytes), "cudaMalloc");
  cuda_ok(cudaMemsetAsync(src, 1, bytes, stream), "cudaMemset");
  const int copies = 20;
  const double copy_ms = time_stream_ms(stream, copies, [&] {
    cuda_ok(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync");
  });
  c.copy_bytes_per_s = 2.0 * bytes * copies / (copy_ms / 1e3);
  cudaFree(src);
  cudaFree(dst);

  // GEMM: 8192^3 bf16 in, fp32 accumulate, bf16 out.
  const int n = 8192;
  void *a = nullptr, *b = nullptr, *d = nullptr;
  const size_t mat = static_cast<size_t>(n) * n * sizeof(__nv_bfloat16);
  cuda_ok(cudaMalloc(&a, mat), "cudaMalloc");
  cuda_ok(cudaMalloc(&b, mat), "cudaMalloc");
  cuda_ok(cudaMalloc(&d, mat), "cudaMalloc");
  cuda_ok(cudaMemsetAsync(a, 0, mat, stream), "cudaMemset");
  cuda_ok(cudaMemsetAsync(b, 0, mat, stream), "cudaMemset");
  cublasHandle_t handle;
  cublas_ok(cublasCreate(&handle), "cublasCreate");
  cublas_ok(cublasSetStream(handle, stream), "cublasSetStream");
  const float alpha = 1.0f, beta = 0.0f;
  const int gemms = 20;
  const double gemm_ms = time_stream_ms(stream, gemms, [&] {
    cublas_ok(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a, CUDA_R_16BF, n, b,
                           CUDA_R_16BF, n, &beta, d, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F,
                           CUBLAS_GEMM_DEFAULT),
              "cublasGemmEx");
  });
  c.bf16_flops = 2.0 * n * n * static_cast<double>(n) * gemms / (gemm_ms / 1e3);
  cublasDestroy(handle);
  cudaFree(a);
  cudaFree(b);
  cudaFree(d);
  cudaStreamDestroy(stream);
  return c;
}
#else
Ceilings measure_ceilings() { return {}; }
#endif

bool case_wanted(const char* label) {
  const char* only = std::getenv("APH_BENCH_ONLY");
  return only == nullptr || std::strstr(label, only) != nullptr;
}

int bench_main(int argc, char** argv, const char* name, const std::function<int(double)>& run) {
  try {
    double copy_gbps = 0;
    for (int i = 1; i + 1 < argc; ++i)
      if (std::string(argv[i]) == "--copy-gbps") copy_gbps = std::stod(argv[i + 1]);
    if (copy_gbps <= 0) copy_gbps = measure_ceilings().copy_bytes_per_s / 1e9;
    return run(copy_gbps);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 1;
  }
}

}  // namespace aph::bench
