// The device float pool (mirostat's per-request mu): floats come from slabs,
// go back on a free list and are handed out again without a new allocation;
// slabs are freed only with the pool. Host memory stands in for the device.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <vector>

#include "plugins/samplers/device_float_pool.hpp"

namespace aph::samplers {
namespace {

struct FakeDevice {
  int allocs = 0, frees = 0;
  std::vector<int32_t> devices;
};

aph_host_services fake_services(FakeDevice* d) {
  aph_host_services s{};
  s.host = d;
  s.device_alloc = [](void* host, int32_t device, uint64_t bytes, aph_error*) -> void* {
    auto* f = static_cast<FakeDevice*>(host);
    ++f->allocs;
    f->devices.push_back(device);
    return std::malloc(bytes);
  };
  s.device_free = [](void* host, int32_t, void* p) {
    ++static_cast<FakeDevice*>(host)->frees;
    std::free(p);
  };
  return s;
}

TEST(DeviceFloatPool, ReusesGivenBackFloatsAndFreesSlabsWithThePool) {
  FakeDevice dev;
  const aph_host_services services = fake_services(&dev);
  {
    DeviceFloatPool pool(&services);
    std::set<float*> taken;
    for (int i = 0; i < 100; ++i) taken.insert(pool.take(0));
    EXPECT_EQ(taken.size(), 100u);  // distinct floats
    EXPECT_EQ(dev.allocs, 1);       // from one slab
    float* back = *taken.begin();
    pool.give_back(0, back);
    EXPECT_EQ(pool.take(0), back);  // handed out again, no allocation
    EXPECT_EQ(dev.allocs, 1);
    EXPECT_EQ(dev.frees, 0);        // giving back frees nothing
  }
  EXPECT_EQ(dev.frees, dev.allocs);
}

TEST(DeviceFloatPool, GrowsBySlabsAndKeepsDevicesApart) {
  FakeDevice dev;
  const aph_host_services services = fake_services(&dev);
  DeviceFloatPool pool(&services);
  std::set<float*> taken;
  for (int i = 0; i < 5000; ++i) taken.insert(pool.take(0));  // more than one slab holds
  EXPECT_EQ(taken.size(), 5000u);
  EXPECT_EQ(pool.slabs(), 2u);
  float* on_one = pool.take(1);
  EXPECT_EQ(taken.count(on_one), 0u);
  EXPECT_EQ(pool.slabs(), 3u);
  EXPECT_EQ(dev.devices.back(), 1);
  pool.give_back(1, on_one);
  EXPECT_EQ(pool.take(1), on_one);  // device 1's free list, not device 0's
}

TEST(DeviceFloatPool, AFailedAllocationIsAnError) {
  aph_host_services s{};
  s.device_alloc = [](void*, int32_t, uint64_t, aph_error* err) -> void* {
    err->code = APH_ERR_OUT_OF_MEMORY;
    return nullptr;
  };
  DeviceFloatPool pool(&s);
  EXPECT_ANY_THROW(pool.take(0));
}

}  // namespace
}  // namespace aph::samplers
