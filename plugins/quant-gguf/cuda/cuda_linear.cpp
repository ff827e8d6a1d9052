#include "plugins/quant-gguf/cuda/cuda_linear.hpp"

#include <algorithm>
#include <cstdlib>

#include "core/common/error.hpp"
#include "core/common/env_flag.hpp"
#include "plugins/quant-gguf/plugin_state.hpp"

#ifdef APH_HAVE_CUDA
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "plugins/quant-gguf/cuda/device_layout.hpp"
#include "plugins/quant-gguf/cuda/kernels.hpp"
#include "plugins/quant-gguf/cuda/matvec_fast.hpp"
#include "plugins/quant-gguf/cuda/tile_gemm.hpp"
#endif

namespace aph::gguf {

#ifdef APH_HAVE_CUDA

namespace {

void check_cuda(int rc, const std::string& what) {
  if (rc != 0)
    throw Error(APH_ERR_DEVICE, what + ": " + cudaGetErrorString(static_cast<cudaError_t>(rc)));
}

void* alloc(PluginState& st, int32_t device, uint64_t bytes, const std::string& what) {
  aph_error err{};
  err.size = sizeof(err);
  void* p = st.services->device_alloc(st.services->host, device, bytes, &err);
  if (!p) throw Error(err.code ? static_cast<aph_status>(err.code) : APH_ERR_OUT_OF_MEMORY,
                      what + ": cannot allocate " + std::to_string(bytes) + " bytes: " + err.message);
  return p;
}

// Bytes of F16/BF16 a dequantized tile holds (APH_GGUF_TILE_MB, default 64):
// a smaller tile can stay in L2 between the dequantization and the GEMM, a
// larger one costs fewer launches.
int64_t tile_bytes() {
  static const int64_t bytes = [] {
    const long mb = env_int("APH_GGUF_TILE_MB", 64);
    return int64_t{mb > 0 && mb <= 65536 ? mb : 64} << 20;
  }();
  return bytes;
}

// APH_GGUF_TILE_GEMM=0: no tile GEMM; the matvecs take batches up to 32
// rows and the dequantize + cuBLAS path those of 33..128 (to compare).
bool tile_gemm_enabled() {
  static const bool on = env_flag("APH_GGUF_TILE_GEMM", true);
  return on;
}

// The smallest batch (9..33) that a tile GEMM takes, from the environment
// variable `name` (out of range: `fallback`).
long tile_min_m(const char* name, long fallback) {
  const long v = env_int(name, fallback);
  return v >= 9 && v <= CudaLinear::kMatvecMaxM + 1 ? v : fallback;
}

// The largest batch the matvecs take for a type; the tile GEMMs take the
// batches above it. The matvecs read W once per 8 rows of x, a tile GEMM once
// per 64. APH_GGUF_WGMMA_MIN_M (default 9) is where the wgmma tile GEMM
// starts for the types it takes. H100, 8B Q4_K_M, medians of 2 interleaved
// runs (stop 40): 32 sequences 5260.6 tok/s from 9 against 1092.1 from 33;
// 64 sequences 9167.8 against 8924.5 (steps while sequences join and leave
// have 9-32 rows). APH_GGUF_TILE_MIN_M (default 9) is the same for the
// mma.sync tile GEMM (other types, other GPUs). H100, 32 sequences, one run
// each (stop 40): the 135M in Q4_0 (a Q8_0 head) 16247.7 tok/s from 9
// against 7166.6 from 33; the 8B Q4_K_M with the wgmma GEMM off 3641.6
// against 1092.5.
int64_t matvec_max_m(uint32_t type) {
  static const long wgmma_min_m = tile_min_m("APH_GGUF_WGMMA_MIN_M", 9);
  static const long mma_sync_min_m = tile_min_m("APH_GGUF_TILE_MIN_M", 9);
  if (!tile_gemm_enabled()) return CudaLinear::kMatvecMaxM;
  return (cuda::tile_gemm_wgmma_takes(type) ? wgmma_min_m : mma_sync_min_m) - 1;
}

// APH_GGUF_TILE_GROUPS=1: the linears of a projection group (q/k/v,
// gate/up) that take the tile GEMM with one type run as one launch
// (launch_tile_gemm_multi): at 64 sequences on the 8B, q/k/v's 96 tiles split
// K 3 ways where q alone split it 5 and k and v 8, and gate/up's 448 tiles
// need no split where each alone split 2 (stop 20's trace: the splits' sums
// took 594 us of a 14.7 ms step). On by default since stop 28: H100, 8B
// Q4_K_M x64 with tensor-core decode: 5637.7 tok/s alone (median of 2),
// 6050.0 with groups (one run). APH_GGUF_TILE_GROUPS=0 launches each linear
// alone.
bool tile_groups_enabled() {
  static const bool on = env_flag("APH_GGUF_TILE_GROUPS", true);
  return on;
}

// At batch 1 each matvec CTA quantizes x itself (MatvecX::raw) instead of
// reading a copy a quantization kernel made; APH_GGUF_CTA_QUANT=0 launches
// that kernel again (to measure what the fusion gains).
// The MLP's silu(gate) * up quantized by one kernel for a matvec that reads
// a quantized x (the k-quants'), instead of silu_mul + quantization.
bool silu_quantization_enabled() {
  static const bool on = env_flag("APH_GGUF_SILU_QUANT", true);
  return on;
}

bool cta_quantization_enabled() {
  static const bool on = env_flag("APH_GGUF_CTA_QUANT", true);
  return on;
}

// APH_GGUF_QKV_EPILOGUE (docs/CONFIG.md, on by default): the q/k/v matvec
// rotates q and k and stores k and v into the KV cache itself
// (linear_forward_qkv_rope_kv); off, the host runs its rope + KV write
// kernel after the projections.
bool qkv_epilogue_enabled() {
  static const bool on = env_flag("APH_GGUF_QKV_EPILOGUE", true);
  return on;
}

// A batch-1 projection group after a residual add norms its x itself (no
// add_rms_norm launch); APH_GGUF_FUSED_NORM=0 leaves the norm to the host.
bool fused_norm_enabled() {
  static const bool on = env_flag("APH_GGUF_FUSED_NORM", true);
  return on;
}

uint64_t align256(uint64_t v) { return (v + 255) / 256 * 256; }

// Activation scratch for m rows of k: int8 codes, scales per 32, sums per 16,
// each section 256-byte aligned (the kernels use 16- and 8-byte loads).
struct ActLayout {
  uint64_t xd, xs, total;
};
ActLayout act_layout(int64_t m, int64_t k) {
  ActLayout l{};
  l.xd = align256(static_cast<uint64_t>(m * k));
  l.xs = align256(l.xd + m * (k / 32) * 4);
  l.total = l.xs + m * (k / 16) * 4;
  return l;
}

}  // namespace

CudaContext::CudaContext(PluginState& state, int32_t device) : state_(state), device_(device) {
  check_cuda(cudaSetDevice(device), "cudaSetDevice");
  cublasHandle_t h = nullptr;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) throw Error(APH_ERR_DEVICE, "cublasCreate failed");
  cublas_ = h;
  // A workspace of our own, so cuBLAS allocates nothing inside a captured graph.
  workspace_ = alloc(state_, device_, kWorkspaceBytes, "GGUF cuBLAS workspace");
  check_cuda(static_cast<int>(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device)), "SM count");
}

CudaContext::~CudaContext() {
  if (cublas_) cublasDestroy(static_cast<cublasHandle_t>(cublas_));
  if (workspace_) state_.services->device_free(state_.services->host, device_, workspace_);
  if (act_) state_.services->device_free(state_.services->host, device_, act_);
  if (dequant_) state_.services->device_free(state_.services->host, device_, dequant_);
  if (partials_) state_.services->device_free(state_.services->host, device_, partials_);
  if (images_) state_.services->device_free(state_.services->host, device_, images_);
}

void CudaContext::reserve(uint64_t act, uint64_t dequant, aph_stream stream, uint64_t partial, uint64_t image) {
  if (act <= act_bytes_ && dequant <= dequant_bytes_ && partial <= partial_bytes_ && image <= image_bytes_) return;
  check_cuda(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), "cudaStreamSynchronize");
  grow(act_, act_bytes_, act, 256, "GGUF activation scratch");
  grow(dequant_, dequant_bytes_, dequant, 1, "GGUF dequantization scratch");
  grow(partials_, partial_bytes_, partial, 1, "GGUF tile GEMM partial sums");
  grow(images_, image_bytes_, image, 16, "GGUF tile GEMM x images");
}

void CudaContext::grow(void*& buffer, uint64_t& have, uint64_t want, uintptr_t align, const char* what) {
  if (want <= have) return;
  if (buffer) state_.services->device_free(state_.services->host, device_, buffer);
  buffer = nullptr;
  buffer = alloc(state_, device_, want, what);
  if (reinterpret_cast<uintptr_t>(buffer) % align != 0)
    throw Error(APH_ERR_INTERNAL, std::string(what) + " is not " + std::to_string(align) + "-byte aligned");
  have = want;
}

cuda::TileGemmScratch CudaContext::tile_scratch() const {
  cuda::TileGemmScratch s;
  s.partials = static_cast<float*>(partials_);
  s.partial_bytes = partials_ ? partial_bytes_ : 0;
  s.x_image = images_;
  s.x_image_bytes = images_ ? image_bytes_ : 0;
  return s;
}

CudaLinear::CudaLinear(PluginState& state, uint32_t ggml_type, int64_t k, int64_t n,
                       const uint8_t* weight, const std::vector<float>& bias, int32_t device,
                       int32_t act_dtype, aph_stream stream, const std::string& name)
    : state_(state), name_(name), type_(ggml_type), k_(k), n_(n), device_(device),
      bf16_(act_dtype == APH_DTYPE_BF16) {
  float_weight_ = ggml_type == 0 || ggml_type == 1 || ggml_type == 30;
  DeviceLayout layout{};
  if (!float_weight_ && (!device_layout(ggml_type, &layout) || !cuda::has_kernels(ggml_type)))
    throw Error(APH_ERR_UNSUPPORTED, "linear " + name_ + ": ggml type " + std::to_string(ggml_type) +
                                         " has no CUDA kernel");
  if (!state.cuda) state.cuda = std::make_unique<CudaContext>(state, device);
  if (state.cuda->device() != device)
    throw Error(APH_ERR_UNSUPPORTED, "linear " + name_ + ": the GGUF plugin drives one CUDA device");
  check_cuda(cudaSetDevice(device), "cudaSetDevice");
  auto s = static_cast<cudaStream_t>(stream);
  try {
    if (float_weight_) {
      const uint64_t elem = ggml_type == 0 ? 4 : 2;
      weight_bytes_ = static_cast<uint64_t>(n) * k * 2;
      weight_ = alloc(state, device, weight_bytes_, "linear " + name_);
      void* raw = alloc(state, device, static_cast<uint64_t>(n) * k * elem, "linear " + name_);
      int rc = static_cast<int>(cudaMemcpyAsync(raw, weight, n * k * elem, cudaMemcpyHostToDevice, s));
      if (rc == 0) rc = cuda::launch_convert(raw, ggml_type, n * k, weight_, bf16_, stream);
      if (rc == 0) rc = static_cast<int>(cudaStreamSynchronize(s));
      state.services->device_free(state.services->host, device, raw);
      check_cuda(rc, "linear " + name_ + ": upload");
    } else {
      const uint64_t blocks_per_row = static_cast<uint64_t>(k / layout.block_elems);
      weight_bytes_ = static_cast<uint64_t>(n) * device_row_bytes(layout, blocks_per_row);
      std::vector<uint8_t> host(weight_bytes_);
      repack_rows(layout, weight, static_cast<uint64_t>(n), blocks_per_row, host.data());
      weight_ = alloc(state, device, weight_bytes_, "linear " + name_);
      // The kernels use up to 16-byte loads inside blocks.
      if (reinterpret_cast<uintptr_t>(weight_) % 16 != 0)
        throw Error(APH_ERR_INTERNAL, "linear " + name_ + ": device_alloc returned memory not aligned to 16 bytes");
      check_cuda(static_cast<int>(cudaMemcpyAsync(weight_, host.data(), weight_bytes_,
                                                  cudaMemcpyHostToDevice, s)),
                 "linear " + name_ + ": upload");
      check_cuda(static_cast<int>(cudaStreamSynchronize(s)), "linear " + name_ + ": upload");
      state.cuda->reserve(act_layout(kMatvecMaxM, k).total, static_cast<uint64_t>(tile_rows()) * k * 2, stream,
                          cuda::tile_gemm_workspace_bytes(n, k, state.cuda->sm_count()),
                          cuda::tile_gemm_image_bytes(k));
      matvec_max_m_ = matvec_max_m(ggml_type);
    }
    if (!bias.empty()) {
      bias_bytes_ = bias.size() * sizeof(float);
      bias_ = static_cast<float*>(alloc(state, device, bias_bytes_, "linear " + name_ + " bias"));
      check_cuda(static_cast<int>(cudaMemcpyAsync(bias_, bias.data(), bias_bytes_,
                                                  cudaMemcpyHostToDevice, s)),
                 "linear " + name_ + ": bias upload");
      check_cuda(static_cast<int>(cudaStreamSynchronize(s)), "linear " + name_ + ": bias upload");
    }
  } catch (...) {
    if (weight_) state.services->device_free(state.services->host, device, weight_);
    if (bias_) state.services->device_free(state.services->host, device, bias_);
    throw;
  }
}

CudaLinear::~CudaLinear() {
  if (weight_) state_.services->device_free(state_.services->host, device_, weight_);
  if (bias_) state_.services->device_free(state_.services->host, device_, bias_);
}

int64_t CudaLinear::tile_rows() const {
  // About tile_bytes() of F16/BF16 per tile, in multiples of 128 rows.
  const int64_t rows = std::max<int64_t>(128, tile_bytes() / (2 * k_) / 128 * 128);
  return std::min(rows, n_);
}

void CudaLinear::gemm(const void* w, const void* x, int64_t m, void* y, aph_stream stream, int64_t rows) {
  if (rows < 0) rows = n_;
  auto h = static_cast<cublasHandle_t>(state_.cuda->cublas());
  // cublasSetStream resets the workspace, so set ours after it.
  if (cublasSetStream(h, static_cast<cudaStream_t>(stream)) != CUBLAS_STATUS_SUCCESS ||
      cublasSetWorkspace(h, state_.cuda->workspace(), CudaContext::kWorkspaceBytes) != CUBLAS_STATUS_SUCCESS)
    throw Error(APH_ERR_DEVICE, "linear " + name_ + ": cublasSetStream/cublasSetWorkspace failed");
  const float alpha = 1.0f, beta = 0.0f;
  const cudaDataType_t dt = bf16_ ? CUDA_R_16BF : CUDA_R_16F;
  // Row-major y[m,n] = x[m,k] · W[n,k]ᵀ is column-major yᵀ = W · xᵀ.
  // Rows [r0, r0+rows) of W fill columns [r0, r0+rows) of y (ldc stays n).
  cublasStatus_t st = cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(rows),
                                   static_cast<int>(m), static_cast<int>(k_), &alpha, w, dt,
                                   static_cast<int>(k_), x, dt, static_cast<int>(k_), &beta, y, dt,
                                   static_cast<int>(n_), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (st != CUBLAS_STATUS_SUCCESS)
    throw Error(APH_ERR_DEVICE, "linear " + name_ + ": cublasGemmEx failed (" + std::to_string(st) + ")");
}

void CudaLinear::forward(const void* x, int64_t m, void* y, aph_stream stream) {
  const std::string what = "linear " + name_;
  if (float_weight_) {
    gemm(weight_, x, m, y, stream);
    if (bias_) check_cuda(cuda::launch_add_bias(y, bf16_, m, n_, bias_, stream), what);
    return;
  }
  const auto* w = static_cast<const uint8_t*>(weight_);
  if (takes_matvec(m)) {
    forward_shared({this}, x, m, {y}, stream);
    return;
  }
  if (takes_tile_gemm(m, x)) {
    check_cuda(cuda::launch_tile_gemm(type_, w, n_, k_, x, m, bias_, y, bf16_, state_.cuda->tile_scratch(),
                                      state_.cuda->sm_count(), stream),
               what);
    return;
  }
  // Prefill: dequantize W in tiles of rows into the shared scratch and run a
  // GEMM per tile into the matching columns of y.
  void* wf = state_.cuda->dequant_scratch();
  const int64_t tile = tile_rows();
  for (int64_t r0 = 0; r0 < n_; r0 += tile) {
    const int64_t rows = std::min(tile, n_ - r0);
    const uint8_t* wt = w + static_cast<uint64_t>(r0) * (weight_bytes_ / n_);
    check_cuda(cuda::launch_dequant_rows(type_, wt, rows, k_, nullptr, rows, wf, bf16_, nullptr, stream), what);
    gemm(wf, x, m, static_cast<uint8_t*>(y) + r0 * 2, stream, rows);
  }
  if (bias_) check_cuda(cuda::launch_add_bias(y, bf16_, m, n_, bias_, stream), what);
}

bool CudaLinear::takes_tile_gemm(int64_t m, const void* x) const {
  return !float_weight_ && !takes_matvec(m) && m <= cuda::kTileGemmMaxM && tile_gemm_enabled() &&
         reinterpret_cast<uintptr_t>(x) % 16 == 0;
}

size_t CudaLinear::tile_run_end(const std::vector<CudaLinear*>& group, size_t i, int64_t m, const void* x) {
  const CudaLinear& l = *group[i];
  size_t end = i + 1;
  if (!tile_groups_enabled() || !l.takes_tile_gemm(m, x)) return end;
  while (end < group.size() && end - i < static_cast<size_t>(cuda::kTileGemmMaxTargets) &&
         group[end]->takes_tile_gemm(m, x) && group[end]->type_ == l.type_ && group[end]->k_ == l.k_ &&
         group[end]->bf16_ == l.bf16_)
    ++end;
  return end;
}

bool CudaLinear::launch_tile_run(const std::vector<CudaLinear*>& group, size_t i, size_t end, const void* x,
                                 int64_t m, const std::vector<void*>& ys, aph_stream stream) {
  const CudaLinear& l = *group[i];
  cuda::TileGemmTarget targets[cuda::kTileGemmMaxTargets];
  for (size_t j = i; j < end; ++j)
    targets[j - i] = {static_cast<const uint8_t*>(group[j]->weight_), group[j]->n_, group[j]->bias_, ys[j]};
  const int rc = cuda::launch_tile_gemm_multi(l.type_, targets, static_cast<int>(end - i), l.k_, x, m, l.bf16_,
                                              l.state_.cuda->tile_scratch(), l.state_.cuda->sm_count(), stream);
  if (rc == static_cast<int>(cudaErrorNotSupported)) return false;
  check_cuda(rc, "linear " + l.name_ + " (tile GEMM with the " + std::to_string(end - i - 1) + " after it)");
  return true;
}

void CudaLinear::quantize_x(const void* x, int64_t m, aph_stream stream) const {
  const ActLayout l = act_layout(m, k_);
  auto* xq = static_cast<int8_t*>(state_.cuda->act_scratch());
  check_cuda(cuda::launch_quantize_act(x, nullptr, bf16_, m, k_, xq, reinterpret_cast<float*>(xq + l.xd),
                                       reinterpret_cast<float*>(xq + l.xs), stream),
             "linear " + name_ + ": quantize x");
}

cuda::MatvecX CudaLinear::scratch_x(int64_t r, int64_t m) const {
  const ActLayout a = act_layout(m, k_);
  const auto* xq = static_cast<const int8_t*>(state_.cuda->act_scratch());
  cuda::MatvecX x;
  x.q = xq + r * k_;
  x.d = reinterpret_cast<const float*>(xq + a.xd) + r * (k_ / 32);
  x.s = reinterpret_cast<const float*>(xq + a.xs) + r * (k_ / 16);
  return x;
}

size_t CudaLinear::run_end(const std::vector<CudaLinear*>& group, size_t i, int64_t m) {
  const CudaLinear& l = *group[i];
  size_t end = i + 1;
  while (end < group.size() && end - i < static_cast<size_t>(cuda::kMaxMatvecTargets) &&
         group[end]->takes_matvec(m) && group[end]->type_ == l.type_ && group[end]->k_ == l.k_ &&
         group[end]->bf16_ == l.bf16_)
    ++end;
  return end;
}

void CudaLinear::launch_run(const std::vector<CudaLinear*>& group, size_t i, size_t end, int64_t r, int64_t m,
                            const cuda::MatvecX& x, const std::vector<void*>& ys, aph_stream stream,
                            const cuda::RowSink* sinks) {
  const CudaLinear& l = *group[i];
  cuda::MatvecTarget targets[cuda::kMaxMatvecTargets];
  for (size_t j = i; j < end; ++j) {
    const CudaLinear& t = *group[j];
    void* y = ys[j] ? static_cast<uint8_t*>(ys[j]) + r * t.n_ * 2 : nullptr;  // cache sinks write no y
    targets[j - i] = {static_cast<const uint8_t*>(t.weight_), t.n_, t.bias_, y,
                      sinks ? sinks[j] : cuda::RowSink::kY};
  }
  check_cuda(cuda::launch_matvec_multi(l.type_, targets, static_cast<int>(end - i), l.k_, x,
                                       std::min<int64_t>(8, m - r), l.bf16_, l.state_.cuda->sm_count(), stream),
             "linear " + l.name_ + " (with the " + std::to_string(end - i - 1) + " after it)");
}

void CudaLinear::forward_shared(const std::vector<CudaLinear*>& group, const void* x, int64_t m,
                                const std::vector<void*>& ys, aph_stream stream) {
  // The quantized x lives in the context's one scratch: it stays valid while
  // only matvecs of the same k run after it on this stream.
  const CudaLinear* quantized_by = nullptr;
  for (size_t i = 0; i < group.size();) {
    CudaLinear& l = *group[i];
    if (!l.takes_matvec(m)) {
      const size_t end = tile_run_end(group, i, m, x);
      if (end - i > 1 && launch_tile_run(group, i, end, x, m, ys, stream)) {
        i = end;
        continue;
      }
      l.forward(x, m, ys[i], stream);
      ++i;
      continue;
    }
    const bool raw = m == 1 && cta_quantization_enabled() && cuda::fits_in_cta_quantization(l.type_, l.k_) &&
                     reinterpret_cast<uintptr_t>(x) % 16 == 0;
    if (!raw && (!quantized_by || quantized_by->k_ != l.k_ || quantized_by->bf16_ != l.bf16_)) {
      l.quantize_x(x, m, stream);
      quantized_by = &l;
    }
    const size_t end = run_end(group, i, m);
    for (int64_t r = 0; r < m; r += 8) {
      cuda::MatvecX xr;
      if (raw) {
        xr.raw = x;
      } else {
        xr = l.scratch_x(r, m);
      }
      launch_run(group, i, end, r, m, xr, ys, stream);
    }
    i = end;
  }
}

bool CudaLinear::forward_shared_rms_norm(const std::vector<CudaLinear*>& group, const RmsNormX& in, int64_t m,
                                         const std::vector<void*>& ys, aph_stream stream) {
  return forward_normed(group, in, m, ys, nullptr, nullptr, stream);
}

bool CudaLinear::forward_qkv_rope_kv(const std::vector<CudaLinear*>& group, const RmsNormX& in, int64_t m,
                                     void* q_out, const cuda::RopeKv& kv, aph_stream stream) {
  if (!qkv_epilogue_enabled() || group.size() != 3 || m < 1 || m > 8) return false;
  const cuda::RowSink sinks[3] = {cuda::RowSink::kRopeQ, cuda::RowSink::kRopeK, cuda::RowSink::kCacheV};
  return forward_normed(group, in, m, {q_out, nullptr, nullptr}, sinks, &kv, stream);
}

bool CudaLinear::forward_normed(const std::vector<CudaLinear*>& group, const RmsNormX& in, int64_t m,
                                const std::vector<void*>& ys, const cuda::RowSink* sinks, const cuda::RopeKv* kv,
                                aph_stream stream) {
  const CudaLinear& first = *group[0];
  if (!fused_norm_enabled() || m < 1 || first.k_ % 32 != 0) return false;
  for (const CudaLinear* l : group)
    if (!l->takes_matvec(m) || l->k_ != first.k_ || l->bf16_ != first.bf16_) return false;
  for (const void* p : {in.residual, in.delta, static_cast<const void*>(in.residual_out),
                        static_cast<const void*>(in.weight)})
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
  bool raw = m == 1 && cta_quantization_enabled();
  for (const CudaLinear* l : group) raw = raw && cuda::fits_in_cta_quantization(l->type_, l->k_);
  // A rotating sink needs both rows of a pair in one warp: the k-quants'
  // fast matvec (launch_matvec_multi). The raw-x matvec of the other types
  // could hold a pair at two rows a warp, but that measured slower on the
  // 135M (H100, Q4_0, decode512, medians of 3: 1673.8 tok/s with the
  // epilogue against 1694.9 without; two rows a warp alone, no epilogue,
  // 1724.9 against 1739.4), so it keeps the host's KV write.
  for (size_t i = 0; sinks && i < group.size(); ++i)
    if (raw || (cuda::sink_pairs_rows(sinks[i]) && !cuda::has_fast_matvec(group[i]->type_))) return false;
  if (!raw) {  // one kernel norms and quantizes x for every launch after it
    const ActLayout a = act_layout(m, first.k_);
    auto* xq = static_cast<int8_t*>(first.state_.cuda->act_scratch());
    check_cuda(cuda::launch_rms_norm_quantize_act(in.residual, in.delta, in.weight, in.eps, in.residual_out,
                                                  first.bf16_, m, first.k_, xq, reinterpret_cast<float*>(xq + a.xd),
                                                  reinterpret_cast<float*>(xq + a.xs), stream),
               "linear " + first.name_ + ": RMSNorm and quantize x");
  }
  bool stored = false;  // residual_out: by the first raw launch only
  for (size_t i = 0; i < group.size();) {
    const size_t end = run_end(group, i, m);
    for (int64_t r = 0; r < m; r += 8) {
      cuda::MatvecX x;
      if (raw) {
        x.raw = in.residual;
        x.delta = in.delta;
        x.norm_w = in.weight;
        x.norm_eps = in.eps;
        x.residual_out = stored ? nullptr : in.residual_out;
        stored = true;
      } else {
        x = group[i]->scratch_x(r, m);
      }
      if (kv) {
        x.kv = *kv;
        // H100, 8B Q4_K_M decode512 (medians of 2): 390.9 tok/s released
        // against 382.6 not (384.5 without the epilogue).
        x.release_dependents = end == group.size() && r + 8 >= m;
      }
      launch_run(group, i, end, r, m, x, ys, stream, sinks);
    }
    i = end;
  }
  return true;
}

bool CudaLinear::forward_silu_mul(const void* gate, const void* up, int64_t m, void* y, aph_stream stream) {
  if (m != 1 || !takes_matvec(m) || k_ % 32 != 0 || reinterpret_cast<uintptr_t>(gate) % 16 != 0 ||
      reinterpret_cast<uintptr_t>(up) % 16 != 0)
    return false;
  cuda::MatvecX x;
  const std::string what = "linear " + name_ + " (silu * up)";
  if (cta_quantization_enabled() && cuda::fits_in_cta_quantization(type_, k_)) {
    x.raw = gate;  // every matvec CTA quantizes silu(gate) * up itself
    x.up = up;
  } else if (silu_quantization_enabled()) {
    // One kernel quantizes silu(gate) * up for the matvec (in place of the
    // host's silu_mul kernel and the quantization kernel after it).
    const ActLayout l = act_layout(1, k_);
    auto* xq = static_cast<int8_t*>(state_.cuda->act_scratch());
    check_cuda(cuda::launch_quantize_act(gate, up, bf16_, 1, k_, xq, reinterpret_cast<float*>(xq + l.xd),
                                         reinterpret_cast<float*>(xq + l.xs), stream),
               what);
    x = scratch_x(0, 1);
  } else {
    return false;
  }
  const cuda::MatvecTarget target{static_cast<const uint8_t*>(weight_), n_, bias_, y};
  check_cuda(cuda::launch_matvec_multi(type_, &target, 1, k_, x, 1, bf16_, state_.cuda->sm_count(), stream), what);
  return true;
}

void CudaLinear::get_rows(const int32_t* ids, int64_t m, void* out, aph_stream stream) {
  const std::string what = "linear " + name_ + " get_rows";
  if (float_weight_) {
    check_cuda(cuda::launch_gather_rows(weight_, n_, k_, ids, m, out, stream), what);
    return;
  }
  check_cuda(cuda::launch_dequant_rows(type_, static_cast<const uint8_t*>(weight_), n_, k_, ids, m,
                                       out, bf16_, nullptr, stream),
             what);
}

#else  // CPU-only build

CudaContext::CudaContext(PluginState& state, int32_t device) : state_(state), device_(device) {
  throw Error(APH_ERR_UNSUPPORTED, "the GGUF plugin was built without CUDA");
}
CudaContext::~CudaContext() = default;
void CudaContext::reserve(uint64_t, uint64_t, aph_stream, uint64_t, uint64_t) {}
cuda::TileGemmScratch CudaContext::tile_scratch() const { return {}; }

CudaLinear::CudaLinear(PluginState& state, uint32_t, int64_t, int64_t, const uint8_t*,
                       const std::vector<float>&, int32_t, int32_t, aph_stream, const std::string& name)
    : state_(state), name_(name), type_(0), k_(0), n_(0), device_(0), bf16_(false), float_weight_(false) {
  throw Error(APH_ERR_UNSUPPORTED, "linear " + name + ": the GGUF plugin was built without CUDA");
}
CudaLinear::~CudaLinear() = default;
void CudaLinear::forward(const void*, int64_t, void*, aph_stream) {}
void CudaLinear::forward_shared(const std::vector<CudaLinear*>&, const void*, int64_t, const std::vector<void*>&,
                                aph_stream) {}
void CudaLinear::quantize_x(const void*, int64_t, aph_stream) const {}
bool CudaLinear::forward_silu_mul(const void*, const void*, int64_t, void*, aph_stream) { return false; }
bool CudaLinear::forward_qkv_rope_kv(const std::vector<CudaLinear*>&, const RmsNormX&, int64_t, void*,
                                     const cuda::RopeKv&, aph_stream) {
  return false;
}
bool CudaLinear::forward_normed(const std::vector<CudaLinear*>&, const RmsNormX&, int64_t, const std::vector<void*>&,
                                const cuda::RowSink*, const cuda::RopeKv*, aph_stream) {
  return false;
}
bool CudaLinear::forward_shared_rms_norm(const std::vector<CudaLinear*>&, const RmsNormX&, int64_t,
                                         const std::vector<void*>&, aph_stream) {
  return false;
}
cuda::MatvecX CudaLinear::scratch_x(int64_t, int64_t) const { return {}; }
size_t CudaLinear::run_end(const std::vector<CudaLinear*>&, size_t i, int64_t) { return i + 1; }
void CudaLinear::launch_run(const std::vector<CudaLinear*>&, size_t, size_t, int64_t, int64_t, const cuda::MatvecX&,
                            const std::vector<void*>&, aph_stream, const cuda::RowSink*) {}
void CudaLinear::get_rows(const int32_t*, int64_t, void*, aph_stream) {}
void CudaLinear::gemm(const void*, const void*, int64_t, void*, aph_stream, int64_t) {}
int64_t CudaLinear::tile_rows() const { return 0; }

#endif

}  // namespace aph::gguf
