// cp.async (sm_80+): 16-byte global->shared copies that bypass registers, so a
// CTA can fetch its next tile while it computes on the current one (the
// decode attention's KV tiles, the tile GEMM's x). Header-only: core kernels
// and plugins include it.
#pragma once

#include <cstdint>

namespace aph::cuda_async {

// src_bytes 0 zero-fills the destination (tokens past the end of a range).
__device__ __forceinline__ void cp_async_16(void* smem_dst, const void* gmem_src, int src_bytes) {
  uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem_src),
               "r"(src_bytes));
}

// 16 bytes that are read once (weights): as cp_async_16, and L2 fetches the
// 256 bytes around them, which the same CTA's next copies mostly want.
__device__ __forceinline__ void cp_async_16_weights(void* smem_dst, const void* gmem_src) {
  uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;\n" ::"r"(dst), "l"(gmem_src));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

// Pulls [src, src + bytes) into L2 with one instruction (sm_90's bulk
// prefetch: no registers, no shared memory, no completion to wait for), so a
// kernel can put its later reads in flight before its ring has room for
// them. src and bytes multiples of 16. Older GPUs: nothing (a per-line
// prefetch costs an instruction every 128 bytes; the callers' plain loads
// still work).
__device__ __forceinline__ void prefetch_l2_bulk(const void* src, uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(src), "r"(bytes) : "memory");
#endif
}

}  // namespace aph::cuda_async
