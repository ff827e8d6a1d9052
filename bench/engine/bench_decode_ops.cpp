// aph_bench_decode_ops: where the time of one batch-1 bf16 decode step of the
// Llama-3-8B shape goes on CUDA, op by op, without the engine around it.
//
//   aph_bench_decode_ops [--copy-gbps X]
//
// For each linear of a layer (and the lm_head): the project's GEMV with 1, 2,
// 4 and 8 warps a row and with its own choice (the path ops::linear takes at
// one row), and cuBLAS on the same shape, as time and as bytes read per
// second against the measured copy bandwidth. Then the whole dense part of a
// step (32 layers of norm, QKV, RoPE, O, add+norm, gate_up, SiLU-mul, down,
// and the head; attention left out) captured in one CUDA graph, as the engine
// runs it: its time bounds batch-1 decode from above. Every layer has its own
// weights, so nothing is served from L2.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "ceilings.hpp"
#include "core/common/error.hpp"
#include "core/ops/kernels.hpp"
#include "core/ops/ops.hpp"

namespace {

using aph::Tensor;

void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw aph::Error(APH_ERR_DEVICE, std::string(what) + ": " + cudaGetErrorString(e));
}

constexpr int64_t kHidden = 4096, kInter = 14336, kHeads = 32, kKvHeads = 8, kHeadDim = 128, kVocab = 128256,
                  kLayers = 32;
constexpr int64_t kQkv = (kHeads + 2 * kKvHeads) * kHeadDim;

struct Layer {
  Tensor qkv, o, gate_up, down;
};

Tensor weights(int64_t n, int64_t k) {
  Tensor t = Tensor::empty({n, k}, APH_DTYPE_BF16, 0);
  // Any bit pattern: the kernels' speed does not depend on the values.
  cuda_ok(cudaMemset(t.data(), 0x3C, t.nbytes()), "cudaMemset");
  return t;
}

// Mean milliseconds of body() over `iters` runs after one warm-up.
double time_ms(cudaStream_t s, int iters, const std::function<void()>& body) {
  return aph::bench::time_stream_ms(s, iters, body) / iters;
}

void cublas_gemv(cublasHandle_t h, const Tensor& x, const Tensor& w, Tensor& y) {
  const float alpha = 1.0f, beta = 0.0f;
  const int n = static_cast<int>(w.dim(0)), k = static_cast<int>(w.dim(1));
  if (cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, 1, k, &alpha, w.data(), CUDA_R_16BF, k, x.data(), CUDA_R_16BF, k,
                   &beta, y.data(), CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
    throw aph::Error(APH_ERR_DEVICE, "cublasGemmEx failed");
}

int run(double copy_gbps) {
  cudaStream_t stream;
  cuda_ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  cublasHandle_t blas;
  if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) throw aph::Error(APH_ERR_DEVICE, "cublasCreate failed");
  cublasSetStream(blas, stream);
  aph::ops::Exec exec;
  exec.device = 0;
  exec.stream = stream;
  exec.blas = blas;

  std::vector<Layer> layers(kLayers);
  for (Layer& l : layers) {
    l.qkv = weights(kQkv, kHidden);
    l.o = weights(kHidden, kHidden);
    l.gate_up = weights(2 * kInter, kHidden);
    l.down = weights(kHidden, kInter);
  }
  Tensor head = weights(kVocab, kHidden);
  auto act = [](int64_t n) { return Tensor::zeros({1, n}, APH_DTYPE_BF16, 0); };
  Tensor hidden = act(kHidden), residual = act(kHidden), normed = act(kHidden), qkv = act(kQkv),
         attn = act(kHidden), o = act(kHidden), gate_up = act(2 * kInter), mlp = act(kInter), down = act(kHidden),
         logits = act(kVocab), wide = act(kInter);
  Tensor norm_w = Tensor::zeros({kHidden}, APH_DTYPE_F32, 0);
  Tensor inv_freq = Tensor::zeros({kHeadDim / 2}, APH_DTYPE_F32, 0);
  Tensor positions = Tensor::zeros({1}, APH_DTYPE_I32, 0);
  Tensor q = Tensor::zeros({1, kHeads * kHeadDim}, APH_DTYPE_BF16, 0);
  Tensor k = Tensor::zeros({1, kKvHeads * kHeadDim}, APH_DTYPE_BF16, 0);
  Tensor v = Tensor::zeros({1, kKvHeads * kHeadDim}, APH_DTYPE_BF16, 0);

  std::printf("batch-1 decode ops, Llama-3-8B shape, bf16 (copy ceiling %.0f GB/s read+write)\n", copy_gbps);
  std::printf("%-24s %8s %8s %8s %8s %8s %7s %8s %8s\n", "linear [N x K], us", "split 1", "split 2", "split 4",
              "split 8", "chosen", "of copy", "cuBLAS", "GB/s");
  struct Shape {
    const char* name;
    std::vector<Tensor> w;  // one per layer: cycling keeps the reads out of L2
    Tensor* x;
    Tensor* y;
  };
  std::vector<Shape> shapes = {{"qkv", {}, &normed, &qkv}, {"o", {}, &attn, &o},
                               {"gate_up", {}, &normed, &gate_up}, {"down", {}, &wide, &down}};
  for (Layer& l : layers) {
    shapes[0].w.push_back(l.qkv);
    shapes[1].w.push_back(l.o);
    shapes[2].w.push_back(l.gate_up);
    shapes[3].w.push_back(l.down);
  }
  shapes.push_back({"lm_head", {head}, &normed, &logits});
  for (Shape& sh : shapes) {
    double split_us[5] = {};
    const int splits[5] = {1, 2, 4, 8, 0};  // 0: the kernel's own choice
    for (int si = 0; si < 5; ++si) {
      size_t i = 0;
      split_us[si] = 1e3 * time_ms(stream, 64, [&] {
        const Tensor& w = sh.w[i++ % sh.w.size()];
        cuda_ok(static_cast<cudaError_t>(aph::ops::kernels::gemv(sh.x->data(), w.data(), nullptr, sh.y->data(), 1,
                                                                  w.dim(0), w.dim(1), w.dtype(), sh.y->dtype(),
                                                                  stream, splits[si])),
                "gemv");
      });
    }
    size_t i = 0;
    const double theirs = time_ms(stream, 64, [&] { cublas_gemv(blas, *sh.x, sh.w[i++ % sh.w.size()], *sh.y); });
    const double bytes = static_cast<double>(sh.w[0].nbytes());
    char label[64];
    std::snprintf(label, sizeof label, "%s [%lld x %lld]", sh.name, static_cast<long long>(sh.w[0].dim(0)),
                  static_cast<long long>(sh.w[0].dim(1)));
    std::printf("%-24s %8.1f %8.1f %8.1f %8.1f %8.1f %6.0f%% %8.1f %8.0f\n", label, split_us[0], split_us[1],
                split_us[2], split_us[3], split_us[4], 100 * bytes / (split_us[4] * 1e3) / copy_gbps, theirs * 1e3,
                bytes / (theirs * 1e6));
  }

  aph::ops::RopeParams rope;
  rope.num_heads = kHeads;
  rope.num_kv_heads = kKvHeads;
  rope.head_dim = kHeadDim;
  rope.rotary_dim = kHeadDim;
  Tensor residual_alt = act(kHidden);
  Tensor logits32 = Tensor::zeros({1, kVocab}, APH_DTYPE_F32, 0);
  auto step = [&] {
    for (Layer& l : layers) {
      aph::ops::add_rms_norm(exec, residual, hidden, norm_w, 1e-5f, normed, residual_alt);
      aph::ops::linear(exec, normed, l.qkv, nullptr, qkv);
      aph::ops::QkvIn in;
      const auto* base = static_cast<const uint16_t*>(qkv.data());
      in.q = base;
      in.k = base + kHeads * kHeadDim;
      in.v = base + (kHeads + kKvHeads) * kHeadDim;
      in.q_stride = in.k_stride = in.v_stride = kQkv;
      aph::ops::rope_qkv(exec, rope, in, positions, inv_freq, q, k, v);
      aph::ops::linear(exec, attn, l.o, nullptr, o);
      aph::ops::add_rms_norm(exec, residual_alt, o, norm_w, 1e-5f, normed, residual);
      aph::ops::linear(exec, normed, l.gate_up, nullptr, gate_up);
      const auto* gu = static_cast<const uint16_t*>(gate_up.data());
      aph::ops::silu_mul(exec, gu, gu + kInter, 2 * kInter, mlp);
      aph::ops::linear(exec, mlp, l.down, nullptr, hidden);
    }
    aph::ops::add_rms_norm(exec, residual, hidden, norm_w, 1e-5f, normed, residual_alt);
    aph::ops::linear(exec, normed, head, nullptr, logits32);
  };
  step();  // lazy set-up outside the capture
  cuda_ok(cudaStreamSynchronize(stream), "warm-up step");
  cudaGraph_t graph;
  cudaGraphExec_t exec_graph;
  cuda_ok(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "begin capture");
  step();
  cuda_ok(cudaStreamEndCapture(stream, &graph), "end capture");
  cuda_ok(cudaGraphInstantiate(&exec_graph, graph, 0), "instantiate");
  const double ms = time_ms(stream, 20, [&] { cuda_ok(cudaGraphLaunch(exec_graph, stream), "graph launch"); });
  double bytes = static_cast<double>(head.nbytes());
  for (const Layer& l : layers)
    bytes += static_cast<double>(l.qkv.nbytes() + l.o.nbytes() + l.gate_up.nbytes() + l.down.nbytes());
  std::printf("dense step (32 layers + head, no attention, one graph): %.3f ms = %.0f tok/s upper bound, "
              "%.0f GB/s = %.0f%% of copy\n",
              ms, 1e3 / ms, bytes / (ms * 1e6), 100 * bytes / (ms * 1e6) / copy_gbps);
  cudaGraphExecDestroy(exec_graph);
  cudaGraphDestroy(graph);
  cublasDestroy(blas);
  cudaStreamDestroy(stream);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return aph::bench::bench_main(argc, argv, "aph_bench_decode_ops", run); }
