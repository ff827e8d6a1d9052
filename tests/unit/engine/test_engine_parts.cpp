// The engine's pure pieces: KV pool sizing, graph sizes, KV dtypes, StepBatch
// layout, histograms, and one choice's stop handling.
#include <gtest/gtest.h>

#include "core/common/error.hpp"
#include "core/engine/choice_output.hpp"
#include "core/engine/histogram.hpp"
#include "core/engine/kv_setup.hpp"
#include "core/engine/step_batch.hpp"
#include "fake_model.hpp"

using namespace aph::engine;
using aph::model::KvDtype;

TEST(KvSetup, CpuPoolComesFromTheConfiguredBytes) {
  PoolInputs in;
  in.cpu_kv_cache_bytes = 1000;
  in.bytes_per_block = 64;
  EXPECT_EQ(kv_pool_blocks(in), 15);
}

TEST(KvSetup, CudaPoolIsTheUtilizationMinusThePeak) {
  PoolInputs in;
  in.cuda = true;
  in.total_device_bytes = 100ll << 30;
  in.peak_bytes = 20ll << 30;
  in.gpu_memory_utilization = 0.9;
  in.bytes_per_block = 1 << 20;
  EXPECT_EQ(kv_pool_blocks(in), 70 * 1024);
  in.kv_cache_memory = 4ll << 30;  // explicit bytes win
  EXPECT_EQ(kv_pool_blocks(in), 4 * 1024);
}

TEST(KvSetup, NoRoomNamesTheSetting) {
  PoolInputs in;
  in.cuda = true;
  in.total_device_bytes = 10ll << 30;
  in.peak_bytes = 9ll << 30;
  in.gpu_memory_utilization = 0.5;
  in.bytes_per_block = 1 << 20;
  try {
    kv_pool_blocks(in);
    FAIL();
  } catch (const aph::Error& e) {
    EXPECT_EQ(e.code(), APH_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(std::string(e.what()).rfind("gpu_memory_utilization", 0), 0u);
  }
}

TEST(KvSetup, GraphBatchSizes) {
  EXPECT_EQ(decode_graph_batch_sizes(64),
            (std::vector<int>{1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64}));
  EXPECT_EQ(decode_graph_batch_sizes(20), (std::vector<int>{1, 2, 4, 8, 16, 20}));
  EXPECT_EQ(decode_graph_batch_sizes(3), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(decode_graph_batch_sizes(1), (std::vector<int>{1}));
}

TEST(KvSetup, KvDtypes) {
  EXPECT_EQ(parse_kv_dtype("auto", APH_DTYPE_BF16), KvDtype::BF16);
  EXPECT_EQ(parse_kv_dtype("auto", APH_DTYPE_F16), KvDtype::F16);
  EXPECT_EQ(parse_kv_dtype("auto", APH_DTYPE_F32), KvDtype::F32);
  EXPECT_EQ(parse_kv_dtype("fp16", APH_DTYPE_BF16), KvDtype::F16);
  EXPECT_EQ(parse_kv_dtype("bf16", APH_DTYPE_F16), KvDtype::BF16);
  EXPECT_EQ(parse_kv_dtype("fp8", APH_DTYPE_BF16), KvDtype::F8_E4M3);
  EXPECT_EQ(parse_kv_dtype("fp8_e4m3", APH_DTYPE_BF16), KvDtype::F8_E4M3);
  EXPECT_EQ(parse_kv_dtype("fp8_e5m2", APH_DTYPE_BF16), KvDtype::F8_E5M2);
  EXPECT_THROW(parse_kv_dtype("int4", APH_DTYPE_BF16), aph::Error);
}

TEST(StepBatch, LayoutFollowsTheScheduledSequences) {
  aph::sched::Sequence a, b;
  a.tokens = {10, 11, 12, 13, 14, 15};  // 4 cached, 2 new (prefill chunk end)
  a.num_computed = 4;
  a.blocks.table = {7, 3};
  b.tokens = {20, 21, 22};  // decode of the last token
  b.num_computed = 2;
  b.blocks.table = {5};
  aph::sched::SchedulerOutput out;
  out.seqs = {{&b, 1, true}, {&a, 2, false}};
  out.num_batched_tokens = 3;
  auto batch = build_step_batch(out, 4, 3);
  EXPECT_EQ(batch.token_ids, (std::vector<int32_t>{22, 14, 15}));
  EXPECT_EQ(batch.positions, (std::vector<int32_t>{2, 4, 5}));
  EXPECT_EQ(batch.query_start, (std::vector<int32_t>{0, 1, 3}));
  EXPECT_EQ(batch.context_lens, (std::vector<int32_t>{3, 6}));
  EXPECT_EQ(batch.block_tables, (std::vector<int32_t>{5, 0, 0, 7, 3, 0}));
  EXPECT_EQ(batch.slot_mapping, (std::vector<int64_t>{22, 12, 13}));
  EXPECT_EQ(batch.logits_indices, (std::vector<int32_t>{0}));
  EXPECT_FALSE(batch.decode_only());
}

TEST(Histogram, BucketsAndSum) {
  Histogram h = make_histogram({0.1, 1.0});
  observe(h, 0.05);
  observe(h, 0.1);
  observe(h, 0.5);
  observe(h, 7);
  EXPECT_EQ(h.bucket_counts, (std::vector<uint64_t>{2, 1, 1}));
  EXPECT_EQ(h.count, 4u);
  EXPECT_DOUBLE_EQ(h.sum, 7.65);
}

namespace {
GenerationParams params_with(std::vector<std::string> stop, int max_tokens) {
  GenerationParams p;
  p.prompt_ids = {0, 3};
  p.stop = std::move(stop);
  p.max_tokens = max_tokens;
  return p;
}
}  // namespace

TEST(ChoiceOutput, StopStringAcrossTokensIsHeldBackThenTrimmed) {
  aph::test::FakeTokenizer tok;
  auto p = params_with({"cd"}, 10);
  std::vector<int32_t> eog{1};
  ChoiceOutput out(tok, p, eog, 100);
  EXPECT_EQ(out.push(3, 3).text, "a");  // 'a'
  auto s = out.push(5, 4);              // 'c' may start "cd": held
  EXPECT_EQ(s.text, "");
  EXPECT_FALSE(s.finished);
  s = out.push(6, 5);  // 'd' completes it
  EXPECT_TRUE(s.finished);
  EXPECT_EQ(s.finish_reason, "stop");
  EXPECT_EQ(s.text, "");
  EXPECT_EQ(*s.stop_reason, "cd");
}

TEST(ChoiceOutput, LengthReleasesHeldText) {
  aph::test::FakeTokenizer tok;
  auto p = params_with({"cd"}, 2);
  std::vector<int32_t> eog{1};
  ChoiceOutput out(tok, p, eog, 100);
  EXPECT_EQ(out.push(3, 3).text, "a");
  auto s = out.push(5, 4);  // 'c' held, but the choice ends here
  EXPECT_TRUE(s.finished);
  EXPECT_EQ(s.finish_reason, "length");
  EXPECT_EQ(s.text, "c");
}

TEST(ChoiceOutput, ContextEndIsLength) {
  aph::test::FakeTokenizer tok;
  auto p = params_with({}, 50);
  std::vector<int32_t> eog{1};
  ChoiceOutput out(tok, p, eog, 4);
  EXPECT_FALSE(out.push(3, 3).finished);
  auto s = out.push(3, 4);
  EXPECT_TRUE(s.finished);
  EXPECT_EQ(s.finish_reason, "length");
}
