// Hopper's warpgroup MMA (wgmma, sm_90a only) for the tile GEMM of
// tile_gemm_wgmma.cu: the four warps of a warpgroup multiply a 64 x 16 A
// held in their registers (the mma.sync m16n8k16 A fragment, one warp per 16
// rows) by a 16 x 64 B that the tensor cores read from shared memory
// themselves, asynchronously. Compiled to real instructions only where
// __CUDA_ARCH_FEAT_SM90_ALL is set (the sm_90a target); elsewhere every
// helper is empty and no caller launches a kernel that uses them.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace aph::gguf::cuda::wgmma {

// A shared-memory matrix descriptor without swizzling: 8 x 16-byte core
// matrices (8 rows of 8 elements, 128 contiguous bytes each), `leading`
// bytes apart along K and `stride` bytes apart along M/N. Addresses and
// offsets are in units of 16 bytes (14 bits each).
__device__ __forceinline__ uint64_t smem_desc(const void* base, uint32_t leading, uint32_t stride) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(base));
  return static_cast<uint64_t>((addr >> 4) & 0x3FFF) | (static_cast<uint64_t>((leading >> 4) & 0x3FFF) << 16) |
         (static_cast<uint64_t>((stride >> 4) & 0x3FFF) << 32);
}

// Orders this thread's earlier generic-proxy writes to shared memory (st,
// cp.async) before the tensor cores' async-proxy reads of it.
__device__ __forceinline__ void fence_proxy_async() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

// Before the first wgmma of a batch: the registers it reads (A, the
// accumulators) hold what earlier instructions wrote.
__device__ __forceinline__ void fence() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void commit_group() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}

// Waits until at most kPending committed groups are still running.
template <int kPending>
__device__ __forceinline__ void wait_group() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
#endif
}

// The compiler sees a wgmma's operands only at its issue; these keep a
// register's value where it is (not moved, not reused) until the wait that
// ends the MMA's asynchronous use of it.
__device__ __forceinline__ void keep(float& r) { asm volatile("" : "+f"(r)::"memory"); }
__device__ __forceinline__ void keep(uint32_t& r) { asm volatile("" : "+r"(r)::"memory"); }

// d (64 x 64 fp32 over the warpgroup: thread t of warp w holds rows
// 16 w + t / 4 and + 8, columns 8 j + 2 (t % 4) and + 1 as d[j][0..3], the
// mma.sync C layout per 8 columns) += A (registers a[0..3], the mma.sync A
// fragment of the warp's 16 rows) * B (16 x 64 by descriptor, K-major).
template <typename T>
__device__ __forceinline__ void mma_64x64x16(float (&d)[8][4], const uint32_t (&a)[4], uint64_t b_desc) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define APH_WGMMA_RS(TYPE)                                                                                        \
  asm volatile("{\n"                                                                                             \
               ".reg .pred p;\n"                                                                                 \
               "setp.ne.b32 p, %37, 0;\n"                                                                        \
               "wgmma.mma_async.sync.aligned.m64n64k16.f32." TYPE "." TYPE " "                                   \
               "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"                                        \
               "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, "                              \
               "{%32,%33,%34,%35}, %36, p, 1, 1, 0;\n"                                                           \
               "}\n"                                                                                             \
               : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]),     \
                 "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),     \
                 "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]),     \
                 "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),     \
                 "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]),     \
                 "+f"(d[7][2]), "+f"(d[7][3])                                                                  \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(1)                               \
               : "memory")
  if constexpr (std::is_same_v<T, __half>)
    APH_WGMMA_RS("f16");
  else
    APH_WGMMA_RS("bf16");
#undef APH_WGMMA_RS
#else
  (void)d, (void)a, (void)b_desc;
#endif
}

}  // namespace aph::gguf::cuda::wgmma
