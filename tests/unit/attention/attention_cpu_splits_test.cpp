// The CPU attention's online softmax over key splits: against the dense
// reference at contexts of many splits, and bit for bit the same whatever
// way its splits run and whichever call (decode or prefill chunk, alone or
// in a batch) a query arrives in. Batch invariance of the whole engine on
// the CPU rests on the last two.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/attention/attention_cpu.hpp"
#include "core/attention/cpu/tile_kernels.hpp"
#include "core/attention/paged_attention.hpp"
#include "core/common/thread_pool.hpp"
#include "tests/unit/attention/attention_problem.hpp"

namespace aph::attention {
namespace {

using testing::Problem;
using testing::ProblemSpec;

ProblemSpec long_spec(aph_dtype kv, int32_t head_dim) {
  ProblemSpec spec;
  spec.head_dim = head_dim;
  spec.num_heads = 6;
  spec.num_kv_heads = 2;
  spec.kv_dtype = kv;
  spec.seed = 11 + head_dim;
  // Decodes across 1-5 splits of 256 keys (ending on and off a split
  // boundary), and prefill chunks whose queries start in one split and end
  // in the next.
  spec.seqs = {{1, 1100}, {1, 256}, {1, 257}, {40, 530}, {33, 33}, {70, 900}};
  return spec;
}

std::vector<float> run(Problem& p, CpuSplitWork work, ThreadPool* pool = nullptr) {
  std::vector<float> out(static_cast<size_t>(p.n_tokens) * p.spec.num_heads * p.spec.head_dim, 0.0f);
  PagedAttentionArgs a = p.args(out.data());
  a.cpu_pool = pool;
  write_kv_cache_cpu(a);
  attention_cpu(a, work);
  return out;
}

float worst_error(const std::vector<float>& got, const std::vector<float>& want) {
  float worst = 0;
  for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
  return worst;
}

TEST(AttentionCpuSplits, ApartAndInOrderGiveTheSameBitsAndMatchTheReference) {
  for (aph_dtype kv : {APH_DTYPE_F32, APH_DTYPE_F16, APH_DTYPE_F8_E4M3}) {
    for (int32_t hd : {64, 80, 128}) {
      ProblemSpec spec = long_spec(kv, hd);
      if (testing::is_fp8_dtype(kv)) spec.k_scale = spec.v_scale = 0.05f;
      Problem p = testing::make_problem(spec);
      const std::vector<float> want = testing::reference_attention(p);
      const std::vector<float> apart = run(p, CpuSplitWork::kApart);
      const std::vector<float> in_order = run(p, CpuSplitWork::kInOrder);
      const std::vector<float> automatic = run(p, CpuSplitWork::kAuto);
      ASSERT_EQ(std::memcmp(apart.data(), in_order.data(), apart.size() * 4), 0) << "hd " << hd << " kv " << kv;
      ASSERT_EQ(std::memcmp(apart.data(), automatic.data(), apart.size() * 4), 0) << "hd " << hd << " kv " << kv;
      EXPECT_LE(worst_error(apart, want), 2e-5f) << "hd " << hd << " kv " << kv;
    }
  }
}

// engine.cpu_threads reaches the attention through cpu_pool: one thread or
// three give the shared pool's bits (the splits' layout does not depend on
// the thread count, only which items run apart).
TEST(AttentionCpuSplits, TheCallersPoolGivesTheSameBits) {
  Problem p = testing::make_problem(long_spec(APH_DTYPE_F16, 128));
  const std::vector<float> shared = run(p, CpuSplitWork::kAuto);
  for (int threads : {1, 3}) {
    ThreadPool pool(threads);
    const std::vector<float> own = run(p, CpuSplitWork::kAuto, &pool);
    ASSERT_EQ(std::memcmp(shared.data(), own.data(), shared.size() * 4), 0) << threads << " threads";
  }
}

// The last query of a prefill chunk, then the same token as a lone decode
// (its k/v already cached), then inside a batch with other sequences.
TEST(AttentionCpuSplits, AQueryGivesTheSameBitsInAnyCall) {
  ProblemSpec spec;
  spec.head_dim = 64;
  spec.num_heads = 9;
  spec.num_kv_heads = 3;
  spec.kv_dtype = APH_DTYPE_F16;
  spec.seqs = {{37, 777}, {1, 300}, {1, 1000}, {5, 40}};
  Problem p = testing::make_problem(spec);
  const size_t qrow = static_cast<size_t>(spec.num_heads) * spec.head_dim;
  const std::vector<float> batch = run(p, CpuSplitWork::kAuto);
  const int32_t last = p.query_start[1] - 1;  // sequence 0's last token, position 776

  PagedAttentionArgs lone = p.args(nullptr);
  std::vector<float> out(qrow, 0.0f);
  const int32_t starts[2] = {0, 1};
  const int32_t ctx[1] = {777};
  lone.q = p.q.data() + last * qrow;
  lone.out = out.data();
  lone.n_tokens = 1;
  lone.n_seqs = 1;
  lone.query_start = starts;
  lone.context_lens = ctx;
  lone.max_query_len = 1;
  for (CpuSplitWork work : {CpuSplitWork::kAuto, CpuSplitWork::kApart, CpuSplitWork::kInOrder}) {
    std::fill(out.begin(), out.end(), 0.0f);
    attention_cpu(lone, work);
    EXPECT_EQ(std::memcmp(out.data(), batch.data() + last * qrow, qrow * 4), 0)
        << "work " << static_cast<int>(work);
  }
}

TEST(AttentionCpuTileKernels, AvxAndPortableAgree) {
  const cpu::TileKernels* avx2 = cpu::avx2_tile_kernels();
  if (avx2 == nullptr) GTEST_SKIP() << "no AVX2 on this CPU or build";
  const cpu::TileKernels& ref = cpu::portable_tile_kernels();
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  for (int32_t hd : {64, 80, 96, 128, 256}) {
    for (int32_t n : {1, 3, 8, 13, 16}) {
      std::vector<float> q(hd), kv(static_cast<size_t>(n) * hd);
      for (float& x : q) x = uni(rng);
      for (float& x : kv) x = uni(rng);
      std::vector<const float*> rows(n);
      for (int32_t j = 0; j < n; ++j) rows[j] = kv.data() + j * hd;
      float s1[cpu::kTileKeys], s2[cpu::kTileKeys];
      avx2->scores(q.data(), rows.data(), n, hd, 0.125f, s1);
      ref.scores(q.data(), rows.data(), n, hd, 0.125f, s2);
      for (int32_t j = 0; j < n; ++j) EXPECT_NEAR(s1[j], s2[j], 1e-5f) << "hd " << hd << " n " << n;
      // exp over the whole range a softmax sees, down to where it underflows.
      for (int32_t j = 0; j < n; ++j) s1[j] = -100.0f * static_cast<float>(j) / static_cast<float>(n);
      float p1[cpu::kTileKeys], p2[cpu::kTileKeys];
      const float sum1 = avx2->exp_sum(s1, 0.0f, n, p1), sum2 = ref.exp_sum(s1, 0.0f, n, p2);
      EXPECT_NEAR(sum1, sum2, 2e-6f * sum2);
      for (int32_t j = 0; j < n; ++j) EXPECT_NEAR(p1[j], p2[j], 2e-7f * p2[j] + 1e-38f) << s1[j];
      std::vector<float> acc1(hd), acc2(hd);
      for (int32_t d = 0; d < hd; ++d) acc1[d] = acc2[d] = uni(rng);
      avx2->accumulate(acc1.data(), 0.5f, p1, rows.data(), n, hd);
      ref.accumulate(acc2.data(), 0.5f, p1, rows.data(), n, hd);
      for (int32_t d = 0; d < hd; ++d) EXPECT_NEAR(acc1[d], acc2[d], 1e-5f);
    }
  }
  std::vector<uint16_t> halves(40);
  for (size_t i = 0; i < halves.size(); ++i) halves[i] = static_cast<uint16_t>(0x3c00 + 997 * i);
  std::vector<float> w1(halves.size()), w2(halves.size());
  for (auto widen : {&cpu::TileKernels::widen_f16, &cpu::TileKernels::widen_bf16}) {
    (avx2->*widen)(halves.data(), w1.data(), static_cast<int32_t>(halves.size()));
    (ref.*widen)(halves.data(), w2.data(), static_cast<int32_t>(halves.size()));
    EXPECT_EQ(std::memcmp(w1.data(), w2.data(), w1.size() * 4), 0);
  }
  std::vector<uint8_t> codes(40);
  for (size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<uint8_t>(6 * i + 1);
  const auto& table = fp8_table(kE4M3);
  avx2->widen_fp8(codes.data(), table.data(), 0.25f, w1.data(), static_cast<int32_t>(codes.size()));
  ref.widen_fp8(codes.data(), table.data(), 0.25f, w2.data(), static_cast<int32_t>(codes.size()));
  EXPECT_EQ(std::memcmp(w1.data(), w2.data(), w1.size() * 4), 0);  // NaN codes too
}

}  // namespace
}  // namespace aph::attention
