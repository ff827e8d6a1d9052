// Launchers for the CUDA kernels in kernels.cu (compiled as C++17, no logging).
// Dtypes are aph_dtype values (F32, F16, BF16); `stream` is a cudaStream_t.
// Each returns the launch's cudaError_t as an int (0 = success).
#pragma once

#include <cstdint>

namespace aph::ops::kernels {

int embedding(const void* table, int table_dtype, const int32_t* ids, int64_t m, int64_t vocab, int64_t h, void* out,
              int out_dtype, void* stream);
int rms_norm(const void* x, const float* w, float eps, int64_t m, int64_t h, void* out, int dtype, void* stream);
// residual_out = residual + delta (may be residual itself); out = its RMSNorm.
int add_rms_norm(const void* residual, const void* delta, const float* w, float eps, int64_t m, int64_t h, void* out,
                 void* residual_out, int dtype, void* stream);
struct RopeLaunch {
  const void* q; const void* k; const void* v;
  int64_t q_stride, k_stride, v_stride;
  void* q_out; void* k_out; void* v_out;
  const int32_t* positions; const float* inv_freq;
  int64_t tokens;
  int num_heads, num_kv_heads, head_dim, rotary_dim;
  bool interleaved;
  float mscale;
  int dtype;
};
int rope_qkv(const RopeLaunch& args, void* stream);
int silu_mul(const void* gate, const void* up, int64_t in_stride, int64_t m, int64_t n, void* out, int dtype,
             void* stream);
int gather_rows(const void* x, const int32_t* idx, int64_t count, int64_t row_bytes, void* out, void* stream);
int convert(const void* in, int in_dtype, void* out, int out_dtype, int64_t n, void* stream);
// dst[i] = src[i] for i < words (4-byte words), except patch[i - patch_at]
// for i in [patch_at, patch_at + patch_words) when patch is set (word_copy.cu).
// dst or src may be page-locked host memory (unified addressing).
int copy_words(uint32_t* dst, const uint32_t* src, int64_t words, const uint32_t* patch, int64_t patch_at,
               int64_t patch_words, void* stream);
// Word spans [first[r], first[r] + words[r]) that copy_word_spans moves, at the
// same offsets in dst and src; spans must not overlap.
struct WordSpans {
  static constexpr int kMax = 8;
  int count = 0;
  int64_t first[kMax] = {};
  int64_t words[kMax] = {};
};
// copy_words over the spans only, in one launch: a step's metadata sections
// are reserved for the largest step, a decode uses a few words of each.
int copy_word_spans(uint32_t* dst, const uint32_t* src, const WordSpans& spans, const uint32_t* patch,
                    int64_t patch_at, int64_t patch_words, void* stream);
// Whether the copies between decode steps use copy_words (APH_KERNEL_COPIES,
// on by default; read once).
bool kernel_copies_enabled();
// Page-locked host memory as a kernel addresses it, or NULL where it is not
// mapped.
void* pinned_on_device(void* host);
// The batch-1 decode GEMV (gemv.cu): y[m, n] = x[m, :] · w[n, :] + bias[n]
// for m <= kGemvMaxRows, x and w of one dtype, y of y_dtype. Reads each
// weight row once. split: warps that share a weight row (1, 2, 4 or 8), 0
// to choose by the row's length; APH_GEMV_SPLIT=N overrides the choice.
constexpr int kGemvMaxRows = 8;
int gemv(const void* x, const void* w, const float* bias, void* y, int64_t m, int64_t n, int64_t k, int dtype,
         int y_dtype, void* stream, int split = 0);
// y[m, n] = silu(x · gate[n, :] + bias[:n]) * (x · up[n, :] + bias[n:]) with
// w [2n, k] the gate rows then the up rows (a dense gate/up projection), in
// one launch of the GEMV's gated form: the same values, bit for bit, as gemv
// into [m, 2n] followed by silu_mul. split as for gemv, at most 4.
// kGemvNotTaken (nothing launched) where k or the alignment of x or w leaves
// no 16-byte vectors.
constexpr int kGemvNotTaken = -1;
int gemv_silu_mul(const void* x, const void* w, const float* bias, void* y, int64_t m, int64_t n, int64_t k,
                  int dtype, int y_dtype, void* stream, int split = 0);
int add_bias(void* y, const float* bias, int64_t m, int64_t n, int dtype, void* stream);

}  // namespace aph::ops::kernels
