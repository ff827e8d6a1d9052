// Device and pinned memory that plugins take through the host services table,
// counted against a budget so the engine can size the KV cache around it.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>

#include "aphrodite/plugin.h"

namespace aph::server {

class MemoryBudget {
 public:
  // 0 = unlimited.
  MemoryBudget(uint64_t device_limit = 0, uint64_t pinned_limit = 0)
      : device_limit_(device_limit), pinned_limit_(pinned_limit) {}
  ~MemoryBudget();  // frees whatever plugins leaked, so the process exits clean

  // device: APH_DEVICE_CPU (plain host memory) or a CUDA ordinal. NULL and
  // err filled when over budget or out of memory.
  void* device_alloc(int32_t device, uint64_t bytes, aph_error* err);
  void device_free(int32_t device, void* ptr);
  void* pinned_alloc(uint64_t bytes, aph_error* err);
  void pinned_free(void* ptr);

  uint64_t device_used(int32_t device) const;
  uint64_t pinned_used() const;

 private:
  struct Block {
    int32_t device;
    uint64_t bytes;
    bool pinned;
  };

  uint64_t device_limit_;
  uint64_t pinned_limit_;
  mutable std::mutex mutex_;
  std::map<int32_t, uint64_t> device_used_;
  uint64_t pinned_used_ = 0;
  std::map<void*, Block> blocks_;
};

}  // namespace aph::server
