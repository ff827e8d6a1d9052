// The CPU linear on every type against dequantize + a naive fp64 matmul, on
// both kernel sets (AVX2 and portable) and both paths (int8, exact fp32).
#include <gtest/gtest.h>

#include <cmath>

#include "core/common/error.hpp"
#include "plugins/quant-gguf/cpu/dequant.hpp"
#include "plugins/quant-gguf/cpu/dot.hpp"
#include "plugins/quant-gguf/cpu/linear_cpu.hpp"
#include "tests/unit/gguf/random_blocks.hpp"

using namespace aph::gguf;

namespace {

struct Case {
  uint32_t type;
  bool exact;
};

std::string type_name(uint32_t t) { return std::string(type_traits(t)->name); }

void check_forward(uint32_t type, bool exact, int64_t m, int64_t k, int64_t n) {
  auto w = test_data::random_rows(type, n, k, 1234 + type);
  std::vector<float> bias(n);
  for (int64_t j = 0; j < n; ++j) bias[j] = 0.1f * static_cast<float>(j % 7) - 0.3f;
  CpuLinear lin(type, k, n, w.data(), bias, exact);

  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(m * k), y(m * n), wf(n * k);
  for (auto& v : x) v = normal(rng);
  for (int64_t j = 0; j < n; ++j) dequantize_row(type, w.data() + j * lin.row_bytes(), wf.data() + j * k, k);
  lin.forward(x.data(), m, y.data());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double ref = bias[j], mag = 0.0;
      for (int64_t c = 0; c < k; ++c) {
        ref += static_cast<double>(wf[j * k + c]) * x[i * k + c];
        mag += std::fabs(static_cast<double>(wf[j * k + c]) * x[i * k + c]);
      }
      // int8 activations carry ~1/254 relative error per element; errors
      // partly cancel, so 1% of the absolute sum is a loose but real bound.
      double tol = (exact ? 1e-5 : 1e-2) * mag + 1e-6;
      ASSERT_NEAR(y[i * n + j], ref, tol) << type_name(type) << " m=" << i << " n=" << j
                                          << (exact ? " exact" : " int8");
    }
}

}  // namespace

class LinearCpu : public ::testing::TestWithParam<Case> {};

TEST_P(LinearCpu, MatchesDequantizedMatmul) {
  for (int64_t m : {1, 3, 8, 13}) check_forward(GetParam().type, GetParam().exact, m, 512, 37);
}

std::vector<Case> all_cases() {
  std::vector<Case> c;
  for (uint32_t t : test_data::all_types()) {
    c.push_back({t, false});
    c.push_back({t, true});
  }
  return c;
}

INSTANTIATE_TEST_SUITE_P(AllTypes, LinearCpu, ::testing::ValuesIn(all_cases()),
                         [](const auto& info) {
                           return type_name(info.param.type) + (info.param.exact ? "_exact" : "_int8");
                         });

TEST(LinearCpu, UnpackReproducesDequantize) {
  for (uint32_t t : test_data::all_types()) {
    if (is_float_type(t)) continue;
    const int64_t k = 512;
    auto w = test_data::random_rows(t, 1, k, 99 + t);
    std::vector<float> ref(k), a(k / 16), b(k / 16);
    std::vector<int8_t> q(k);
    dequantize_row(t, w.data(), ref.data(), k);
    unpack_row_i8(t, w.data(), q.data(), a.data(), b.data(), k);
    int g = unpack_group(t);
    for (int64_t i = 0; i < k; ++i)
      ASSERT_FLOAT_EQ(a[i / g] * q[i] + b[i / g], ref[i]) << type_name(t) << " element " << i;
  }
}

TEST(LinearCpu, KernelSetsAgree) {
  const DotKernels* avx = avx2_kernels();
  if (!avx) GTEST_SKIP() << "no AVX2 on this CPU";
  const DotKernels& port = portable_kernels();
  const int64_t k = 1024;
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> x(k), w(k);
  for (auto& v : x) v = normal(rng);
  for (auto& v : w) v = normal(rng);
  std::vector<int8_t> q1(k), q2(k);
  std::vector<float> d1(k / 32), d2(k / 32), s1(k / 16), s2(k / 16);
  avx->quantize_act(x.data(), q1.data(), d1.data(), s1.data(), k);
  port.quantize_act(x.data(), q2.data(), d2.data(), s2.data(), k);
  EXPECT_EQ(q1, q2);
  EXPECT_EQ(d1, d2);
  EXPECT_EQ(s1, s2);
  EXPECT_NEAR(avx->dot_f32(w.data(), x.data(), k), port.dot_f32(w.data(), x.data(), k), 1e-3);
  auto wq = test_data::random_rows(kQ6_K, 1, k, 5);
  std::vector<int8_t> cq(k);
  std::vector<float> a(k / 16), b(k / 16);
  unpack_row_i8(kQ6_K, wq.data(), cq.data(), a.data(), b.data(), k);
  ActQ8 act{q1.data(), d1.data(), s1.data()};
  float r1 = avx->dot_g16(cq.data(), a.data(), b.data(), act, k);
  float r2 = port.dot_g16(cq.data(), a.data(), b.data(), act, k);
  EXPECT_NEAR(r1, r2, 1e-4 * (std::fabs(r2) + 1));
  // The 4-row kernels equal four single dots (rows 0 and 2 share x).
  const ActQ8 acts[4] = {act, ActQ8{q2.data(), d2.data(), s2.data()}, act, ActQ8{q2.data(), d2.data(), s2.data()}};
  float out_avx[4], out_port[4];
  avx->dot4_g16(cq.data(), a.data(), b.data(), acts, k, out_avx);
  port.dot4_g16(cq.data(), a.data(), b.data(), acts, k, out_port);
  for (int r = 0; r < 4; ++r) {
    EXPECT_NEAR(out_avx[r], port.dot_g16(cq.data(), a.data(), b.data(), acts[r], k), 1e-4 * (std::fabs(r2) + 1));
    EXPECT_NEAR(out_port[r], port.dot_g16(cq.data(), a.data(), b.data(), acts[r], k), 1e-6 * (std::fabs(r2) + 1));
  }
  auto w32 = test_data::random_rows(kQ4_K, 1, k, 6);
  unpack_row_i8(kQ4_K, w32.data(), cq.data(), a.data(), b.data(), k);
  avx->dot4_g32(cq.data(), a.data(), b.data(), acts, k, out_avx);
  for (int r = 0; r < 4; ++r) {
    float ref = port.dot_g32(cq.data(), a.data(), b.data(), acts[r], k);
    EXPECT_NEAR(out_avx[r], ref, 1e-4 * (std::fabs(ref) + 1));
  }
}

TEST(LinearCpu, GetRowsAndBadIds) {
  const int64_t k = 256, n = 10;
  auto w = test_data::random_rows(kQ4_K, n, k, 11);
  CpuLinear lin(kQ4_K, k, n, w.data(), {}, false);
  std::vector<int32_t> ids = {9, 0, 4};
  std::vector<float> out(3 * k), ref(k);
  lin.get_rows(ids.data(), 3, out.data());
  for (int i = 0; i < 3; ++i) {
    dequantize_row(kQ4_K, w.data() + ids[i] * lin.row_bytes(), ref.data(), k);
    for (int64_t c = 0; c < k; ++c) ASSERT_EQ(out[i * k + c], ref[c]);
  }
  int32_t bad = 10;
  EXPECT_THROW(lin.get_rows(&bad, 1, out.data()), aph::Error);
  EXPECT_THROW(CpuLinear(kQ4_K, 100, n, w.data(), {}, false), aph::Error);
  EXPECT_THROW(CpuLinear(16 /*IQ2_XXS*/, 256, n, w.data(), {}, false), aph::Error);
}

// The fused block kernels against the generic unpack + dot on the same int8
// activations: only the summation order differs.
TEST(LinearCpu, FusedBlockKernelsMatchUnpackPath) {
  const DotKernels& kern = dot_kernels();
  const int64_t k = 1024;
  std::mt19937 rng(9);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(k);
  for (auto& v : x) v = normal(rng);
  std::vector<int8_t> xq(k);
  std::vector<float> xd(k / 32), xs(k / 16);
  kern.quantize_act(x.data(), xq.data(), xd.data(), xs.data(), k);
  ActQ8 act{xq.data(), xd.data(), xs.data()};
  int fused_types = 0;
  for (uint32_t t : test_data::all_types()) {
    auto fused = kern.block_dot(t);
    if (!fused) continue;
    ++fused_types;
    auto w = test_data::random_rows(t, 4, k, 17 + t);
    const uint64_t row_bytes = w.size() / 4;
    const int g = unpack_group(t);
    std::vector<int8_t> q(k);
    std::vector<float> a(k / 16), b(k / 16);
    for (int r = 0; r < 4; ++r) {
      unpack_row_i8(t, w.data() + r * row_bytes, q.data(), a.data(), b.data(), k);
      float ref = (g == 16 ? kern.dot_g16 : kern.dot_g32)(q.data(), a.data(), b.data(), act, k);
      float got = fused(w.data() + r * row_bytes, act, k);
      EXPECT_NEAR(got, ref, 1e-4f * (std::fabs(ref) + 1.0f)) << type_name(t) << " row " << r;
    }
  }
  if (avx2_kernels()) {
    EXPECT_EQ(fused_types, 5);
  }
}
