// Each CPU op against the naive formula, computed here in double.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/common/error.hpp"
#include "core/common/half.hpp"
#include "core/ops/ops.hpp"

namespace {

using aph::Tensor;
namespace ops = aph::ops;

Tensor random_f32(std::vector<int64_t> shape, std::mt19937& rng, float scale = 1.0f) {
  Tensor t = Tensor::empty(std::move(shape), APH_DTYPE_F32, APH_DEVICE_CPU);
  std::normal_distribution<float> d(0.0f, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.as<float>()[i] = d(rng);
  return t;
}

Tensor ids_tensor(const std::vector<int32_t>& ids) {
  Tensor t = Tensor::empty({static_cast<int64_t>(ids.size())}, APH_DTYPE_I32, APH_DEVICE_CPU);
  std::copy(ids.begin(), ids.end(), t.as<int32_t>());
  return t;
}

Tensor to_half(const Tensor& f, aph_dtype dt) {
  Tensor t = Tensor::empty(f.shape(), dt, APH_DEVICE_CPU);
  for (int64_t i = 0; i < f.numel(); ++i) {
    t.as<uint16_t>()[i] = dt == APH_DTYPE_BF16 ? aph::f32_to_bf16(f.as<float>()[i]) : aph::f32_to_f16(f.as<float>()[i]);
  }
  return t;
}

float widen(const Tensor& t, int64_t i) {
  if (t.dtype() == APH_DTYPE_F32) return t.as<float>()[i];
  if (t.dtype() == APH_DTYPE_BF16) return aph::bf16_to_f32(t.as<uint16_t>()[i]);
  return aph::f16_to_f32(t.as<uint16_t>()[i]);
}

TEST(OpsCpu, EmbeddingGathersRowsOfEveryDtype) {
  std::mt19937 rng(1);
  Tensor table = random_f32({10, 12}, rng);
  for (aph_dtype dt : {APH_DTYPE_F32, APH_DTYPE_F16, APH_DTYPE_BF16}) {
    Tensor tab = dt == APH_DTYPE_F32 ? table : to_half(table, dt);
    Tensor ids = ids_tensor({3, 0, 9, 3});
    Tensor out = Tensor::empty({4, 12}, APH_DTYPE_F32, APH_DEVICE_CPU);
    ops::embedding(ops::Exec{}, tab, ids, out);
    for (int r = 0; r < 4; ++r)
      for (int j = 0; j < 12; ++j) EXPECT_EQ(out.as<float>()[r * 12 + j], widen(tab, ids.as<int32_t>()[r] * 12 + j));
  }
  Tensor bad = ids_tensor({10});
  Tensor out = Tensor::empty({1, 12}, APH_DTYPE_F32, APH_DEVICE_CPU);
  EXPECT_THROW(ops::embedding(ops::Exec{}, table, bad, out), aph::Error);
}

TEST(OpsCpu, RmsNormAndFusedResidualAdd) {
  std::mt19937 rng(2);
  const int m = 3, h = 37;
  Tensor x = random_f32({m, h}, rng), d = random_f32({m, h}, rng), w = random_f32({h}, rng);
  Tensor res = Tensor::empty({m, h}, APH_DTYPE_F32, APH_DEVICE_CPU);
  std::copy(x.as<float>(), x.as<float>() + m * h, res.as<float>());
  Tensor out = Tensor::empty({m, h}, APH_DTYPE_F32, APH_DEVICE_CPU);
  ops::rms_norm(ops::Exec{}, x, w, 1e-5f, out);
  for (int r = 0; r < m; ++r) {
    double ss = 0;
    for (int j = 0; j < h; ++j) ss += double(x.as<float>()[r * h + j]) * x.as<float>()[r * h + j];
    const double inv = 1.0 / std::sqrt(ss / h + 1e-5);
    for (int j = 0; j < h; ++j) EXPECT_NEAR(out.as<float>()[r * h + j], x.as<float>()[r * h + j] * inv * w.as<float>()[j], 1e-5);
  }
  ops::add_rms_norm(ops::Exec{}, res, d, w, 1e-5f, out);
  for (int r = 0; r < m; ++r) {
    double ss = 0;
    for (int j = 0; j < h; ++j) {
      const double s = double(x.as<float>()[r * h + j]) + d.as<float>()[r * h + j];
      EXPECT_NEAR(res.as<float>()[r * h + j], s, 1e-6);
      ss += s * s;
    }
    const double inv = 1.0 / std::sqrt(ss / h + 1e-5);
    for (int j = 0; j < h; ++j) EXPECT_NEAR(out.as<float>()[r * h + j], res.as<float>()[r * h + j] * inv * w.as<float>()[j], 1e-5);
  }
  // Out of place: the same sums land in residual_out, the input stays.
  Tensor res_out = Tensor::empty({m, h}, APH_DTYPE_F32, APH_DEVICE_CPU);
  Tensor out2 = Tensor::empty({m, h}, APH_DTYPE_F32, APH_DEVICE_CPU);
  ops::add_rms_norm(ops::Exec{}, x, d, w, 1e-5f, out2, res_out);
  for (int i = 0; i < m * h; ++i) {
    EXPECT_EQ(res_out.as<float>()[i], res.as<float>()[i]);
    EXPECT_EQ(out2.as<float>()[i], out.as<float>()[i]);
  }
  EXPECT_NE(x.as<float>()[0], res.as<float>()[0]);  // x was not written
}

// Rotation of pair (a, b) of head `hd` at `pos` by the naive formula.
void expect_rotated(const float* in, const float* out, int pos, const std::vector<float>& inv, float mscale, int a, int b,
                    int i) {
  const double ang = double(pos) * inv[i];
  EXPECT_NEAR(out[a], (in[a] * std::cos(ang) - in[b] * std::sin(ang)) * mscale, 1e-5);
  EXPECT_NEAR(out[b], (in[b] * std::cos(ang) + in[a] * std::sin(ang)) * mscale, 1e-5);
}

TEST(OpsCpu, RopeNeoxAndInterleavedOnFusedQkvRows) {
  std::mt19937 rng(3);
  const int t = 3, nh = 2, nkv = 1, d = 8, rot = 6;
  const int stride = (nh + 2 * nkv) * d;
  Tensor qkv = random_f32({t, stride}, rng);
  std::vector<float> invf = {1.0f, 0.3f, 0.01f};
  Tensor inv = Tensor::empty({3}, APH_DTYPE_F32, APH_DEVICE_CPU);
  std::copy(invf.begin(), invf.end(), inv.as<float>());
  Tensor pos = ids_tensor({0, 5, 1000});
  for (bool interleaved : {false, true}) {
    ops::RopeParams p{nh, nkv, d, rot, interleaved, 1.25f};
    const float* base = qkv.as<float>();
    ops::QkvIn in{base, base + nh * d, base + (nh + nkv) * d, stride, stride, stride};
    Tensor q = Tensor::empty({t, nh * d}, APH_DTYPE_F32, APH_DEVICE_CPU);
    Tensor k = Tensor::empty({t, nkv * d}, APH_DTYPE_F32, APH_DEVICE_CPU);
    Tensor v = Tensor::empty({t, nkv * d}, APH_DTYPE_F32, APH_DEVICE_CPU);
    ops::rope_qkv(ops::Exec{}, p, in, pos, inv, q, k, v);
    for (int tok = 0; tok < t; ++tok) {
      const int ps = pos.as<int32_t>()[tok];
      for (int hd = 0; hd < nh + nkv; ++hd) {
        const float* src = base + tok * stride + hd * d;
        const float* dst = hd < nh ? q.as<float>() + tok * nh * d + hd * d : k.as<float>() + tok * nkv * d;
        for (int i = 0; i < rot / 2; ++i) {
          const int a = interleaved ? 2 * i : i, b = interleaved ? 2 * i + 1 : i + rot / 2;
          expect_rotated(src, dst, ps, invf, 1.25f, a, b, i);
        }
        for (int j = rot; j < d; ++j) EXPECT_EQ(dst[j], src[j]);  // past rotary_dim: untouched
      }
      for (int j = 0; j < nkv * d; ++j) EXPECT_EQ(v.as<float>()[tok * nkv * d + j], base[tok * stride + (nh + nkv) * d + j]);
    }
  }
}

// FORMATS.md §1.4: adjacent-pair RoPE on GGUF-permuted rows equals NEOX on HF rows.
TEST(OpsCpu, InterleavedRopeOnPermutedRowsEqualsNeox) {
  std::mt19937 rng(4);
  const int d = 16;
  Tensor hf = random_f32({1, d}, rng);
  Tensor gguf = Tensor::empty({1, d}, APH_DTYPE_F32, APH_DEVICE_CPU);
  for (int i = 0; i < d / 2; ++i)
    for (int j = 0; j < 2; ++j) gguf.as<float>()[2 * i + j] = hf.as<float>()[j * d / 2 + i];
  Tensor inv = Tensor::empty({d / 2}, APH_DTYPE_F32, APH_DEVICE_CPU);
  for (int i = 0; i < d / 2; ++i) inv.as<float>()[i] = std::pow(10000.0f, -2.0f * i / d);
  Tensor pos = ids_tensor({7});
  auto run = [&](const Tensor& x, bool inter) {
    Tensor q = Tensor::empty({1, d}, APH_DTYPE_F32, APH_DEVICE_CPU), k = Tensor::empty({1, d}, APH_DTYPE_F32, APH_DEVICE_CPU);
    Tensor v = Tensor::empty({1, d}, APH_DTYPE_F32, APH_DEVICE_CPU);
    ops::QkvIn in{x.data(), x.data(), x.data(), d, d, d};
    ops::rope_qkv(ops::Exec{}, ops::RopeParams{1, 1, d, d, inter, 1.0f}, in, pos, inv, q, k, v);
    return q;
  };
  Tensor a = run(hf, false), b = run(gguf, true);
  for (int i = 0; i < d / 2; ++i)
    for (int j = 0; j < 2; ++j) EXPECT_NEAR(b.as<float>()[2 * i + j], a.as<float>()[j * d / 2 + i], 1e-6);
}

TEST(OpsCpu, SiluMulOnFusedRows) {
  std::mt19937 rng(5);
  const int m = 2, n = 9;
  Tensor gu = random_f32({m, 2 * n}, rng);
  Tensor out = Tensor::empty({m, n}, APH_DTYPE_F32, APH_DEVICE_CPU);
  ops::silu_mul(ops::Exec{}, gu.as<float>(), gu.as<float>() + n, 2 * n, out);
  for (int r = 0; r < m; ++r)
    for (int j = 0; j < n; ++j) {
      const double g = gu.as<float>()[r * 2 * n + j], u = gu.as<float>()[r * 2 * n + n + j];
      EXPECT_NEAR(out.as<float>()[r * n + j], g / (1 + std::exp(-g)) * u, 1e-5);
    }
}

TEST(OpsCpu, LinearAllWeightDtypesShapesAndThreads) {
  std::mt19937 rng(6);
  ops::ThreadPool pool(3);
  for (int64_t k : {5, 8, 67}) {
    for (int64_t n : {1, 6, 33}) {
      for (int64_t m : {1, 4}) {
        Tensor x = random_f32({m, k}, rng), w32 = random_f32({n, k}, rng), bias = random_f32({n}, rng);
        for (aph_dtype dt : {APH_DTYPE_F32, APH_DTYPE_F16, APH_DTYPE_BF16}) {
          Tensor w = dt == APH_DTYPE_F32 ? w32 : to_half(w32, dt);
          for (ops::ThreadPool* p : {static_cast<ops::ThreadPool*>(nullptr), &pool}) {
            ops::Exec ex;
            ex.pool = p;
            Tensor y = Tensor::empty({m, n}, APH_DTYPE_F32, APH_DEVICE_CPU);
            ops::linear(ex, x, w, &bias, y);
            for (int64_t r = 0; r < m; ++r)
              for (int64_t c = 0; c < n; ++c) {
                double ref = bias.as<float>()[c];
                for (int64_t i = 0; i < k; ++i) ref += double(x.as<float>()[r * k + i]) * widen(w, c * k + i);
                EXPECT_NEAR(y.as<float>()[r * n + c], ref, 1e-4 * (1 + std::fabs(ref))) << k << " " << n << " " << m;
              }
          }
        }
      }
    }
  }
}

TEST(OpsCpu, LinearRejectsMismatchedShapes) {
  Tensor x = Tensor::zeros({2, 4}, APH_DTYPE_F32, APH_DEVICE_CPU), w = Tensor::zeros({3, 5}, APH_DTYPE_F32, APH_DEVICE_CPU);
  Tensor y = Tensor::zeros({2, 3}, APH_DTYPE_F32, APH_DEVICE_CPU);
  EXPECT_THROW(ops::linear(ops::Exec{}, x, w, nullptr, y), aph::Error);
}

TEST(OpsCpu, LinearSiluMulOfGateThenUpRows) {
  std::mt19937 rng(16);
  const int64_t m = 3, n = 7, k = 20;
  Tensor x = random_f32({m, k}, rng), w = to_half(random_f32({2 * n, k}, rng, 0.3f), APH_DTYPE_BF16);
  Tensor bias = random_f32({2 * n}, rng);
  Tensor scratch = Tensor::empty({m + 2, 2 * n}, APH_DTYPE_F32, APH_DEVICE_CPU);  // more rows than m: allowed
  Tensor y = Tensor::empty({m, n}, APH_DTYPE_F32, APH_DEVICE_CPU);
  ops::linear_silu_mul(ops::Exec{}, x, w, &bias, scratch, y);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t i = 0; i < n; ++i) {
      double g = bias.as<float>()[i], u = bias.as<float>()[n + i];
      for (int64_t j = 0; j < k; ++j) {
        g += double(x.as<float>()[r * k + j]) * widen(w, i * k + j);
        u += double(x.as<float>()[r * k + j]) * widen(w, (n + i) * k + j);
      }
      const double want = g / (1 + std::exp(-g)) * u;
      EXPECT_NEAR(y.as<float>()[r * n + i], want, 1e-4 * (1 + std::fabs(want))) << r << " " << i;
    }
}

TEST(OpsCpu, LinearSiluMulRejectsOddWeightsShortScratchAndBias) {
  Tensor x = Tensor::zeros({2, 4}, APH_DTYPE_F32, APH_DEVICE_CPU), y = Tensor::zeros({2, 3}, APH_DTYPE_F32, APH_DEVICE_CPU);
  Tensor w = Tensor::zeros({6, 4}, APH_DTYPE_F32, APH_DEVICE_CPU), odd = Tensor::zeros({5, 4}, APH_DTYPE_F32, APH_DEVICE_CPU);
  Tensor scratch = Tensor::zeros({2, 6}, APH_DTYPE_F32, APH_DEVICE_CPU), short_scratch = Tensor::zeros({1, 6}, APH_DTYPE_F32, APH_DEVICE_CPU);
  Tensor half_bias = Tensor::zeros({3}, APH_DTYPE_F32, APH_DEVICE_CPU);
  EXPECT_NO_THROW(ops::linear_silu_mul(ops::Exec{}, x, w, nullptr, scratch, y));
  EXPECT_THROW(ops::linear_silu_mul(ops::Exec{}, x, odd, nullptr, scratch, y), aph::Error);
  EXPECT_THROW(ops::linear_silu_mul(ops::Exec{}, x, w, nullptr, short_scratch, y), aph::Error);
  EXPECT_THROW(ops::linear_silu_mul(ops::Exec{}, x, w, &half_bias, scratch, y), aph::Error);
}

TEST(OpsCpu, LogitsNormsOnlyTheRequestedRows) {
  std::mt19937 rng(7);
  const int t = 4, h = 16, v = 11;
  Tensor hidden = random_f32({t, h}, rng), w = random_f32({h}, rng), head = random_f32({v, h}, rng);
  Tensor idx = ids_tensor({3, 1});
  Tensor normed = Tensor::empty({2, h}, APH_DTYPE_F32, APH_DEVICE_CPU), out = Tensor::empty({2, v}, APH_DTYPE_F32, APH_DEVICE_CPU);
  ops::logits(ops::Exec{}, hidden, idx, w, 1e-6f, head, normed, out);
  for (int r = 0; r < 2; ++r) {
    const float* x = hidden.as<float>() + idx.as<int32_t>()[r] * h;
    double ss = 0;
    for (int j = 0; j < h; ++j) ss += double(x[j]) * x[j];
    const double inv = 1 / std::sqrt(ss / h + 1e-6);
    for (int c = 0; c < v; ++c) {
      double ref = 0;
      for (int j = 0; j < h; ++j) ref += x[j] * inv * w.as<float>()[j] * head.as<float>()[c * h + j];
      EXPECT_NEAR(out.as<float>()[r * v + c], ref, 1e-4 * (1 + std::fabs(ref)));
    }
  }
}

TEST(OpsCpu, ConvertRoundTripsHalfTypes) {
  std::mt19937 rng(8);
  Tensor x = random_f32({100}, rng);
  for (aph_dtype dt : {APH_DTYPE_F16, APH_DTYPE_BF16}) {
    Tensor h = Tensor::empty({100}, dt, APH_DEVICE_CPU), back = Tensor::empty({100}, APH_DTYPE_F32, APH_DEVICE_CPU);
    ops::convert(ops::Exec{}, x, h);
    ops::convert(ops::Exec{}, h, back);
    for (int i = 0; i < 100; ++i) EXPECT_NEAR(back.as<float>()[i], x.as<float>()[i], 1e-2 * (1 + std::fabs(x.as<float>()[i])));
  }
}

TEST(ThreadPool, CoversEveryIndexOnceAndRethrows) {
  ops::ThreadPool pool(4);
  std::vector<int> hits(1000, 0);
  pool.parallel_for(1000, 7, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) hits[i]++;
  });
  for (int h : hits) EXPECT_EQ(h, 1);
  EXPECT_THROW(pool.parallel_for(100, 1, [](int64_t b, int64_t) {
    if (b > 0) throw std::runtime_error("boom");
  }),
               std::runtime_error);
  int calls = 0;
  pool.parallel_for(3, 10, [&](int64_t, int64_t) { ++calls; });
  EXPECT_EQ(calls, 1);
}

}  // namespace
