// Paged attention on the GPU against the card's measured ceilings: D2D copy
// bandwidth for decode (KV bytes read / time) and the cuBLAS bf16 GEMM rate
// for prefill. Shapes are Llama-3-8B's (32 query heads, 8 KV heads, d = 128).
//
// Each timed call uses a different layer's cache, cycling through enough
// layers that the working set is far larger than L2, as in a real forward
// pass; calls are captured in a CUDA graph, as the engine runs decode.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/attention/paged_attention.hpp"
#include "core/common/error.hpp"

namespace {

using aph::attention::KvLayout;
using aph::attention::PagedAttentionArgs;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

constexpr int kHeads = 32, kKvHeads = 8, kHeadDim = 128, kBlock = 16;

double copy_bandwidth_gbs() {
  const size_t bytes = size_t{1} << 30;
  void *a, *b;
  check(cudaMalloc(&a, bytes), "cudaMalloc");
  check(cudaMalloc(&b, bytes), "cudaMalloc");
  check(cudaMemset(a, 1, bytes), "memset");
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  check(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice), "warmup copy");
  const int iters = 10;
  cudaEventRecord(e0);
  for (int i = 0; i < iters; ++i) cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice);
  cudaEventRecord(e1);
  check(cudaEventSynchronize(e1), "copy");
  float ms;
  cudaEventElapsedTime(&ms, e0, e1);
  cudaFree(a);
  cudaFree(b);
  // A copy reads and writes every byte: the traffic a streaming kernel can reach.
  return 2.0 * bytes * iters / (ms * 1e-3) / 1e9;
}

double bf16_gemm_tflops() {
  const int n = 8192;
  void *a, *b, *c;
  check(cudaMalloc(&a, size_t{2} * n * n), "cudaMalloc");
  check(cudaMalloc(&b, size_t{2} * n * n), "cudaMalloc");
  check(cudaMalloc(&c, size_t{2} * n * n), "cudaMalloc");
  cudaMemset(a, 0, size_t{2} * n * n);
  cudaMemset(b, 0, size_t{2} * n * n);
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 0;
  const float alpha = 1, beta = 0;
  auto gemm = [&] {
    return cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a, CUDA_R_16BF, n, b, CUDA_R_16BF, n,
                        &beta, c, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  };
  gemm();
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  const int iters = 10;
  cudaEventRecord(e0);
  for (int i = 0; i < iters; ++i) gemm();
  cudaEventRecord(e1);
  check(cudaEventSynchronize(e1), "gemm");
  float ms;
  cudaEventElapsedTime(&ms, e0, e1);
  cublasDestroy(h);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  return 2.0 * n * n * double(n) * iters / (ms * 1e-3) / 1e12;
}

struct Result {
  double us;
  double kv_bytes;
  double flops;
};

// batch sequences of (q_len, ctx) each; kv dtype; returns per-call time.
// plan_ctx: the max_context_len the split plan is made for (the engine's
// graphs plan for the model's whole context); 0 = ctx. short_contexts: as
// the engine says when every context fits a cluster's splits (a lone
// sequence then merges in a cluster: split_plan.hpp's decode_uses_clusters).
Result run_case(int batch, int q_len, int ctx, aph_dtype kv, void* workspace, size_t ws_bytes, int plan_ctx,
                bool short_contexts) {
  const size_t esz = (kv == APH_DTYPE_F16 || kv == APH_DTYPE_BF16) ? 2 : 1;
  const int blocks_per_seq = (ctx + kBlock - 1) / kBlock;
  const int blocks = batch * blocks_per_seq;
  const size_t layer_bytes = size_t{2} * blocks * kBlock * kKvHeads * kHeadDim * esz;
  // Enough layers for 2 GB of KV (at most 64), so no call finds its cache in L2.
  const int used_layers =
      static_cast<int>(std::clamp<size_t>((size_t{2} << 30) / layer_bytes + 1, 4, 64));
  uint8_t* pool;
  check(cudaMalloc(&pool, layer_bytes * used_layers), "KV pool");
  check(cudaMemset(pool, 0x11, layer_bytes * used_layers), "KV init");  // small finite values in every dtype

  const int n_tokens = batch * q_len;
  std::vector<int32_t> qs(batch + 1), cl(batch, ctx), bt(static_cast<size_t>(batch) * blocks_per_seq);
  std::vector<int64_t> slots(n_tokens);
  std::vector<int32_t> perm(blocks);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937(42));
  for (int s = 0; s < batch; ++s) {
    qs[s + 1] = qs[s] + q_len;
    for (int b = 0; b < blocks_per_seq; ++b) bt[s * blocks_per_seq + b] = perm[s * blocks_per_seq + b];
    for (int i = 0; i < q_len; ++i) {
      int pos = ctx - q_len + i;
      slots[s * q_len + i] = int64_t{bt[s * blocks_per_seq + pos / kBlock]} * kBlock + pos % kBlock;
    }
  }
  int32_t *d_qs, *d_cl, *d_bt;
  int64_t* d_slots;
  void *q, *k, *v, *out;
  check(cudaMalloc(&d_qs, qs.size() * 4), "alloc");
  check(cudaMalloc(&d_cl, cl.size() * 4), "alloc");
  check(cudaMalloc(&d_bt, bt.size() * 4), "alloc");
  check(cudaMalloc(&d_slots, slots.size() * 8), "alloc");
  const size_t qbytes = size_t{2} * n_tokens * kHeads * kHeadDim, kbytes = size_t{2} * n_tokens * kKvHeads * kHeadDim;
  check(cudaMalloc(&q, qbytes), "alloc");
  check(cudaMalloc(&k, kbytes), "alloc");
  check(cudaMalloc(&v, kbytes), "alloc");
  check(cudaMalloc(&out, qbytes), "alloc");
  cudaMemset(q, 0x22, qbytes);
  cudaMemset(k, 0x22, kbytes);
  cudaMemset(v, 0x22, kbytes);
  cudaMemcpy(d_qs, qs.data(), qs.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(d_cl, cl.data(), cl.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(d_bt, bt.data(), bt.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(d_slots, slots.data(), slots.size() * 8, cudaMemcpyHostToDevice);

  PagedAttentionArgs a;
  a.device = 0;
  a.act_dtype = APH_DTYPE_F16;
  a.q = q;
  a.k = k;
  a.v = v;
  a.out = out;
  a.layout = KvLayout{blocks, kBlock, kKvHeads, kHeadDim, kv};
  a.num_heads = kHeads;
  a.n_tokens = n_tokens;
  a.n_seqs = batch;
  a.query_start = d_qs;
  a.context_lens = d_cl;
  a.block_tables = d_bt;
  a.max_blocks_per_seq = blocks_per_seq;
  a.slot_mapping = d_slots;
  a.max_query_len = q_len;
  a.max_context_len = plan_ctx > 0 ? plan_ctx : ctx;
  a.short_contexts = short_contexts;
  a.softmax_scale = 1.0f / std::sqrt(float(kHeadDim));
  a.workspace = workspace;
  a.workspace_bytes = ws_bytes;
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  a.stream = stream;

  auto set_layer = [&](int l) {
    a.k_cache = pool + layer_bytes * l;
    a.v_cache = pool + layer_bytes * l + layer_bytes / 2;
  };
  // Warm up eagerly (also surfaces errors), then capture one pass over the layers.
  for (int l = 0; l < used_layers; ++l) {
    set_layer(l);
    aph::attention::paged_attention(a);
  }
  check(cudaStreamSynchronize(stream), "warmup");
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), "capture");
  for (int l = 0; l < used_layers; ++l) {
    set_layer(l);
    aph::attention::paged_attention(a);
  }
  check(cudaStreamEndCapture(stream, &graph), "end capture");
  check(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  check(cudaGraphLaunch(exec, stream), "graph warmup");
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  const int reps = 10;
  cudaEventRecord(e0, stream);
  for (int r = 0; r < reps; ++r) cudaGraphLaunch(exec, stream);
  cudaEventRecord(e1, stream);
  check(cudaEventSynchronize(e1), "timed run");
  float ms;
  cudaEventElapsedTime(&ms, e0, e1);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
  for (void* p : {static_cast<void*>(pool), static_cast<void*>(d_qs), static_cast<void*>(d_cl),
                  static_cast<void*>(d_bt), static_cast<void*>(d_slots), q, k, v, out}) {
    cudaFree(p);
  }

  Result r;
  r.us = ms * 1e3 / (reps * used_layers);
  r.kv_bytes = double(batch) * ctx * kKvHeads * kHeadDim * esz * 2;
  // Causal: query i of a sequence sees ctx - q_len + i + 1 keys; QK and PV, 2 flops per MAC.
  double keys = 0;
  for (int i = 0; i < q_len; ++i) keys += ctx - q_len + i + 1;
  r.flops = 4.0 * batch * kHeads * kHeadDim * keys;
  return r;
}

}  // namespace

int main() {
  try {
    cudaDeviceProp prop;
    check(cudaGetDeviceProperties(&prop, 0), "device");
    const double copy = copy_bandwidth_gbs();
    const double gemm = bf16_gemm_tflops();
    std::printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
    std::printf("ceilings: D2D copy %.0f GB/s (read+write), cuBLAS bf16 GEMM %.1f TFLOP/s\n", copy, gemm);
    std::printf("shape: %d q heads, %d kv heads, d=%d, block %d, act f16; graph of one call per layer\n\n",
                kHeads, kKvHeads, kHeadDim, kBlock);

    const size_t ws_bytes = aph::attention::paged_attention_workspace_bytes(64, kHeads, kHeadDim, 8192);
    void* ws;
    check(cudaMalloc(&ws, ws_bytes), "workspace");

    struct Case {
      const char* name;
      int batch, q_len, ctx;
      aph_dtype kv;
      int plan_ctx;
      bool short_contexts = false;
    };
    const Case cases[] = {
        {"decode b=1  ctx=576  kv=f16 ", 1, 1, 576, APH_DTYPE_F16, 0},
        {"decode b=1  ctx=576  kv=f16 plan=8192", 1, 1, 576, APH_DTYPE_F16, 8192},
        // The engine's lone sequence after a 512-token prompt: the cluster merge.
        {"decode b=1  ctx=576  kv=f16 plan=8192 short", 1, 1, 576, APH_DTYPE_F16, 8192, true},
        {"decode b=1  ctx=2048 kv=f16 plan=8192", 1, 1, 2048, APH_DTYPE_F16, 8192},
        {"decode b=4  ctx=576  kv=f16 plan=8192", 4, 1, 576, APH_DTYPE_F16, 8192},
        {"decode b=1  ctx=8192 kv=f16 ", 1, 1, 8192, APH_DTYPE_F16, 0},
        {"decode b=1  ctx=8192 kv=fp8 ", 1, 1, 8192, APH_DTYPE_F8_E4M3, 0},
        {"decode b=64 ctx=512  kv=f16 ", 64, 1, 512, APH_DTYPE_F16, 0},
        {"decode b=64 ctx=512  kv=fp8 ", 64, 1, 512, APH_DTYPE_F8_E4M3, 0},
        {"decode b=64 ctx=2048 kv=f16 ", 64, 1, 2048, APH_DTYPE_F16, 0},
        {"decode b=64 ctx=2048 kv=fp8 ", 64, 1, 2048, APH_DTYPE_F8_E4M3, 0},
        {"prefill 512 tokens   kv=f16 ", 1, 512, 512, APH_DTYPE_F16, 0},
        {"prefill 512 tokens   kv=fp8 ", 1, 512, 512, APH_DTYPE_F8_E4M3, 0},
    };
    double us_8k_f16 = 0, us_8k_fp8 = 0;
    // APH_BENCH_ONLY: only the cases whose name holds it (one shape for a profiler).
    const char* only = std::getenv("APH_BENCH_ONLY");
    for (const Case& c : cases) {
      if (only != nullptr && std::strstr(c.name, only) == nullptr) continue;
      Result r = run_case(c.batch, c.q_len, c.ctx, c.kv, ws, ws_bytes, c.plan_ctx, c.short_contexts);
      const double gbs = r.kv_bytes / (r.us * 1e-6) / 1e9;
      if (c.q_len == 1) {
        std::printf("%s %9.2f us  %7.0f GB/s KV  %5.1f%% of copy\n", c.name, r.us, gbs, 100.0 * gbs / copy);
      } else {
        const double tf = r.flops / (r.us * 1e-6) / 1e12;
        std::printf("%s %9.2f us  %7.1f TFLOP/s  %5.1f%% of bf16 GEMM\n", c.name, r.us, tf,
                    gemm > 0 ? 100.0 * tf / gemm : 0.0);
      }
      if (c.batch == 1 && c.ctx == 8192) (c.kv == APH_DTYPE_F16 ? us_8k_f16 : us_8k_fp8) = r.us;
    }
    std::printf("\n32-layer attention, b=1 ctx=8192: f16 %.3f ms/token, fp8 %.3f ms/token (target <= 0.15)\n",
                32 * us_8k_f16 * 1e-3, 32 * us_8k_fp8 * 1e-3);
    std::printf("fp8 vs f16 KV at 8k: %+.1f%% time (target <= +3%%)\n", 100.0 * (us_8k_fp8 / us_8k_f16 - 1.0));
    cudaFree(ws);
  } catch (const aph::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
