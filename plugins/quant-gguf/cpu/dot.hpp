// Dot-product kernels of the CPU linear: int8 weight codes (see
// unpack_row_i8) against int8-quantized activations, and plain fp32. An AVX2
// build and a portable build exist; dot_kernels() picks one at run time.
#pragma once

#include <cstdint>

namespace aph::gguf {

// One activation row quantized to int8 in blocks of 32: x ≈ dx[i/32]*xq[i];
// sx16[j] = dx*sum(xq) over elements [16j, 16j+16), for the weight offsets.
struct ActQ8 {
  const int8_t* q;
  const float* d;     // per 32
  const float* s16;   // per 16
};

struct DotKernels {
  // sum_i w_i x_i where w = a*q + b per group of 32 (g32) or 16 (g16).
  float (*dot_g32)(const int8_t* q, const float* a, const float* b, ActQ8 x, int64_t k);
  float (*dot_g16)(const int8_t* q, const float* a, const float* b, ActQ8 x, int64_t k);
  // Four activation rows against one weight row (prefill): out[r] = dot
  // with x[r]; the weight codes are loaded once for all four.
  void (*dot4_g32)(const int8_t* q, const float* a, const float* b, const ActQ8* x, int64_t k, float* out);
  void (*dot4_g16)(const int8_t* q, const float* a, const float* b, const ActQ8* x, int64_t k, float* out);
  float (*dot_f32)(const float* w, const float* x, int64_t k);
  // k is a multiple of 32; q gets k codes, d k/32 scales, s16 k/16 sums.
  void (*quantize_act)(const float* x, int8_t* q, float* d, float* s16, int64_t k);
  // Fused kernels reading ggml blocks directly for the hottest small-batch
  // types (Q4_0, Q4_1, Q8_0, Q4_K, Q6_K); nullptr for other types.
  using BlockDot = float (*)(const uint8_t* row, ActQ8 x, int64_t k);
  BlockDot (*block_dot)(uint32_t ggml_type);
  const char* name;
};

const DotKernels& dot_kernels();   // best for this CPU
const DotKernels& portable_kernels();
const DotKernels* avx2_kernels();  // nullptr when not built or not supported

}  // namespace aph::gguf
