// Dot-product kernels of the CPU linear: int8 weight codes against
// int8-quantized activations, eight weight rows at a time, and plain fp32.
// AVX-VNNI, AVX2 and portable builds exist; dot_kernels() picks one at run
// time.
//
// Every path computes an output the same way, whatever the batch: per group
// of 16 or 32 elements the exact integer dot of the codes, then, group by
// group in order, acc += float(idot) * (a * dx) and off += b * sx, and
// y = acc + off. So a row gives the same bits from the direct kernel (small
// batches) as from the unpacked one (large batches): a request's tokens and
// logprobs do not depend on what else is in the batch.
#pragma once

#include <cstdint>

namespace aph::gguf {

// One activation row quantized to int8 in blocks of 32: x ≈ d[i/32]*q[i];
// s16[j] = d*sum(q) over elements [16j, 16j+16) (for the weight offsets) and
// sum16[j] that sum of q as an integer.
struct ActQ8 {
  const int8_t* q;
  const float* d;      // per 32
  const float* s16;    // per 16
  const int32_t* sum16;  // per 16
};

// Eight weight rows as unpack_row_i8 gives them (w = a*q + b per group),
// interleaved: elements 4c .. 4c+3 of row r are q[(8c + r) * 4 ..].
struct Rows8 {
  const int8_t* q;  // [k/4][8][4]
  const float* a;   // [k/group][8]
  const float* b;   // [k/group][8]
  int group;        // 16 or 32
};

struct DotKernels {
  // out[r * 8 + i] = (weight row i) · x[r] for i < 8, r < m.
  void (*rows8)(const Rows8& w, const ActQ8* x, int64_t m, int64_t k, float* out);
  // The same straight from the rows' ggml blocks (row i starts at rows[i]),
  // for the types worth it at small batches (Q4_0, Q4_1, Q8_0, Q4_K, Q6_K);
  // nullptr for the others.
  using Rows8Direct = void (*)(const uint8_t* const* rows, const ActQ8* x, int64_t m, int64_t k,
                               float* out);
  Rows8Direct (*rows8_direct)(uint32_t ggml_type);
  float (*dot_f32)(const float* w, const float* x, int64_t k);
  // k is a multiple of 32; q gets k codes, d k/32 scales, s16 and sum16 k/16 sums.
  void (*quantize_act)(const float* x, int8_t* q, float* d, float* s16, int32_t* sum16, int64_t k);
  const char* name;
};

const DotKernels& dot_kernels();   // best for this CPU
const DotKernels& portable_kernels();
const DotKernels* avx2_kernels();      // nullptr when not built or not supported
const DotKernels* avx_vnni_kernels();  // the same

}  // namespace aph::gguf
