// The tile GEMM on Hopper's warpgroup MMA (tile_gemm_wgmma.cu, built for
// sm_90a only): the same grid, K splits and results as tile_gemm.cu's
// mma.sync kernel, which takes every launch this one does not.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "plugins/quant-gguf/cuda/tile_gemm.hpp"
#include "plugins/quant-gguf/cuda/tile_gemm_tile.cuh"

namespace aph::gguf::cuda {

// Bytes of x's images (tile_gemm_wgmma.cu) for up to kTileGemmMaxM rows of
// width k: the scratch TileGemmScratch::x_image must hold this much.
uint64_t wgmma_x_image_bytes(int64_t k);

// Whether the launches of this ggml type go through
// the wgmma kernel here: the build has its sm_90a code, the current device
// is compute capability 9.0, APH_GGUF_TILE_WGMMA is not 0, and the type has
// a wgmma form. False: the caller runs its mma.sync kernel.
bool wgmma_tile_gemm_takes(uint32_t ggml_type);

// One linear (grid: W tiles, x tiles, splits; y or the splits' partials as
// tile_gemm.cu's kernel writes them). x_image: wgmma_x_image_bytes(k).
template <typename T>
cudaError_t launch_wgmma_tile_gemm(uint32_t ggml_type, const uint8_t* w, int64_t n, int64_t k, const T* x, int64_t m,
                                   const float* bias, T* y, float* partials, void* x_image, dim3 grid,
                                   int steps_per_split, cudaStream_t s);

// Several targets over the same x, as tile_gemm_multi_kernel.
template <typename T>
cudaError_t launch_wgmma_tile_gemm_multi(uint32_t ggml_type, const tile::TileTargets& targets, int64_t k, const T* x,
                                         int64_t m, float* workspace, void* x_image, dim3 grid, int steps_per_split,
                                         cudaStream_t s);

}  // namespace aph::gguf::cuda
