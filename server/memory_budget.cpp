#include "server/memory_budget.hpp"

#include <cstdlib>
#include <string>

#include "core/common/error.hpp"

#ifdef APH_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace aph::server {
namespace {

// Pinned memory needs a CUDA device; a CUDA build on a machine without one
// (CI, CPU serving) hands out ordinary host memory instead. Decided once, so
// alloc and free always agree.
bool pinned_is_host_memory() {
#ifdef APH_HAVE_CUDA
  static const bool no_device = [] {
    int count = 0;
    return cudaGetDeviceCount(&count) != cudaSuccess || count == 0;
  }();
  return no_device;
#else
  return true;
#endif
}

void* raw_alloc(int32_t device, uint64_t bytes, bool pinned, aph_error* err) {
  if (device == APH_DEVICE_CPU && (!pinned || pinned_is_host_memory())) {
    void* p = std::malloc(bytes == 0 ? 1 : bytes);
    if (p == nullptr) write_error(err, APH_ERR_OUT_OF_MEMORY, "host allocation failed");
    return p;
  }
#ifdef APH_HAVE_CUDA
  void* p = nullptr;
  cudaError_t rc;
  if (pinned) {
    rc = cudaMallocHost(&p, bytes == 0 ? 1 : bytes);
  } else {
    int previous = 0;
    cudaGetDevice(&previous);
    rc = cudaSetDevice(device);
    if (rc == cudaSuccess) rc = cudaMalloc(&p, bytes == 0 ? 1 : bytes);
    cudaSetDevice(previous);
  }
  if (rc != cudaSuccess) {
    std::string msg = std::string(pinned ? "cudaMallocHost" : "cudaMalloc") + " of " +
                      std::to_string(bytes) + " bytes failed: " + cudaGetErrorString(rc);
    write_error(err, rc == cudaErrorMemoryAllocation ? APH_ERR_OUT_OF_MEMORY : APH_ERR_DEVICE,
                msg.c_str());
    return nullptr;
  }
  return p;
#else
  if (pinned) {
    // Without CUDA, pinned memory is ordinary host memory.
    void* p = std::malloc(bytes == 0 ? 1 : bytes);
    if (p == nullptr) write_error(err, APH_ERR_OUT_OF_MEMORY, "host allocation failed");
    return p;
  }
  write_error(err, APH_ERR_UNSUPPORTED,
              ("device " + std::to_string(device) + ": this build has no CUDA").c_str());
  return nullptr;
#endif
}

void raw_free(void* ptr, int32_t device, bool pinned) {
  if (device == APH_DEVICE_CPU && (!pinned || pinned_is_host_memory())) {
    std::free(ptr);
    return;
  }
#ifdef APH_HAVE_CUDA
  if (pinned) {
    cudaFreeHost(ptr);
  } else {
    cudaFree(ptr);
  }
#else
  std::free(ptr);
#endif
}

}  // namespace

MemoryBudget::~MemoryBudget() {
  for (auto& [ptr, block] : blocks_) raw_free(ptr, block.device, block.pinned);
}

void* MemoryBudget::device_alloc(int32_t device, uint64_t bytes, aph_error* err) {
  if (device < APH_DEVICE_CPU) {
    write_error(err, APH_ERR_INVALID_ARGUMENT,
                ("device_alloc: device " + std::to_string(device) + " is not a device").c_str());
    return nullptr;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    uint64_t& used = device_used_[device];
    if (device_limit_ != 0 && (bytes > device_limit_ || used > device_limit_ - bytes)) {
      std::string msg = "device_alloc: " + std::to_string(bytes) + " bytes on device " +
                        std::to_string(device) + " exceed the plugin memory budget (" +
                        std::to_string(used) + " of " + std::to_string(device_limit_) + " in use)";
      write_error(err, APH_ERR_OUT_OF_MEMORY, msg.c_str());
      return nullptr;
    }
    used += bytes;  // reserved before the allocation so concurrent callers see it
  }
  void* p = raw_alloc(device, bytes, false, err);
  std::lock_guard<std::mutex> lock(mutex_);
  if (p == nullptr) {
    device_used_[device] -= bytes;
    return nullptr;
  }
  blocks_[p] = Block{device, bytes, false};
  return p;
}

void MemoryBudget::device_free(int32_t device, void* ptr) {
  if (ptr == nullptr) return;
  Block block;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = blocks_.find(ptr);
    if (it == blocks_.end() || it->second.pinned) return;  // not ours: never free a stranger
    block = it->second;
    blocks_.erase(it);
    device_used_[block.device] -= block.bytes;
  }
  raw_free(ptr, block.device, false);
}

void* MemoryBudget::pinned_alloc(uint64_t bytes, aph_error* err) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (pinned_limit_ != 0 && (bytes > pinned_limit_ || pinned_used_ > pinned_limit_ - bytes)) {
      std::string msg = "pinned_alloc: " + std::to_string(bytes) +
                        " bytes exceed the pinned memory budget (" + std::to_string(pinned_used_) +
                        " of " + std::to_string(pinned_limit_) + " in use)";
      write_error(err, APH_ERR_OUT_OF_MEMORY, msg.c_str());
      return nullptr;
    }
    pinned_used_ += bytes;
  }
  void* p = raw_alloc(APH_DEVICE_CPU, bytes, true, err);
  std::lock_guard<std::mutex> lock(mutex_);
  if (p == nullptr) {
    pinned_used_ -= bytes;
    return nullptr;
  }
  blocks_[p] = Block{APH_DEVICE_CPU, bytes, true};
  return p;
}

void MemoryBudget::pinned_free(void* ptr) {
  if (ptr == nullptr) return;
  Block block;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = blocks_.find(ptr);
    if (it == blocks_.end() || !it->second.pinned) return;
    block = it->second;
    blocks_.erase(it);
    pinned_used_ -= block.bytes;
  }
  raw_free(ptr, APH_DEVICE_CPU, true);
}

uint64_t MemoryBudget::device_used(int32_t device) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = device_used_.find(device);
  return it == device_used_.end() ? 0 : it->second;
}

uint64_t MemoryBudget::pinned_used() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return pinned_used_;
}

}  // namespace aph::server
