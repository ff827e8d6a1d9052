// The knob readers: unset gives the fallback, a number gives itself (a
// leading number is enough), text gives the flag off and the integer its
// fallback.
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/common/env_flag.hpp"

namespace aph {
namespace {

constexpr const char* kName = "APH_ENV_FLAG_TEST_KNOB";

class EnvKnob : public ::testing::Test {
 protected:
  void TearDown() override { unsetenv(kName); }
  static void set(const char* v) { ASSERT_EQ(setenv(kName, v, 1), 0); }
};

TEST_F(EnvKnob, UnsetGivesTheFallback) {
  unsetenv(kName);
  EXPECT_TRUE(env_flag(kName, true));
  EXPECT_FALSE(env_flag(kName, false));
  EXPECT_EQ(env_int(kName, 42), 42);
}

TEST_F(EnvKnob, NumbersParse) {
  set("0");
  EXPECT_FALSE(env_flag(kName, true));
  EXPECT_EQ(env_int(kName, 7), 0);
  set("2");
  EXPECT_TRUE(env_flag(kName, false));
  EXPECT_EQ(env_int(kName, 7), 2);
  set("-3");
  EXPECT_EQ(env_int(kName, 7), -3);
  set("64MB");
  EXPECT_EQ(env_int(kName, 7), 64);
}

TEST_F(EnvKnob, TextIsOffAndNoNumber) {
  set("yes");
  EXPECT_FALSE(env_flag(kName, true));
  EXPECT_EQ(env_int(kName, 7), 7);
  set("");
  EXPECT_EQ(env_int(kName, 7), 7);
}

}  // namespace
}  // namespace aph
