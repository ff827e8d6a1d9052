#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/attention/paged_attention.hpp"
#include "core/attention/split_plan.hpp"
#include "core/common/error.hpp"
#include "tests/unit/attention/attention_problem.hpp"

namespace aph::attention {
namespace {

using testing::Problem;
using testing::ProblemSpec;
using testing::SeqSpec;

// Runs the CPU op and checks both the cache write and the attention output.
void run_and_check(const ProblemSpec& spec, float tol = 2e-5f) {
  Problem p = testing::make_problem(spec);
  std::vector<uint8_t> want_k, want_v;
  testing::expected_caches(p, want_k, want_v);
  std::vector<float> want = testing::reference_attention(p);
  std::vector<float> out(want.size(), 0.0f);
  paged_attention(p.args(out.data()));

  ASSERT_EQ(p.k_cache.size(), want_k.size());
  size_t bad_k = 0, bad_v = 0;
  for (size_t i = 0; i < want_k.size(); ++i) {
    bad_k += p.k_cache[i] != want_k[i];
    bad_v += p.v_cache[i] != want_v[i];
  }
  EXPECT_EQ(bad_k, 0u) << "K cache bytes differ";
  EXPECT_EQ(bad_v, 0u) << "V cache bytes differ";

  float worst = 0;
  size_t worst_at = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    float err = std::fabs(out[i] - want[i]);
    ASSERT_FALSE(std::isnan(out[i])) << i;
    if (err > worst) worst = err, worst_at = i;
  }
  EXPECT_LE(worst, tol) << "at element " << worst_at << " got " << out[worst_at] << " want "
                        << want[worst_at];
}

struct Case {
  int32_t head_dim;
  int32_t group;  // GQA ratio
  aph_dtype kv;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const char* kv = info.param.kv == APH_DTYPE_F32 ? "f32"
                   : info.param.kv == APH_DTYPE_F16 ? "f16"
                   : info.param.kv == APH_DTYPE_BF16 ? "bf16"
                   : info.param.kv == APH_DTYPE_F8_E4M3 ? "e4m3" : "e5m2";
  return "d" + std::to_string(info.param.head_dim) + "_g" + std::to_string(info.param.group) + "_" + kv;
}

class PagedAttentionCpu : public ::testing::TestWithParam<Case> {};

TEST_P(PagedAttentionCpu, MixedBatchMatchesDenseReference) {
  const Case c = GetParam();
  ProblemSpec spec;
  spec.head_dim = c.head_dim;
  spec.num_kv_heads = 2;
  spec.num_heads = 2 * c.group;
  spec.kv_dtype = c.kv;
  if (testing::is_fp8_dtype(c.kv)) {
    spec.k_scale = 0.05f;  // values / scale up to 20: exercises the scale, stays in range
    spec.v_scale = 0.02f;
  }
  spec.seed = static_cast<uint32_t>(c.head_dim * 131 + c.group * 7 + c.kv);
  // Decodes at block boundaries and inside blocks, a fresh prefill, a prefill
  // after a cached prefix, a one-token prefill chunk, and a long decode.
  spec.seqs = {{1, 1}, {1, 17}, {37, 37}, {1, 16}, {20, 70}, {1, 200}, {45, 90}};
  spec.padding_tokens = 2;
  run_and_check(spec);
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (int32_t hd : {64, 80, 96, 128, 256}) {
    for (int32_t g : {1, 4, 8}) {
      for (aph_dtype kv : {APH_DTYPE_F32, APH_DTYPE_F16, APH_DTYPE_BF16, APH_DTYPE_F8_E4M3,
                           APH_DTYPE_F8_E5M2}) {
        cases.push_back({hd, g, kv});
      }
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(All, PagedAttentionCpu, ::testing::ValuesIn(all_cases()), case_name);

TEST(PagedAttentionCpuShapes, BlockSizeOneAndLargeBlocks) {
  for (int32_t bs : {1, 32}) {
    ProblemSpec spec;
    spec.block_size = bs;
    spec.head_dim = 128;
    spec.num_heads = 4;
    spec.num_kv_heads = 1;
    spec.kv_dtype = APH_DTYPE_F16;
    spec.seqs = {{5, 40}, {1, 33}};
    run_and_check(spec);
  }
}

TEST(PagedAttentionCpuShapes, LongPrefillSpansManyQueryChunks) {
  ProblemSpec spec;
  spec.head_dim = 64;
  spec.num_heads = 8;
  spec.num_kv_heads = 8;
  spec.kv_dtype = APH_DTYPE_BF16;
  spec.seqs = {{300, 300}, {130, 400}};
  run_and_check(spec, 5e-5f);
}

TEST(PagedAttentionCpuShapes, Fp8SaturatesOutOfRangeValues) {
  ProblemSpec spec;
  spec.head_dim = 64;
  spec.num_heads = 2;
  spec.num_kv_heads = 1;
  spec.kv_dtype = APH_DTYPE_F8_E4M3;
  spec.k_scale = 1e-3f;  // |value| / scale reaches 1000 > 448
  spec.seqs = {{3, 3}};
  Problem p = testing::make_problem(spec);
  std::vector<float> out(p.q.size());
  paged_attention(p.args(out.data()));
  size_t saturated = 0;
  for (size_t t = 0; t < 3; ++t) {
    for (size_t e = 0; e < 64; ++e) {
      uint8_t b = p.k_cache[p.slot_mapping[t] * 64 + e];
      ASSERT_NE(b & 0x7f, 0x7f) << "NaN stored";
      saturated += (b & 0x7f) == 0x7e;
    }
  }
  EXPECT_GT(saturated, 50u);
}

PagedAttentionArgs small_args(Problem& p, std::vector<float>& out) {
  out.assign(p.q.size(), 0.0f);
  return p.args(out.data());
}

Problem small_problem() {
  ProblemSpec spec;
  spec.seqs = {{2, 5}};
  return testing::make_problem(spec);
}

void expect_error(const PagedAttentionArgs& a, aph_status code, const std::string& needle) {
  try {
    paged_attention(a);
    ADD_FAILURE() << "no error for " << needle;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(PagedAttentionErrors, NameTheParameter) {
  Problem p = small_problem();
  std::vector<float> out;
  PagedAttentionArgs a = small_args(p, out);
  a.layout.head_dim = 72;
  expect_error(a, APH_ERR_UNSUPPORTED, "head_dim");
  a = small_args(p, out);
  a.act_dtype = APH_DTYPE_F16;
  expect_error(a, APH_ERR_UNSUPPORTED, "act_dtype");
  a = small_args(p, out);
  a.layout.dtype = APH_DTYPE_I8;
  expect_error(a, APH_ERR_UNSUPPORTED, "layout.dtype");
  a = small_args(p, out);
  a.num_heads = 7;
  expect_error(a, APH_ERR_INVALID_ARGUMENT, "num_heads");
  a = small_args(p, out);
  a.softmax_scale = 0;
  expect_error(a, APH_ERR_INVALID_ARGUMENT, "softmax_scale");
  a = small_args(p, out);
  a.layout.dtype = APH_DTYPE_F8_E5M2;
  a.k_scale = -1;
  expect_error(a, APH_ERR_INVALID_ARGUMENT, "k_scale");
}

TEST(PagedAttentionErrors, BadIndexDataIsRejected) {
  Problem p = small_problem();
  std::vector<float> out;
  PagedAttentionArgs a = small_args(p, out);
  std::vector<int64_t> slots = p.slot_mapping;
  slots[1] = static_cast<int64_t>(p.num_blocks) * p.spec.block_size;
  a.slot_mapping = slots.data();
  expect_error(a, APH_ERR_INVALID_ARGUMENT, "slot_mapping[1]");
  a = small_args(p, out);
  std::vector<int32_t> table = p.block_tables;
  table[0] = p.num_blocks;
  a.block_tables = table.data();
  expect_error(a, APH_ERR_INVALID_ARGUMENT, "block_tables[0][0]");
  a = small_args(p, out);
  std::vector<int32_t> ctx = {1};
  a.context_lens = ctx.data();
  expect_error(a, APH_ERR_INVALID_ARGUMENT, "context_lens");
}

TEST(PagedAttentionErrors, CudaDeviceWithoutCudaOrWithF32) {
  Problem p = small_problem();
  std::vector<float> out;
  PagedAttentionArgs a = small_args(p, out);
  a.device = 0;
  // f32 activations are CPU-only, so this fails before any device memory is touched.
  expect_error(a, APH_ERR_UNSUPPORTED, "act_dtype");
}

TEST(SplitPlan, WorkspaceCoversEveryPlan) {
  for (int32_t ctx : {1, 17, 512, 4096, 8192, 131072}) {
    size_t ws = paged_attention_workspace_bytes(64, 32, 128, ctx);
    for (int32_t n : {1, 2, 7, 64}) {
      for (int32_t kvh : {1, 8, 32}) {
        for (bool tensor_cores : {false, true}) {
          int32_t splits = decode_splits(n, decode_head_ctas(32, kvh), ctx, decode_target_ctas(tensor_cores));
          EXPECT_GE(splits, 1);
          EXPECT_LE(splits, kDecodeMaxSplits);
          EXPECT_LE(decode_workspace_bytes(n, 32, 128, splits), ws) << ctx << " " << n << " " << kvh;
        }
      }
    }
  }
  // A short workspace holds fewer splits, never more than it has room for.
  for (size_t bytes : {size_t{0}, size_t{100}, size_t{1} << 16, size_t{1} << 20, size_t{1} << 26}) {
    int32_t fit = decode_splits_that_fit(3, 32, 128, bytes);
    EXPECT_GE(fit, 1);
    EXPECT_LE(fit, kDecodeMaxSplits);
    if (fit > 1) {
      EXPECT_LE(decode_workspace_bytes(3, 32, 128, fit), bytes);
      if (fit < kDecodeMaxSplits) {
        EXPECT_GT(decode_workspace_bytes(3, 32, 128, fit + 1), bytes);
      }
    }
  }
  EXPECT_EQ(decode_splits_that_fit(3, 32, 128, decode_workspace_bytes(3, 32, 128, 17)), 17);
  // One long sequence is split so it fills the GPU; a full batch is not split.
  for (bool tensor_cores : {false, true}) {
    const int32_t target = decode_target_ctas(tensor_cores);
    EXPECT_GE(decode_splits(1, decode_head_ctas(32, 8), 8192, target), 16);
    EXPECT_EQ(decode_splits(64, decode_head_ctas(32, 8), 512, target), 1);
    EXPECT_EQ(decode_splits(1, decode_head_ctas(32, 8), 17, target), 1);
  }
}

// A split count the CTA target sets past one cluster leaves a cluster size
// that divides it (cluster_size_for's condition).
TEST(SplitPlan, LongPlansKeepAClusterDivisor) {
  for (int32_t target : {decode_target_ctas(true), decode_target_ctas(false), 300}) {
    for (int32_t head_ctas = 1; head_ctas <= 64; ++head_ctas) {
      for (int32_t n : {1, 2, 3}) {
        const int32_t s = decode_splits(n, head_ctas, 1 << 20, target);
        if (s <= kDecodeMaxCluster) continue;
        EXPECT_EQ(s % 8, 0) << "target " << target << " head_ctas " << head_ctas << " n " << n << " splits " << s;
      }
    }
  }
}

// Clusters by default: a lone sequence with a short context and small heads
// (APH_DECODE_SHORT_CLUSTERS is not set under ctest).
TEST(SplitPlan, ClustersForALoneShortSequenceOfSmallHeads) {
  if (std::getenv("APH_DECODE_SHORT_CLUSTERS") != nullptr) GTEST_SKIP() << "the rule is overridden";
  EXPECT_TRUE(decode_uses_clusters(1, true, 64));
  EXPECT_TRUE(decode_uses_clusters(1, true, kDecodeClusterMaxHeadDim));
  EXPECT_FALSE(decode_uses_clusters(1, true, 128));
  EXPECT_FALSE(decode_uses_clusters(2, true, 64));
  EXPECT_FALSE(decode_uses_clusters(1, false, 64));
}

}  // namespace
}  // namespace aph::attention
