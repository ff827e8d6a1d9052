// The fast small-batch matvec of the common k-quants (Q4_K, Q5_K, Q6_K):
// whole 16-byte weight pieces per lane, several blocks in flight per warp
// (matvec_fast.cu). Other types use the generic matvec in kernels.cu.
#pragma once

#include <cstdint>

#include "plugins/quant-gguf/cuda/kernels.hpp"

namespace aph::gguf::cuda {

constexpr bool has_fast_matvec(uint32_t ggml_type) {
  return ggml_type == 12 || ggml_type == 13 || ggml_type == 14;
}

// launch_matvec_multi (kernels.hpp) for a type with has_fast_matvec: k is a
// multiple of 256; w and x's pointers are 16-byte aligned; x is quantized
// (not raw). Launched as a dependent of the kernel before
// (core/common/cuda_pdl.cuh).
int launch_fast_matvec_multi(uint32_t ggml_type, const MatvecTarget* targets, int count, int64_t k,
                             const MatvecX& x, int64_t m, bool bf16, void* stream);

}  // namespace aph::gguf::cuda
