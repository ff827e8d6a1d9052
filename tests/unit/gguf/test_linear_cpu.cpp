// The CPU linear on every type against dequantize + a naive fp64 matmul, on
// both kernel sets (AVX2 and portable) and both paths (int8, exact fp32).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

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

// Eight rows of `type` unpacked and interleaved as Rows8 wants them.
struct Unpacked8 {
  std::vector<int8_t> q;
  std::vector<float> a, b;
  int group;
  Unpacked8(uint32_t type, const uint8_t* w, uint64_t row_bytes, int64_t k)
      : q(k * 8), a(k / unpack_group(type) * 8), b(a.size()), group(unpack_group(type)) {
    const uint8_t* rows[8];
    for (int i = 0; i < 8; ++i) rows[i] = w + i * row_bytes;
    unpack_rows8(type, rows, k, q.data(), a.data(), b.data());
  }
  Rows8 view() const { return Rows8{q.data(), a.data(), b.data(), group}; }
};

// m activation rows quantized by `kern`.
struct Acts {
  std::vector<int8_t> q;
  std::vector<float> d, s;
  std::vector<int32_t> sum;
  std::vector<ActQ8> rows;
  Acts(const DotKernels& kern, int64_t m, int64_t k, uint32_t seed) : q(m * k), d(m * k / 32), s(m * k / 16), sum(m * k / 16) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    std::vector<float> x(k);
    for (int64_t i = 0; i < m; ++i) {
      for (auto& v : x) v = normal(rng);
      kern.quantize_act(x.data(), &q[i * k], &d[i * k / 32], &s[i * k / 16], &sum[i * k / 16], k);
      rows.push_back({&q[i * k], &d[i * k / 32], &s[i * k / 16], &sum[i * k / 16]});
    }
  }
};

TEST(LinearCpu, KernelSetsAgree) {
  const DotKernels* avx = avx2_kernels();
  if (!avx) GTEST_SKIP() << "no AVX2 on this CPU";
  const DotKernels& port = portable_kernels();
  const int64_t k = 1024, m = 5;
  const Acts xa(*avx, m, k, 3), xp(port, m, k, 3);
  EXPECT_EQ(xa.q, xp.q);
  EXPECT_EQ(xa.d, xp.d);
  EXPECT_EQ(xa.s, xp.s);
  EXPECT_EQ(xa.sum, xp.sum);
  std::vector<float> w(k), x(k);
  std::mt19937 rng(4);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (auto& v : w) v = normal(rng);
  for (auto& v : x) v = normal(rng);
  EXPECT_NEAR(avx->dot_f32(w.data(), x.data(), k), port.dot_f32(w.data(), x.data(), k), 1e-3);
  // Groups of 16 and of 32; signed (Q8_0, Q6_K) and unsigned codes. Only
  // the float rounding differs (FMA against multiply-add).
  for (uint32_t t : {kQ6_K, kQ4_K, kQ8_0, kQ4_1}) {
    auto wq = test_data::random_rows(t, 8, k, 5 + t);
    const Unpacked8 u(t, wq.data(), wq.size() / 8, k);
    std::vector<float> out_avx(m * 8), out_port(m * 8);
    avx->rows8(u.view(), xa.rows.data(), m, k, out_avx.data());
    port.rows8(u.view(), xa.rows.data(), m, k, out_port.data());
    for (int64_t i = 0; i < m * 8; ++i)
      EXPECT_NEAR(out_avx[i], out_port[i], 1e-4 * (std::fabs(out_port[i]) + 1)) << type_name(t) << " " << i;
  }
}

// vpdpbusd and maddubs + madd sum exactly: the two x86 sets give the same
// bits, direct and unpacked.
TEST(LinearCpu, VnniKernelsGiveTheAvx2Bits) {
  const DotKernels* vnni = avx_vnni_kernels();
  const DotKernels* avx = avx2_kernels();
  if (!vnni || !avx) GTEST_SKIP() << "no AVX-VNNI on this CPU or compiler";
  const int64_t k = 1024, m = 6;
  const Acts x(*avx, m, k, 12);
  for (uint32_t t : test_data::all_types()) {
    if (is_float_type(t)) continue;
    auto w = test_data::random_rows(t, 8, k, 40 + t);
    const uint64_t row_bytes = w.size() / 8;
    const Unpacked8 u(t, w.data(), row_bytes, k);
    std::vector<float> a(m * 8), b(m * 8);
    vnni->rows8(u.view(), x.rows.data(), m, k, a.data());
    avx->rows8(u.view(), x.rows.data(), m, k, b.data());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0) << type_name(t) << " unpacked";
    if (auto direct = vnni->rows8_direct(t)) {
      const uint8_t* rows[8];
      for (int i = 0; i < 8; ++i) rows[i] = w.data() + i * row_bytes;
      direct(rows, x.rows.data(), m, k, a.data());
      avx->rows8_direct(t)(rows, x.rows.data(), m, k, b.data());
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0) << type_name(t) << " direct";
    }
  }
}

// The direct kernels against the unpacked one on the same activations: the
// same bits (the batch invariance of the CPU linear rests on it).
TEST(LinearCpu, DirectKernelsGiveTheUnpackedKernelsBits) {
  const DotKernels& kern = dot_kernels();
  const int64_t k = 1024, m = 5;
  const Acts x(kern, m, k, 9);
  int direct_types = 0;
  for (uint32_t t : test_data::all_types()) {
    auto direct = kern.rows8_direct(t);
    if (!direct) continue;
    ++direct_types;
    auto w = test_data::random_rows(t, 8, k, 17 + t);
    const uint64_t row_bytes = w.size() / 8;
    const Unpacked8 u(t, w.data(), row_bytes, k);
    const uint8_t* rows[8];
    for (int i = 0; i < 8; ++i) rows[i] = w.data() + i * row_bytes;
    std::vector<float> got(m * 8), want(m * 8);
    direct(rows, x.rows.data(), m, k, got.data());
    kern.rows8(u.view(), x.rows.data(), m, k, want.data());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0) << type_name(t);
  }
  if (avx2_kernels()) {
    EXPECT_EQ(direct_types, 5);
  }
}

// Row i of a batch of 70 equals the same row alone, bit for bit, for every
// type: alone takes the direct kernel (where the type has one), the batch
// (past kDirectMaxRows) the unpacked one; 37 weight rows (not a multiple of
// 8) leave a partial block.
TEST(LinearCpu, ARowGivesTheSameBitsInAnyBatch) {
  const int64_t k = 512, n = 37, m = 70;
  for (uint32_t t : test_data::all_types()) {
    if (is_float_type(t)) continue;
    auto w = test_data::random_rows(t, n, k, 31 + t);
    CpuLinear lin(t, k, n, w.data(), {}, false);
    std::mt19937 rng(8);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(m * k), batch(m * n), alone(n);
    for (auto& v : x) v = normal(rng);
    lin.forward(x.data(), m, batch.data());
    for (int64_t i = 0; i < m; i += 23) {
      lin.forward(x.data() + i * k, 1, alone.data());
      EXPECT_EQ(std::memcmp(alone.data(), batch.data() + i * n, n * 4), 0) << type_name(t) << " row " << i;
    }
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
