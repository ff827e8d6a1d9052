// CPU quantization of fp32 rows into ggml blocks, for the quantizer tool.
// Q4_0/Q4_1/Q5_0/Q5_1/Q8_0 reproduce gguf.quants.quantize byte for byte;
// Q4_K/Q5_K/Q6_K use a least-squares scale/min search of our own.
#pragma once

#include <cstdint>

namespace aph::gguf {

bool can_quantize(uint32_t ggml_type);
// dst receives n / block_elems blocks; n must be a multiple of the block size.
void quantize_row(uint32_t ggml_type, const float* x, uint8_t* dst, int64_t n);

}  // namespace aph::gguf
