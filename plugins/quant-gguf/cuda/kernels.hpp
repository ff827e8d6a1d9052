// Launchers of the GGUF CUDA kernels. Plain C++ (no CUDA headers needed by
// callers); every function launches on `stream` only and returns a
// cudaError_t value (0 = success). Weights are in the padded device layout
// (device_layout.hpp); activations are F16 (bf16 = false) or BF16.
#pragma once

#include <cstdint>

namespace aph::gguf::cuda {

bool has_kernels(uint32_t ggml_type);

// x [m, k] -> int8 codes [m, k], scales per 32 [m, k/32], scaled sums per 16
// [m, k/16] (the activation side of the integer dot products). With up
// (optional, [m, k]), x = silu(x) * up, each product rounded to the
// activation dtype as the core's silu_mul stores it. k a multiple of 32.
int launch_quantize_act(const void* x, const void* up, bool bf16, int64_t m, int64_t k, int8_t* xq, float* xd,
                        float* xs, void* stream);
// The same for x = RMSNorm(residual + delta) * w (delta may be NULL), one CTA
// a row; with residual_out, residual + delta is stored there too.
int launch_rms_norm_quantize_act(const void* residual, const void* delta, const float* w, float eps,
                                 void* residual_out, bool bf16, int64_t m, int64_t k, int8_t* xq, float* xd,
                                 float* xs, void* stream);

// Where a matvec's output rows go (linear_forward_qkv_rope_kv, the ABI's
// aph_rope_kv_store): y as computed; q rows rotated into y; k rows rotated
// into the K cache; v rows into the V cache (RopeKv).
enum class RowSink : int32_t { kY = 0, kRopeQ, kRopeK, kCacheV };
constexpr bool sink_pairs_rows(RowSink s) { return s == RowSink::kRopeQ || s == RowSink::kRopeK; }

// The rotation and the cache slots of RowSink's q/k/v targets, device
// pointers (aph_rope_kv_store). Token i is x's row i.
struct RopeKv {
  const int32_t* positions = nullptr;
  const float* inv_freq = nullptr;
  int32_t head_dim = 0, rotary_dim = 0;
  float mscale = 1.0f;
  const int64_t* slots = nullptr;
  int64_t total_slots = 0;
  uint8_t* k_cache = nullptr;
  uint8_t* v_cache = nullptr;
  int64_t kv_width = 0;  // a cache slot's elements: k and v rows
  int32_t kv_dtype = 0;  // aph_dtype: F16, BF16, F8_E4M3, F8_E5M2
  float k_scale = 1.0f, v_scale = 1.0f;
};

// One weight matrix of a multi-target matvec: y[m, n] = x · Wᵀ (+ bias).
// A sink that pairs rows (rows 2i and 2i + 1 rotate together) takes a
// launch whose warps hold both rows of a pair: the k-quants' fast matvec at
// two rows a warp. The raw-x form takes RowSink::kY only.
struct MatvecTarget {
  const uint8_t* w;
  int64_t n;
  const float* bias;
  void* y;
  RowSink sink = RowSink::kY;
};
constexpr int kMaxMatvecTargets = 4;

// The x a matvec reads: either quantized by launch_quantize_act (q, d, s),
// or, for m == 1, the F16/BF16 row itself (raw), which every CTA quantizes
// into its shared memory: no quantization launch and no wait for one before
// the weights stream. Raw needs 16-byte alignment and
// fits_in_cta_quantization(type, k) (the generic matvec repeats the
// quantization in every CTA: short rows only).
// With raw, `up` (optional) makes x = silu(raw) * up, each product rounded
// to the activation dtype (the down projection reading gate and up); or
// norm_w makes x = RMSNorm(raw + delta) * norm_w (delta optional), as the
// core's add_rms_norm rounds it, and the CTA with blockIdx.x == 0 stores
// raw + delta to residual_out (when set).
struct MatvecX {
  const int8_t* q = nullptr;
  const float* d = nullptr;
  const float* s = nullptr;
  const void* raw = nullptr;
  const void* up = nullptr;
  const void* delta = nullptr;
  const float* norm_w = nullptr;
  float norm_eps = 0.0f;
  void* residual_out = nullptr;
  // Raw x: each CTA loads its first rows' weights into registers before it
  // waits for x's producer (APH_GGUF_PRELOAD=0: into L2 only). Set by
  // launch_matvec_multi.
  bool preload = true;
  // For the targets whose sink is not RowSink::kY.
  RopeKv kv;
  // The last launch before the attention (linear_forward_qkv_rope_kv): its
  // CTAs let the next kernel launch at once, so that the attention's first
  // KV tile (cached tokens only) streams in while this matvec finishes, as
  // it did behind the host's KV write kernel.
  bool release_dependents = false;
};
bool fits_in_cta_quantization(uint32_t ggml_type, int64_t k);

// Up to kMaxMatvecTargets matrices of one type and one k that read the same
// x, in one launch (q/k/v, gate and up: launches and grid tails fewer),
// m <= 8. sm_count sizes the grid of the raw-x form.
int launch_matvec_multi(uint32_t ggml_type, const MatvecTarget* targets, int count, int64_t k,
                        const MatvecX& x, int64_t m, bool bf16, int sm_count, void* stream);

// y[m, n] = W · x (+ bias) for m <= 8, reading W once.
int launch_matvec(uint32_t ggml_type, const uint8_t* w, int64_t n, int64_t k, const MatvecX& x,
                  int64_t m, const float* bias, void* y, bool bf16, int sm_count, void* stream);

// out[i, :] = W[rows[i], :] for i < m (rows == nullptr: row i), as F16/BF16.
// Ids outside [0, n) produce zero rows and set *bad_id (device int) to 1.
int launch_dequant_rows(uint32_t ggml_type, const uint8_t* w, int64_t n, int64_t k,
                        const int32_t* rows, int64_t m, void* out, bool bf16, int* bad_id,
                        void* stream);

// out[i, :] = W[ids[i], :] for a W already in the activation dtype; bad ids
// give zero rows.
int launch_gather_rows(const void* w, int64_t n, int64_t k, const int32_t* ids, int64_t m, void* out,
                       void* stream);

// y[i, :] += bias for i < m.
int launch_add_bias(void* y, bool bf16, int64_t m, int64_t n, const float* bias, void* stream);

// Converts a float row-major matrix (F32 bytes, F16 or BF16 per src_type
// ggml id 0/1/30) to the activation dtype, for float weights.
int launch_convert(const void* src, uint32_t src_type, int64_t count, void* dst, bool bf16,
                   void* stream);

}  // namespace aph::gguf::cuda
