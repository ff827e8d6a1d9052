// engine.device's one resolver: the CPU by name, auto on whatever is there,
// and a clear error naming the field for anything it cannot give.
#include <gtest/gtest.h>

#include <string>

#include "aphrodite/plugin.h"
#include "core/common/device_choice.hpp"
#include "core/common/error.hpp"

namespace aph {
namespace {

std::string error_of(const std::string& device) {
  try {
    resolve_device(device);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(DeviceChoice, CpuAndAuto) {
  EXPECT_EQ(resolve_device("cpu"), APH_DEVICE_CPU);
  const int32_t automatic = resolve_device("auto");
  EXPECT_TRUE(automatic == APH_DEVICE_CPU || automatic == 0);
}

TEST(DeviceChoice, UnknownNamesAreRejectedWithTheField) {
  for (const char* bad : {"gpu", "", "cuda:", "cuda:x", "cuda:-1", "cuda:1x", "CPU"}) {
    const std::string msg = error_of(bad);
    EXPECT_NE(msg.find("engine.device"), std::string::npos) << bad << ": " << msg;
    EXPECT_NE(msg.find("is not cpu, cuda, cuda:N or auto"), std::string::npos) << bad << ": " << msg;
  }
}

TEST(DeviceChoice, AMissingCudaDeviceIsAnError) {
  const std::string msg = error_of("cuda:4096");
  EXPECT_NE(msg.find("engine.device: \"cuda:4096\" requested but"), std::string::npos) << msg;
  if (resolve_device("auto") == APH_DEVICE_CPU) {  // no GPU here: plain "cuda" cannot be had either
    EXPECT_NE(error_of("cuda").find("requested but"), std::string::npos);
  }
}

}  // namespace
}  // namespace aph
