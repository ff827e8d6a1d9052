// One quantized linear layer behind the ABI: validates descriptors and
// tensors, then runs the CPU or the CUDA implementation.
#pragma once

#include <memory>
#include <vector>

#include "aphrodite/quant.h"
#include "plugins/quant-gguf/cpu/linear_cpu.hpp"

namespace aph::gguf {

struct PluginState;
class CudaLinear;
struct RmsNormX;

class Linear {
 public:
  Linear(PluginState& state, const aph_linear_desc& desc);
  ~Linear();

  void forward(const aph_tensor& x, aph_tensor& y, aph_stream stream);
  // ys[i] = x · group[i]: on CUDA, linears that take the matvec path share
  // one quantization of x.
  static void forward_shared(const std::vector<Linear*>& group, const aph_tensor& x, aph_tensor* ys,
                             aph_stream stream);
  // y = (silu(gate) * up) · W (the ABI's linear_forward_silu_mul): true when
  // done, false (nothing launched) when the caller must do it in two steps.
  bool forward_silu_mul(const aph_tensor& gate, const aph_tensor& up, aph_tensor& y, aph_stream stream);
  // ys[i] = RMSNorm(residual + delta) · group[i] (the ABI's
  // linear_forward_shared_rms_norm): true when done on CUDA with the norm
  // folded into x's quantization, false (nothing launched) otherwise.
  static bool forward_shared_rms_norm(const std::vector<Linear*>& group, const aph_rms_norm_input& in, aph_tensor* ys,
                                      aph_stream stream);
  // group = {q, k, v} of x = RMSNorm(residual + delta), q rotated into q_out
  // and k, v rotated and stored into the KV cache (the ABI's
  // linear_forward_qkv_rope_kv): true when done on CUDA, false (nothing
  // launched) otherwise.
  static bool forward_qkv_rope_kv(const std::vector<Linear*>& group, const aph_rms_norm_input& in, aph_tensor& q_out,
                                  const aph_rope_kv_store& kv, aph_stream stream);
  void get_rows(const aph_tensor& ids, aph_tensor& out, aph_stream stream);
  uint64_t device_bytes() const;

 private:
  // The group's norm input checked against its first linear (and the group
  // against each other), as device pointers.
  static RmsNormX checked_norm_input(const std::vector<Linear*>& group, const aph_rms_norm_input& in);
  // Every linear's CUDA side, or empty when any runs on the CPU.
  static std::vector<CudaLinear*> cuda_parts(const std::vector<Linear*>& group);

  std::string name_;
  int32_t device_;
  int32_t act_dtype_;
  int64_t k_, n_;
  std::unique_ptr<CpuLinear> cpu_;
  std::unique_ptr<CudaLinear> cuda_;
  ParallelRows parallel_;  // the host's worker threads, when it offers them
};

// The ggml type of a weight part: its format_type when dtype is -1, or the
// ggml equivalent of a plain F32/F16/BF16 dtype. Throws for anything else.
uint32_t ggml_type_of(const aph_weight_info& w, const std::string& layer);

}  // namespace aph::gguf
