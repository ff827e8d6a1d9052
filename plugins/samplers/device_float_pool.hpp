// Single floats of device memory handed out from slabs, for per-request
// device state (mirostat's mu). Freeing device memory synchronizes the whole
// device, so a request that ended used to stall every stream once; here its
// floats go back on a free list and the slabs live as long as the pool.
//
// A float given back may be handed out again at once: the engine gives a
// request's state back only after the step that last wrote it has finished
// (each sampling step ends with a stream sync).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "aphrodite/plugin.h"

namespace aph::samplers {

class DeviceFloatPool {
 public:
  explicit DeviceFloatPool(const aph_host_services* services) : services_(services) {}
  DeviceFloatPool(const DeviceFloatPool&) = delete;
  DeviceFloatPool& operator=(const DeviceFloatPool&) = delete;
  ~DeviceFloatPool();

  // A float on `device`. Any thread. Throws when a new slab cannot be had.
  float* take(int32_t device);
  // Returns a float from take(device). Any thread.
  void give_back(int32_t device, float* p);

  // Slabs allocated so far (for tests).
  size_t slabs() const;

 private:
  static constexpr size_t kSlabFloats = 4096;
  struct Slab {
    int32_t device;
    void* base;
  };
  const aph_host_services* services_;
  mutable std::mutex mutex_;
  std::vector<Slab> slabs_;
  std::map<int32_t, std::vector<float*>> free_;  // by device
};

}  // namespace aph::samplers
