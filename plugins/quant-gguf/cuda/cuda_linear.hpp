// The CUDA side of a GGUF linear: weights uploaded in the padded device
// layout through the host's device_alloc; decode (M <= 32) runs the integer
// matvec kernels in slices of 8 rows, batches up to 128 rows the tile GEMM
// (tile_gemm.hpp), and prefill dequantizes W into a shared F16/BF16 scratch
// and calls cuBLAS (tensor cores). Float weights are stored
// in the activation dtype and always use cuBLAS. Without CUDA in the build,
// constructing one throws APH_ERR_UNSUPPORTED.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "aphrodite/plugin.h"
#include "plugins/quant-gguf/cuda/kernels.hpp"
#include "plugins/quant-gguf/cuda/tile_gemm.hpp"

namespace aph::gguf {

struct PluginState;

// Per-plugin CUDA resources shared by all linears: the cuBLAS handle and the
// scratch buffers, sized at linear_create so forward never allocates (the
// engine may capture forwards into CUDA graphs).
class CudaContext {
 public:
  explicit CudaContext(PluginState& state, int32_t device);
  ~CudaContext();
  // Grows the scratch buffers to at least these sizes (loader thread;
  // synchronizes `stream` before freeing an old buffer).
  void reserve(uint64_t act_bytes, uint64_t dequant_bytes, aph_stream stream, uint64_t partial_bytes = 0,
               uint64_t image_bytes = 0);
  void* act_scratch() const { return act_; }
  // The tile GEMM's scratch: the K splits' fp32 partial sums and x's images
  // for its wgmma form.
  cuda::TileGemmScratch tile_scratch() const;
  int sm_count() const { return sm_count_; }
  void* dequant_scratch() const { return dequant_; }
  void* cublas() const { return cublas_; }
  void* workspace() const { return workspace_; }
  static constexpr uint64_t kWorkspaceBytes = uint64_t{32} << 20;
  int32_t device() const { return device_; }

 private:
  // Reallocates buffer (have bytes) to want bytes if it is smaller; the
  // new one must be align-byte aligned. Throws Error naming `what`.
  void grow(void*& buffer, uint64_t& have, uint64_t want, uintptr_t align, const char* what);

  PluginState& state_;
  int32_t device_;
  void* cublas_ = nullptr;
  void* workspace_ = nullptr;
  void* act_ = nullptr;
  uint64_t act_bytes_ = 0;
  void* dequant_ = nullptr;
  uint64_t dequant_bytes_ = 0;
  void* partials_ = nullptr;
  uint64_t partial_bytes_ = 0;
  void* images_ = nullptr;
  uint64_t image_bytes_ = 0;
  int sm_count_ = 1;
};

// x = RMSNorm(residual + delta) * weight (the ABI's aph_rms_norm_input),
// device pointers; delta may be NULL, residual_out is written with delta.
struct RmsNormX {
  const void* residual = nullptr;
  const void* delta = nullptr;
  const float* weight = nullptr;
  float eps = 0.0f;
  void* residual_out = nullptr;
};

class CudaLinear {
 public:
  CudaLinear(PluginState& state, uint32_t ggml_type, int64_t k, int64_t n, const uint8_t* weight,
             const std::vector<float>& bias, int32_t device, int32_t act_dtype, aph_stream stream,
             const std::string& name);
  ~CudaLinear();
  void forward(const void* x, int64_t m, void* y, aph_stream stream);
  // ys[i] = x · group[i]W: the linears that take the matvec path (same k)
  // share one quantization of x, and runs of one type one launch (q/k/v).
  // forward's matvec path is this with a group of one.
  static void forward_shared(const std::vector<CudaLinear*>& group, const void* x, int64_t m,
                             const std::vector<void*>& ys, aph_stream stream);
  // y = (silu(gate) * up) · W for one row when the matvec can quantize the
  // product itself (MatvecX::up); false, with nothing launched, otherwise.
  bool forward_silu_mul(const void* gate, const void* up, int64_t m, void* y, aph_stream stream);
  // forward_shared of x = RMSNorm(in) for M <= kMatvecMaxM: at M = 1 with
  // short rows every matvec CTA norms and quantizes x itself, otherwise one
  // kernel norms and quantizes into the scratch (no norm kernel either way);
  // false, with nothing launched, when a linear does not take the matvec.
  static bool forward_shared_rms_norm(const std::vector<CudaLinear*>& group, const RmsNormX& in, int64_t m,
                                      const std::vector<void*>& ys, aph_stream stream);
  // forward_shared_rms_norm of group = {q, k, v} with q rotated by RoPE into
  // q_out and k, v rotated and stored into the KV cache by the matvecs
  // themselves (the ABI's linear_forward_qkv_rope_kv): M <= 8, every linear
  // on the matvec path, q and k where a warp holds a RoPE pair's rows;
  // false, with nothing launched, otherwise.
  static bool forward_qkv_rope_kv(const std::vector<CudaLinear*>& group, const RmsNormX& in, int64_t m, void* q_out,
                                  const cuda::RopeKv& kv, aph_stream stream);
  // Out-of-range ids give zero rows (ids live on the device; checking them
  // would need a synchronization).
  void get_rows(const int32_t* ids, int64_t m, void* out, aph_stream stream);
  uint64_t device_bytes() const { return weight_bytes_ + bias_bytes_; }

  // Largest M that takes the matvec path.
  static constexpr int64_t kMatvecMaxM = 32;

 private:
  // y[m, rows] (row stride n) = x · W[rows, k]ᵀ; rows < 0 means all n.
  void gemm(const void* w, const void* x, int64_t m, void* y, aph_stream stream, int64_t rows = -1);
  int64_t tile_rows() const;
  bool takes_matvec(int64_t m) const { return !float_weight_ && m <= matvec_max_m_; }
  // x quantized into the shared activation scratch (the matvecs read it).
  void quantize_x(const void* x, int64_t m, aph_stream stream) const;
  // Rows [r, r + 8) of the scratch as a matvec's x.
  cuda::MatvecX scratch_x(int64_t r, int64_t m) const;
  // One past the run of linears from group[i] that one launch takes (same
  // type, k and dtype, up to kMaxMatvecTargets, all on the matvec path).
  static size_t run_end(const std::vector<CudaLinear*>& group, size_t i, int64_t m);
  // Whether forward sends this m and x to the tile GEMM.
  bool takes_tile_gemm(int64_t m, const void* x) const;
  // One past the run of linears from group[i] that one tile GEMM launch
  // takes (APH_GGUF_TILE_GROUPS: same type, k and dtype, up to
  // cuda::kTileGemmMaxTargets); i + 1 when off.
  static size_t tile_run_end(const std::vector<CudaLinear*>& group, size_t i, int64_t m, const void* x);
  // group[i, end) as one tile GEMM launch; false, with nothing launched,
  // when the launch cannot take them (the caller runs them one by one).
  static bool launch_tile_run(const std::vector<CudaLinear*>& group, size_t i, size_t end, const void* x, int64_t m,
                              const std::vector<void*>& ys, aph_stream stream);
  // group[i, end) over rows [r, r + 8) of x: one launch; sinks (optional,
  // one per linear of group) say where each one's rows go.
  static void launch_run(const std::vector<CudaLinear*>& group, size_t i, size_t end, int64_t r, int64_t m,
                         const cuda::MatvecX& x, const std::vector<void*>& ys, aph_stream stream,
                         const cuda::RowSink* sinks = nullptr);
  // forward_shared_rms_norm with optional sinks and their RoPE/cache
  // arguments (forward_qkv_rope_kv).
  static bool forward_normed(const std::vector<CudaLinear*>& group, const RmsNormX& in, int64_t m,
                             const std::vector<void*>& ys, const cuda::RowSink* sinks, const cuda::RopeKv* kv,
                             aph_stream stream);

  PluginState& state_;
  std::string name_;
  uint32_t type_;
  int64_t k_, n_;
  int32_t device_;
  bool bf16_;
  bool float_weight_;
  // Largest M that takes the matvec path here (matvec_max_m in the .cpp).
  int64_t matvec_max_m_ = kMatvecMaxM;
  void* weight_ = nullptr;
  uint64_t weight_bytes_ = 0;
  float* bias_ = nullptr;
  uint64_t bias_bytes_ = 0;
};

}  // namespace aph::gguf
