// y[m, n] = x[m, k] · Wᵀ for the batches between the matvec (m <= 8 by default) and
// the prefill GEMM: each CTA dequantizes a tile of W rows into shared memory
// and multiplies it with the matching x tile on tensor cores (mma.sync), so
// W is read once as quantized bytes and never written out as F16/BF16 (the
// dequantize-then-cuBLAS path wrote and re-read 16 GB a step for an 8B model
// at batch 64). K is split over CTAs when the tiles alone cannot fill the GPU;
// the splits' fp32 partials are summed by a second kernel.
#pragma once

#include <cstdint>

namespace aph::gguf::cuda {

// Largest m the tile GEMM takes (two tiles of 64 rows of x).
constexpr int64_t kTileGemmMaxM = 128;

// K splits for this shape (1 = no workspace, no second kernel).
int tile_gemm_splits(int64_t n, int64_t k, int64_t m, int sm_count);

// Workspace bytes of fp32 partial sums a linear of this shape needs for any
// m <= kTileGemmMaxM.
uint64_t tile_gemm_workspace_bytes(int64_t n, int64_t k, int sm_count);

// The scratch of a launch: the partial sums of K splits (as sized above)
// and, for the wgmma form (tile_gemm_wgmma.hpp), x's images.
struct TileGemmScratch {
  float* partials = nullptr;
  uint64_t partial_bytes = 0;  // what `partials` holds
  void* x_image = nullptr;
  uint64_t x_image_bytes = 0;
};

// Bytes of x_image the launches of width k want (0: none, the build has no
// wgmma form).
uint64_t tile_gemm_image_bytes(int64_t k);

// Whether launches of this ggml type take the wgmma kernel (built for
// sm_90a, this device is compute capability 9.0, APH_GGUF_TILE_WGMMA on).
bool tile_gemm_wgmma_takes(uint32_t ggml_type);

// x and y in the activation dtype (F16 or BF16), x 16-byte aligned with k a
// multiple of 32; scratch as above (unused when splits == 1).
int launch_tile_gemm(uint32_t ggml_type, const uint8_t* w, int64_t n, int64_t k, const void* x, int64_t m,
                     const float* bias, void* y, bool bf16, const TileGemmScratch& scratch, int sm_count,
                     void* stream);

// Several linears of one type and k over the same x in one launch (a
// q/k/v or gate/up group at batched decode, APH_GGUF_TILE_GROUPS): their
// tiles share one grid, so K is split less or not at all, and the launches
// and split partials of all but one are saved. kTileGemmMaxTargets at most.
constexpr int kTileGemmMaxTargets = 4;
struct TileGemmTarget {
  const uint8_t* w = nullptr;
  int64_t n = 0;
  const float* bias = nullptr;
  void* y = nullptr;
};
// As launch_tile_gemm for each target; cudaErrorNotSupported (nothing
// launched) when the scratch cannot hold the launch's partials: the caller
// then runs the linears one by one.
int launch_tile_gemm_multi(uint32_t ggml_type, const TileGemmTarget* targets, int count, int64_t k, const void* x,
                           int64_t m, bool bf16, const TileGemmScratch& scratch, int sm_count, void* stream);

}  // namespace aph::gguf::cuda
