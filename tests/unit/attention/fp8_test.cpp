#include <gtest/gtest.h>

#include <cmath>

#include "core/attention/fp8.hpp"

namespace aph::attention {
namespace {

TEST(Fp8, E4M3KnownValues) {
  EXPECT_EQ(f32_to_fp8(1.0f, kE4M3), 0x38);
  EXPECT_EQ(f32_to_fp8(-1.0f, kE4M3), 0xb8);
  EXPECT_EQ(f32_to_fp8(448.0f, kE4M3), 0x7e);
  EXPECT_EQ(f32_to_fp8(1e6f, kE4M3), 0x7e);  // saturates, never NaN
  EXPECT_EQ(f32_to_fp8(-INFINITY, kE4M3), 0xfe);
  EXPECT_EQ(f32_to_fp8(std::ldexp(1.0f, -9), kE4M3), 0x01);  // smallest subnormal
  EXPECT_EQ(f32_to_fp8(std::ldexp(1.0f, -11), kE4M3), 0x00);  // a quarter of it rounds to 0
  EXPECT_EQ(f32_to_fp8(1.0625f, kE4M3), 0x38);  // tie between 1.0 and 1.125: even
  EXPECT_EQ(f32_to_fp8(1.1875f, kE4M3), 0x3a);  // tie between 1.125 and 1.25: even
  EXPECT_EQ(f32_to_fp8(1.07f, kE4M3), 0x39);
  EXPECT_TRUE(std::isnan(fp8_to_f32(0x7f, kE4M3)));
  EXPECT_EQ(fp8_to_f32(0x7e, kE4M3), 448.0f);
  EXPECT_EQ(fp8_to_f32(0x01, kE4M3), std::ldexp(1.0f, -9));
}

TEST(Fp8, E5M2KnownValues) {
  EXPECT_EQ(f32_to_fp8(1.0f, kE5M2), 0x3c);
  EXPECT_EQ(f32_to_fp8(57344.0f, kE5M2), 0x7b);
  EXPECT_EQ(f32_to_fp8(1e9f, kE5M2), 0x7b);
  EXPECT_EQ(f32_to_fp8(std::ldexp(1.0f, -16), kE5M2), 0x01);
  EXPECT_EQ(f32_to_fp8(1.125f, kE5M2), 0x3c);  // tie between 1.0 and 1.25: even
  EXPECT_EQ(f32_to_fp8(1.375f, kE5M2), 0x3e);  // tie between 1.25 and 1.5: even
  EXPECT_TRUE(std::isinf(fp8_to_f32(0x7c, kE5M2)));
  EXPECT_EQ(fp8_to_f32(0x7b, kE5M2), 57344.0f);
}

TEST(Fp8, EveryFiniteCodeRoundTrips) {
  for (const Fp8Format* fmt : {&kE4M3, &kE5M2}) {
    for (int i = 0; i < 256; ++i) {
      float f = fp8_to_f32(static_cast<uint8_t>(i), *fmt);
      if (!std::isfinite(f)) continue;
      uint8_t back = f32_to_fp8(f, *fmt);
      if (f == 0.0f) {
        EXPECT_EQ(back & 0x7f, 0) << i;
      } else {
        EXPECT_EQ(back, i) << "code " << i << " value " << f;
      }
    }
  }
}

TEST(Fp8, RoundsToNearestRepresentable) {
  // Brute force: the encoded value is the closest finite code (ties aside).
  for (const Fp8Format* fmt : {&kE4M3, &kE5M2}) {
    for (float x = -600.0f; x < 600.0f; x += 0.37f) {
      float got = fp8_to_f32(f32_to_fp8(x, *fmt), *fmt);
      float best_err = INFINITY;
      for (int i = 0; i < 256; ++i) {
        float c = fp8_to_f32(static_cast<uint8_t>(i), *fmt);
        if (std::isfinite(c)) best_err = std::min(best_err, std::fabs(c - x));
      }
      EXPECT_LE(std::fabs(got - x), best_err * 1.000001f + 1e-30f) << x;
    }
  }
}

}  // namespace
}  // namespace aph::attention
