#include "plugins/samplers/device_float_pool.hpp"

#include <string>

#include "core/common/error.hpp"

namespace aph::samplers {

DeviceFloatPool::~DeviceFloatPool() {
  for (const Slab& s : slabs_) services_->device_free(services_->host, s.device, s.base);
}

float* DeviceFloatPool::take(int32_t device) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<float*>& free = free_[device];
  if (free.empty()) {
    if (services_ == nullptr || services_->device_alloc == nullptr) {
      throw Error(APH_ERR_INTERNAL, "samplers: no device_alloc host service");
    }
    aph_error err{};
    void* base = services_->device_alloc(services_->host, device, kSlabFloats * sizeof(float), &err);
    if (base == nullptr) throw Error(APH_ERR_OUT_OF_MEMORY, std::string("samplers device state: ") + err.message);
    slabs_.push_back({device, base});
    // Handed out from the front of the slab: the free list is a stack.
    for (size_t i = kSlabFloats; i-- > 0;) free.push_back(static_cast<float*>(base) + i);
  }
  float* p = free.back();
  free.pop_back();
  return p;
}

void DeviceFloatPool::give_back(int32_t device, float* p) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_[device].push_back(p);
}

size_t DeviceFloatPool::slabs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return slabs_.size();
}

}  // namespace aph::samplers
