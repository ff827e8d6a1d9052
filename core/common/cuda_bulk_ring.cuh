// A warp's ring of shared-memory slots for weights that stream through it
// (sm_90): lane 0 fills slot i % stages with one cp.async.bulk (the Hopper
// copy engine), which completes on the slot's own mbarrier by its byte
// count, and every lane waits on that barrier's phase before reading. A few
// slots a warp in flight cost no registers, and fills may be issued before
// a programmatic-launch wait, since weights do not depend on the kernel
// before. Used by the GGUF plugin's bulk matvec and the core's bulk GEMV.
// Callers compile their kernel bodies only for sm_90 (the instructions do
// not exist before).
#pragma once

#include <cuda/ptx>
#include <cuda_runtime.h>

#include <cstdint>

namespace aph::cuda_bulk {

// Host: whether the current device has the copy engine's bulk copies
// (sm_90+), asked once.
inline bool available() {
  static const bool yes = [] {
    int device = 0, major = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    return major >= 9;
  }();
  return yes;
}

struct WarpRing {
  uint8_t* slots;     // stages x slot_bytes of shared memory, 16-byte aligned
  uint64_t* arrived;  // stages mbarriers in shared memory
  int stages;
  int64_t slot_bytes;  // a multiple of 16

  // Lane 0 initializes the barriers; the warp then meets.
  __device__ __forceinline__ void init(int lane) const {
    namespace ptx = ::cuda::ptx;
    if (lane == 0) {
      for (int i = 0; i < stages; ++i) ptx::mbarrier_init(&arrived[i], 1);
      ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
    }
    __syncwarp();
  }

  // Lane 0 only: `bytes` (a multiple of 16, at most slot_bytes) from src
  // (16-byte aligned) into slot i % stages, whose previous contents every
  // lane is done with.
  __device__ __forceinline__ void fill(int64_t i, const void* src, uint32_t bytes) const {
    namespace ptx = ::cuda::ptx;
    uint64_t* bar = &arrived[i % stages];
    ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, bar, bytes);
    ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, slots + (i % stages) * slot_bytes, src, bytes, bar);
  }

  // Every lane: waits for fill i to land; its slot.
  __device__ __forceinline__ const uint8_t* wait(int64_t i) const {
    namespace ptx = ::cuda::ptx;
    const int slot = static_cast<int>(i % stages);
    while (!ptx::mbarrier_try_wait_parity(&arrived[slot], static_cast<uint32_t>((i / stages) & 1))) {
    }
    return slots + slot * slot_bytes;
  }
};

}  // namespace aph::cuda_bulk
