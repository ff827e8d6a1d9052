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

// The type pairs one launch of launch_fast_matvec_pair takes: the K-quant
// mixes' q/k (Q4_K or Q5_K) before a v in Q6_K (llama.cpp's Q4_K_M and Q5_K_M
// give some layers' v more bits).
constexpr bool fast_matvec_pair(uint32_t type_a, uint32_t type_b) {
  return (type_a == 12 || type_a == 13) && type_b == 14;
}

// As launch_fast_matvec_multi, for targets [0, first_b) of type_a and
// [first_b, count) of type_b (fast_matvec_pair), all reading the same
// quantized x: one launch where two would start and drain the GPU.
int launch_fast_matvec_pair(uint32_t type_a, uint32_t type_b, const MatvecTarget* targets, int count, int first_b,
                            int64_t k, const MatvecX& x, int64_t m, bool bf16, void* stream);

}  // namespace aph::gguf::cuda
