// The batch-1 k-quant matvec's ring form (matvec_ring.cu).
#pragma once

#include <cstdint>

#include "plugins/quant-gguf/cuda/kernels.hpp"

namespace aph::gguf::cuda {

// Stages of the ring form that APH_GGUF_MATVEC_RING asks for (0: off, the
// register form; else 3 or 4).
int matvec_ring_stages();

// y = W · x at batch 1 over x as quantize_act_kernel wrote it, for the
// types whose load_w reads whole 16-byte pieces (Q4_K, Q5_K). Returns
// cudaErrorNotSupported for other types, so the caller takes its own form.
int launch_ring_matvec(uint32_t ggml_type, const MatvecTarget* targets, int count, int64_t nb, const MatvecX& x,
                       bool bf16, int stages, void* stream);

}  // namespace aph::gguf::cuda
