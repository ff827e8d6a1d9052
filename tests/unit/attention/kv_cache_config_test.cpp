#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "core/attention/kv_cache_config.hpp"
#include "core/common/error.hpp"

namespace aph::attention {
namespace {

TEST(KvCacheDtype, ParsesEveryName) {
  EXPECT_EQ(parse_kv_cache_dtype("auto", APH_DTYPE_BF16), APH_DTYPE_BF16);
  EXPECT_EQ(parse_kv_cache_dtype("fp16", APH_DTYPE_BF16), APH_DTYPE_F16);
  EXPECT_EQ(parse_kv_cache_dtype("bfloat16", APH_DTYPE_F16), APH_DTYPE_BF16);
  EXPECT_EQ(parse_kv_cache_dtype("fp8", APH_DTYPE_F16), APH_DTYPE_F8_E4M3);
  EXPECT_EQ(parse_kv_cache_dtype("FP8_E4M3", APH_DTYPE_F16), APH_DTYPE_F8_E4M3);
  EXPECT_EQ(parse_kv_cache_dtype("fp8_e5m2", APH_DTYPE_F16), APH_DTYPE_F8_E5M2);
  try {
    parse_kv_cache_dtype("int4", APH_DTYPE_F16);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), APH_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("kv_cache_dtype"), std::string::npos);
  }
}

TEST(KvScaleNames, EveryCheckpointSpelling) {
  struct Case {
    const char* name;
    int32_t layer;
    KvScaleKind kind;
  };
  const Case cases[] = {
      {"model.layers.0.self_attn.k_scale", 0, KvScaleKind::kK},
      {"model.layers.31.self_attn.v_scale", 31, KvScaleKind::kV},
      {"model.layers.3.self_attn.attn.k_scale", 3, KvScaleKind::kK},
      {"model.layers.4.self_attn.k_proj.k_scale", 4, KvScaleKind::kK},
      {"model.layers.4.self_attn.v_proj.v_scale", 4, KvScaleKind::kV},
      {"model.layers.5.self_attn.qkv_proj.k_scale", 5, KvScaleKind::kK},
      {"model.layers.5.self_attn.qkv_proj.v_scale", 5, KvScaleKind::kV},
      {"model.layers.6.self_attn.k_proj.output_scale", 6, KvScaleKind::kK},
      {"model.layers.6.self_attn.v_proj.output_scale", 6, KvScaleKind::kV},
      {"model.layers.7.self_attn.kv_scale", 7, KvScaleKind::kBoth},
      {"language_model.model.layers.12.self_attn.k_scale", 12, KvScaleKind::kK},
  };
  for (const Case& c : cases) {
    auto m = match_kv_scale_name(c.name);
    ASSERT_TRUE(m.has_value()) << c.name;
    EXPECT_EQ(m->layer, c.layer) << c.name;
    EXPECT_EQ(m->kind, c.kind) << c.name;
  }
  for (const char* other : {"model.layers.0.self_attn.q_scale", "model.layers.0.self_attn.k_proj.weight_scale",
                            "model.layers.0.self_attn.o_proj.output_scale", "model.layers.0.self_attn.k_proj.weight",
                            "model.norm.k_scale", "model.layers.x.self_attn.k_scale",
                            "model.layers.0.self_attn.xk_scale"}) {
    EXPECT_FALSE(match_kv_scale_name(other).has_value()) << other;
  }
}

TEST(KvScales, DefaultsAndSharing) {
  KvScales s(4);
  const float k0 = 0.5f, v0 = 0.25f, only_v = 2.0f, both = 3.0f;
  EXPECT_TRUE(s.offer("model.layers.0.self_attn.k_scale", &k0, 1));
  EXPECT_TRUE(s.offer("model.layers.0.self_attn.v_scale", &v0, 1));
  EXPECT_TRUE(s.offer("model.layers.1.self_attn.v_proj.output_scale", &only_v, 1));
  EXPECT_TRUE(s.offer("model.layers.2.self_attn.kv_scale", &both, 1));
  EXPECT_FALSE(s.offer("model.layers.2.mlp.down_proj.weight", &both, 1));
  EXPECT_EQ(s.k_scale(0), 0.5f);
  EXPECT_EQ(s.v_scale(0), 0.25f);
  EXPECT_EQ(s.k_scale(1), 2.0f);  // one present serves both
  EXPECT_EQ(s.v_scale(1), 2.0f);
  EXPECT_EQ(s.k_scale(2), 3.0f);
  EXPECT_EQ(s.v_scale(2), 3.0f);
  EXPECT_EQ(s.k_scale(3), 1.0f);  // neither: 1.0
  EXPECT_EQ(s.v_scale(3), 1.0f);
  EXPECT_EQ(s.defaulted_layers(), std::vector<int32_t>{3});
}

TEST(KvScales, RejectsBadScalesNamingTheTensor) {
  KvScales s(2);
  const float two[2] = {1.0f, 2.0f};
  const float neg = -1.0f, ok = 1.0f;
  for (auto [name, vals, n] : {std::tuple{"model.layers.0.self_attn.k_scale", two, int64_t{2}},
                               std::tuple{"model.layers.1.self_attn.v_scale", &neg, int64_t{1}},
                               std::tuple{"model.layers.9.self_attn.k_scale", &ok, int64_t{1}}}) {
    try {
      s.offer(name, vals, n);
      ADD_FAILURE() << name;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), APH_ERR_INVALID_ARGUMENT);
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace aph::attention
