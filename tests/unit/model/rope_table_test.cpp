// RoPE tables against FORMATS.md §7.4 worked by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "core/common/error.hpp"
#include "core/model/rope_freqs.hpp"

namespace {

using namespace aph::weights;
using aph::model::compute_rope_table;

ModelConfig base() {
  ModelConfig c;
  c.hidden_size = 512;
  c.num_attention_heads = 4;
  c.head_dim = 128;
  c.rope_theta = 10000.0;
  c.max_position_embeddings = 4096;
  return c;
}

double plain(int i, double theta = 10000.0, int d = 128) { return 1.0 / std::pow(theta, 2.0 * i / d); }

// The table is float32: compare to 1e-6 relative.
#define EXPECT_REL(a, b) EXPECT_NEAR((a), (b), 1e-6 * std::fabs(b))

TEST(RopeTable, DefaultAndLinear) {
  ModelConfig c = base();
  auto t = compute_rope_table(c, 4096);
  ASSERT_EQ(t.inv_freq.size(), 64u);
  for (int i : {0, 17, 63}) EXPECT_NEAR(t.inv_freq[i], plain(i), 1e-7 * plain(i) + 1e-12);
  c.rope_scaling.type = RopeType::Linear;
  c.rope_scaling.factor = 4;
  t = compute_rope_table(c, 4096);
  EXPECT_REL(t.inv_freq[5], plain(5) / 4);
  EXPECT_EQ(t.mscale, 1.0f);
}

TEST(RopeTable, Llama3KeepsHighDividesLowBlendsMiddle) {
  ModelConfig c = base();
  c.rope_theta = 500000.0;
  c.rope_scaling.type = RopeType::Llama3;
  c.rope_scaling.factor = 8;
  c.rope_scaling.low_freq_factor = 1;
  c.rope_scaling.high_freq_factor = 4;
  c.rope_scaling.original_max_position_embeddings = 8192;
  auto t = compute_rope_table(c, 8192);
  const double pi = 3.14159265358979323846;
  int seen_keep = 0, seen_div = 0, seen_mid = 0;
  for (int i = 0; i < 64; ++i) {
    const double f = plain(i, 500000.0), wl = 2 * pi / f;
    double want;
    if (wl < 8192.0 / 4) {
      want = f, ++seen_keep;
    } else if (wl > 8192.0) {
      want = f / 8, ++seen_div;
    } else {
      const double s = (8192.0 / wl - 1) / 3;
      want = (1 - s) * f / 8 + s * f, ++seen_mid;
    }
    EXPECT_NEAR(t.inv_freq[i], want, 1e-6 * want);
  }
  EXPECT_GT(seen_keep, 0);
  EXPECT_GT(seen_div, 0);
  EXPECT_GT(seen_mid, 0);
}

TEST(RopeTable, YarnRampAndMscale) {
  ModelConfig c = base();
  c.rope_scaling.type = RopeType::Yarn;
  c.rope_scaling.factor = 4;
  c.rope_scaling.original_max_position_embeddings = 4096;
  auto t = compute_rope_table(c, 16384);
  EXPECT_NEAR(t.mscale, 0.1 * std::log(4.0) + 1, 1e-6);
  EXPECT_REL(t.inv_freq[0], plain(0));             // fastest: extrapolated
  EXPECT_REL(t.inv_freq[63], plain(63) / 4);      // slowest: interpolated
}

TEST(RopeTable, DynamicOnlyBeyondTrainedContext) {
  ModelConfig c = base();
  c.rope_scaling.type = RopeType::Dynamic;
  c.rope_scaling.factor = 2;
  EXPECT_REL(compute_rope_table(c, 4096).inv_freq[10], plain(10));
  const double b = 10000.0 * std::pow(2.0 * 8192 / 4096 - 1, 128.0 / 126.0);
  EXPECT_REL(compute_rope_table(c, 8192).inv_freq[10], plain(10, b));
}

TEST(RopeTable, LongropeChoosesFactorsByServedContext) {
  ModelConfig c = base();
  c.max_position_embeddings = 131072;
  c.rope_scaling.type = RopeType::LongRope;
  c.rope_scaling.original_max_position_embeddings = 4096;
  c.rope_scaling.short_factor.assign(64, 1.0);
  c.rope_scaling.long_factor.assign(64, 3.0);
  auto s = compute_rope_table(c, 4096);
  auto l = compute_rope_table(c, 131072);
  EXPECT_REL(s.inv_freq[7], plain(7));
  EXPECT_REL(l.inv_freq[7], plain(7) / 3);
  EXPECT_NEAR(l.mscale, std::sqrt(1 + std::log(32.0) / std::log(4096.0)), 1e-6);
}

TEST(RopeTable, GgufRopeFreqsDivide) {
  ModelConfig c = base();
  std::vector<float> div(64, 2.0f);
  EXPECT_REL(compute_rope_table(c, 4096, div).inv_freq[3], plain(3) / 2);
  EXPECT_THROW(compute_rope_table(c, 4096, std::vector<float>(3, 1.0f)), aph::Error);
}

}  // namespace
