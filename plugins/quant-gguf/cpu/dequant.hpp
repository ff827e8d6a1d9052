// Reference CPU decoding of ggml blocks (FORMATS.md §2.2). The operation order
// follows the gguf Python package's dequantize so results match it exactly.
#pragma once

#include <cstdint>

namespace aph::gguf {

// Types this plugin decodes (F32, F16, BF16, Q4_0 .. Q8_0, Q2_K .. Q6_K,
// IQ4_NL, IQ4_XS).
bool cpu_supported(uint32_t ggml_type);

// dst[0..n) = the n elements starting at src; n is a multiple of the type's
// block size. Throws aph::Error for an unsupported type.
void dequantize_row(uint32_t ggml_type, const uint8_t* src, float* dst, int64_t n);

// The same values as int8 codes with an affine map per group of `group`
// elements: w[i] = a[i/group] * q[i] + b[i/group]. This is the form the
// integer dot products consume. group() is 16 for Q2_K/Q3_K/Q6_K, else 32.
int unpack_group(uint32_t ggml_type);
void unpack_row_i8(uint32_t ggml_type, const uint8_t* src, int8_t* q, float* a, float* b,
                   int64_t n);

// Eight rows (row i starting at rows[i]) unpacked and interleaved as the
// row-block kernels take them (dot.hpp's Rows8): elements 4c .. 4c+3 of row i
// at q[(8c + i) * 4 ..], a and b [k/group][8].
void unpack_rows8(uint32_t ggml_type, const uint8_t* const* rows, int64_t k, int8_t* q, float* a, float* b);

// Whether the type takes the integer path (quantized types) or the float
// path (F32/F16/BF16).
bool is_float_type(uint32_t ggml_type);

}  // namespace aph::gguf
