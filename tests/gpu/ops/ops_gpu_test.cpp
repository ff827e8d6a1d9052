// One oracle for both backends: every op runs on the CPU (the reference, in
// f32) and on CUDA (f32 where the op allows it, f16, bf16) on the same random
// inputs, and the results must agree within the dtype's rounding.
#include <gtest/gtest.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/common/half.hpp"
#include "core/ops/kernels.hpp"
#include "core/ops/ops.hpp"

namespace {

using aph::Tensor;
namespace ops = aph::ops;

struct Cuda {
  cudaStream_t stream{};
  cublasHandle_t blas{};
  Cuda() {
    cudaSetDevice(0);
    cudaStreamCreate(&stream);
    cublasCreate(&blas);
  }
  ~Cuda() {
    cublasDestroy(blas);
    cudaStreamDestroy(stream);
  }
  ops::Exec exec() const {
    ops::Exec e;
    e.device = 0;
    e.stream = stream;
    e.blas = blas;
    return e;
  }
};

Tensor random_f32(std::vector<int64_t> shape, std::mt19937& rng, float scale = 1.0f) {
  Tensor t = Tensor::empty(std::move(shape), APH_DTYPE_F32, APH_DEVICE_CPU);
  std::normal_distribution<float> d(0.0f, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.as<float>()[i] = d(rng);
  return t;
}

// The values a dtype can hold: CPU reference inputs are rounded like the GPU's.
Tensor round_to(const Tensor& f, aph_dtype dt) {
  Tensor out = Tensor::empty(f.shape(), APH_DTYPE_F32, APH_DEVICE_CPU);
  for (int64_t i = 0; i < f.numel(); ++i) {
    float v = f.as<float>()[i];
    if (dt == APH_DTYPE_BF16) v = aph::bf16_to_f32(aph::f32_to_bf16(v));
    if (dt == APH_DTYPE_F16) v = aph::f16_to_f32(aph::f32_to_f16(v));
    out.as<float>()[i] = v;
  }
  return out;
}

// CPU f32 tensor -> device tensor of dtype dt.
Tensor upload(const Tensor& f, aph_dtype dt, const ops::Exec& ex) {
  Tensor d32 = f.to(0);
  if (dt == APH_DTYPE_F32) return d32;
  Tensor out = Tensor::empty(f.shape(), dt, 0);
  ops::convert(ex, d32, out);
  ops::synchronize(ex);
  return out;
}

Tensor download(const Tensor& d, const ops::Exec& ex) {
  Tensor f = Tensor::empty(d.shape(), APH_DTYPE_F32, 0);
  ops::convert(ex, d, f);
  ops::synchronize(ex);
  return f.to(APH_DEVICE_CPU);
}

double tol(aph_dtype dt) { return dt == APH_DTYPE_F32 ? 1e-4 : dt == APH_DTYPE_F16 ? 4e-3 : 2e-2; }

void expect_close(const Tensor& got, const Tensor& want, aph_dtype dt, const char* what) {
  ASSERT_EQ(got.numel(), want.numel());
  double scale = 1e-6, worst = 0;
  int64_t not_finite = 0;  // std::max would skip a NaN: a value gone bad must fail, not pass unseen
  for (int64_t i = 0; i < want.numel(); ++i) scale = std::max(scale, double(std::fabs(want.as<float>()[i])));
  for (int64_t i = 0; i < want.numel(); ++i) {
    const float g = got.as<float>()[i], w = want.as<float>()[i];
    if (!std::isfinite(g) && std::isfinite(w)) {
      ++not_finite;
    } else {
      worst = std::max(worst, double(std::fabs(g - w)));
    }
  }
  EXPECT_EQ(not_finite, 0) << what << " in " << aph::dtype_name(dt) << ": values not finite where the reference is";
  EXPECT_LE(worst / scale, tol(dt)) << what << " in " << aph::dtype_name(dt);
}

Tensor host_ids(const std::vector<int32_t>& v) {
  Tensor t = Tensor::empty({int64_t(v.size())}, APH_DTYPE_I32, APH_DEVICE_CPU);
  std::copy(v.begin(), v.end(), t.as<int32_t>());
  return t;
}

const aph_dtype kDtypes[] = {APH_DTYPE_F32, APH_DTYPE_F16, APH_DTYPE_BF16};

TEST(OpsGpu, EmbeddingNormsSiluGather) {
  Cuda cu;
  auto ex = cu.exec();
  std::mt19937 rng(11);
  for (aph_dtype dt : kDtypes) {
    const int64_t m = 5, h = 4096 + 8, v = 50;
    Tensor table = round_to(random_f32({v, h}, rng), dt);
    Tensor ids = host_ids({3, 49, 0, 7, 3});
    Tensor ref = Tensor::empty({m, h}, APH_DTYPE_F32, APH_DEVICE_CPU);
    ops::embedding(ops::Exec{}, table, ids, ref);
    Tensor out = Tensor::empty({m, h}, dt, 0);
    Tensor dids = ids.to(0);
    ops::embedding(ex, upload(table, dt, ex), dids, out);
    expect_close(download(out, ex), ref, dt, "embedding");

    Tensor x = round_to(random_f32({m, h}, rng), dt), d = round_to(random_f32({m, h}, rng), dt);
    Tensor w = random_f32({h}, rng), wd = w.to(0);
    Tensor nref = Tensor::empty({m, h}, APH_DTYPE_F32, APH_DEVICE_CPU);
    ops::rms_norm(ops::Exec{}, x, w, 1e-5f, nref);
    Tensor xd = upload(x, dt, ex), nout = Tensor::empty({m, h}, dt, 0);
    ops::rms_norm(ex, xd, wd, 1e-5f, nout);
    expect_close(download(nout, ex), nref, dt, "rms_norm");

    Tensor res = x.to(APH_DEVICE_CPU);
    ops::add_rms_norm(ops::Exec{}, res, d, w, 1e-5f, nref);
    Tensor dd = upload(d, dt, ex);
    // Out of place first (xd must stay x), then in place.
    Tensor res_out = Tensor::empty({m, h}, dt, 0), nout2 = Tensor::empty({m, h}, dt, 0);
    ops::add_rms_norm(ex, xd, dd, wd, 1e-5f, nout2, res_out);
    expect_close(download(nout2, ex), nref, dt, "add_rms_norm out (out of place)");
    expect_close(download(res_out, ex), res, dt, "add_rms_norm residual_out");
    expect_close(download(xd, ex), x, dt, "add_rms_norm input left as it was");
    ops::add_rms_norm(ex, xd, dd, wd, 1e-5f, nout);
    expect_close(download(nout, ex), nref, dt, "add_rms_norm out");
    expect_close(download(xd, ex), res, dt, "add_rms_norm residual");

    // n = 1000: whole 16-byte pieces (the kernel's vector form); 1001: not.
    for (const int64_t n : {int64_t{1000}, int64_t{1001}}) {
      Tensor gu = round_to(random_f32({m, 2 * n}, rng), dt);
      Tensor sref = Tensor::empty({m, n}, APH_DTYPE_F32, APH_DEVICE_CPU);
      ops::silu_mul(ops::Exec{}, gu.as<float>(), gu.as<float>() + n, 2 * n, sref);
      Tensor gud = upload(gu, dt, ex), sout = Tensor::empty({m, n}, dt, 0);
      const size_t es = aph::dtype_size(dt);
      ops::silu_mul(ex, gud.data(), static_cast<char*>(gud.data()) + n * es, 2 * n, sout);
      expect_close(download(sout, ex), sref, dt, (std::string("silu_mul n=") + std::to_string(n)).c_str());
    }

    Tensor idx = host_ids({4, 0, 2});
    Tensor gref = Tensor::empty({3, h}, APH_DTYPE_F32, APH_DEVICE_CPU);
    ops::gather_rows(ops::Exec{}, x, idx, gref);
    Tensor gout = Tensor::empty({3, h}, dt, 0);
    Tensor idxd = idx.to(0);
    ops::gather_rows(ex, upload(x, dt, ex), idxd, gout);
    expect_close(download(gout, ex), gref, dt, "gather_rows");
  }
}

TEST(OpsGpu, RopeBothStylesPartialRotaryStridedInput) {
  Cuda cu;
  auto ex = cu.exec();
  std::mt19937 rng(12);
  for (aph_dtype dt : kDtypes) {
    for (bool inter : {false, true}) {
      const int t = 6, nh = 4, nkv = 2, d = 128, rot = 96, stride = (nh + 2 * nkv) * d;
      Tensor qkv = round_to(random_f32({t, stride}, rng), dt);
      Tensor inv = Tensor::empty({rot / 2}, APH_DTYPE_F32, APH_DEVICE_CPU);
      for (int i = 0; i < rot / 2; ++i) inv.as<float>()[i] = std::pow(500000.0f, -2.0f * i / rot) / (i > 30 ? 8.0f : 1.0f);
      Tensor pos = host_ids({0, 1, 17, 300, 4095, 100000});
      ops::RopeParams p{nh, nkv, d, rot, inter, 1.1f};
      auto run = [&](const ops::Exec& e, const Tensor& src, aph_dtype odt, int32_t dev) {
        const size_t es = aph::dtype_size(src.dtype());
        const char* b = static_cast<const char*>(src.data());
        ops::QkvIn in{b, b + nh * d * es, b + (nh + nkv) * d * es, stride, stride, stride};
        Tensor q = Tensor::empty({t, nh * d}, odt, dev), k = Tensor::empty({t, nkv * d}, odt, dev),
               v = Tensor::empty({t, nkv * d}, odt, dev);
        Tensor ps = dev == APH_DEVICE_CPU ? pos : pos.to(dev), iv = dev == APH_DEVICE_CPU ? inv : inv.to(dev);
        ops::rope_qkv(e, p, in, ps, iv, q, k, v);
        return std::vector<Tensor>{q, k, v};
      };
      auto ref = run(ops::Exec{}, qkv, APH_DTYPE_F32, APH_DEVICE_CPU);
      auto got = run(ex, upload(qkv, dt, ex), dt, 0);
      // Position 100000 in fp32 angles: allow the float rounding of pos*inv_freq.
      const double slack = dt == APH_DTYPE_F32 ? 1e-2 : tol(dt);
      for (int i = 0; i < 3; ++i) {
        Tensor g = download(got[i], ex);
        double worst = 0;
        for (int64_t j = 0; j < g.numel(); ++j) worst = std::max(worst, double(std::fabs(g.as<float>()[j] - ref[i].as<float>()[j])));
        EXPECT_LE(worst, slack * 5) << "rope output " << i << " " << aph::dtype_name(dt) << " interleaved=" << inter;
      }
    }
  }
}

TEST(OpsGpu, LinearGemvAndCublasPathsWithBias) {
  Cuda cu;
  auto ex = cu.exec();
  std::mt19937 rng(13);
  for (aph_dtype dt : kDtypes) {
    for (int64_t m : {1, 2, 3, 8, 37}) {
      // 136: fewer 16-byte vectors than a split's warps have lanes; 100: not
      // whole vectors (the scalar kernel).
      for (int64_t k : {4096, 136, 100}) {
        const int64_t n = 1000;
        Tensor x = round_to(random_f32({m, k}, rng), dt), w = round_to(random_f32({n, k}, rng, 0.05f), dt);
        Tensor b = random_f32({n}, rng);
        Tensor ref = Tensor::empty({m, n}, APH_DTYPE_F32, APH_DEVICE_CPU);
        ops::linear(ops::Exec{}, x, w, &b, ref);
        Tensor xd = upload(x, dt, ex), wd = upload(w, dt, ex), bd = b.to(0);
        Tensor y = Tensor::empty({m, n}, dt, 0);
        ops::linear(ex, xd, wd, &bd, y);
        expect_close(download(y, ex), ref, dt, "linear");
        Tensor y32 = Tensor::empty({m, n}, APH_DTYPE_F32, 0);  // the logits form: F32 out
        ops::linear(ex, xd, wd, nullptr, y32);
        ops::synchronize(ex);
        Tensor ref0 = Tensor::empty({m, n}, APH_DTYPE_F32, APH_DEVICE_CPU);
        ops::linear(ops::Exec{}, x, w, nullptr, ref0);
        expect_close(y32.to(APH_DEVICE_CPU), ref0, dt == APH_DTYPE_F32 ? dt : APH_DTYPE_F16, "linear f32 out");
        if (m > aph::ops::kernels::kGemvMaxRows) continue;
        for (int split : {1, 2, 4, 8}) {  // every split of a row between warps, not only the one linear chose
          ASSERT_EQ(aph::ops::kernels::gemv(xd.data(), wd.data(), bd.as<float>(), y32.data(), m, n, k, dt,
                                            APH_DTYPE_F32, cu.stream, split),
                    0);
          ops::synchronize(ex);
          expect_close(y32.to(APH_DEVICE_CPU), ref, dt == APH_DTYPE_F32 ? dt : APH_DTYPE_F16, "gemv split");
        }
      }
    }
  }
}

// The gated GEMV (gate and up rows in one CTA, silu(gate) * up stored) must
// equal the GEMV into [m, 2n] followed by silu_mul bit for bit, at every
// split it takes; and ops::linear_silu_mul must agree with the CPU reference.
TEST(OpsGpu, LinearSiluMulEqualsGemvThenSiluMul) {
  Cuda cu;
  auto ex = cu.exec();
  std::mt19937 rng(17);
  for (aph_dtype dt : kDtypes) {
    for (int64_t m : {1, 2, 5}) {
      // 4096: two warps a row; 14336: the 8B's width, capped at 4; 136:
      // short rows; 100: whole 16-byte vectors in f32 only (the two-kernel
      // path for f16 and bf16).
      for (int64_t k : {4096, 14336, 136, 100}) {
        const int64_t n = 1003;  // not a multiple of a CTA's outputs
        Tensor x = round_to(random_f32({m, k}, rng), dt), w = round_to(random_f32({2 * n, k}, rng, 0.05f), dt);
        Tensor b = random_f32({2 * n}, rng);
        Tensor scratch_ref = Tensor::empty({m, 2 * n}, APH_DTYPE_F32, APH_DEVICE_CPU);
        Tensor ref = Tensor::empty({m, n}, APH_DTYPE_F32, APH_DEVICE_CPU);
        ops::linear_silu_mul(ops::Exec{}, x, w, &b, scratch_ref, ref);
        Tensor xd = upload(x, dt, ex), wd = upload(w, dt, ex), bd = b.to(0);
        Tensor scratch = Tensor::empty({m, 2 * n}, dt, 0), y = Tensor::empty({m, n}, dt, 0);
        ops::linear_silu_mul(ex, xd, wd, &bd, scratch, y);
        const std::string what = std::string("linear_silu_mul ") + aph::dtype_name(dt) + " m=" + std::to_string(m) +
                                 " k=" + std::to_string(k);
        expect_close(download(y, ex), ref, dt, what.c_str());
        if (k % static_cast<int64_t>(16 / aph::dtype_size(dt)) != 0) {
          EXPECT_EQ(aph::ops::kernels::gemv_silu_mul(xd.data(), wd.data(), bd.as<float>(), y.data(), m, n, k, dt, dt,
                                                     cu.stream),
                    aph::ops::kernels::kGemvNotTaken);
          continue;
        }
        EXPECT_NE(aph::ops::kernels::gemv_silu_mul(xd.data(), wd.data(), bd.as<float>(), y.data(), m, n, k, dt, dt,
                                                   cu.stream, 8),
                  0)
            << "a split of 8 leaves no up slot";
        for (int split : {1, 2, 4}) {
          ASSERT_EQ(aph::ops::kernels::gemv(xd.data(), wd.data(), bd.as<float>(), scratch.data(), m, 2 * n, k, dt, dt,
                                            cu.stream, split),
                    0);
          Tensor two = Tensor::empty({m, n}, dt, 0);
          const size_t es = aph::dtype_size(dt);
          ops::silu_mul(ex, scratch.data(), static_cast<char*>(scratch.data()) + n * es, 2 * n, two);
          ASSERT_EQ(aph::ops::kernels::gemv_silu_mul(xd.data(), wd.data(), bd.as<float>(), y.data(), m, n, k, dt, dt,
                                                     cu.stream, split),
                    0);
          ops::synchronize(ex);
          std::vector<char> a(static_cast<size_t>(y.nbytes())), c(a.size());
          ASSERT_EQ(cudaMemcpy(a.data(), y.data(), a.size(), cudaMemcpyDeviceToHost), cudaSuccess);
          ASSERT_EQ(cudaMemcpy(c.data(), two.data(), c.size(), cudaMemcpyDeviceToHost), cudaSuccess);
          EXPECT_TRUE(a == c) << what << " split " << split << ": not bit for bit the GEMV then silu_mul";
        }
      }
    }
  }
}

TEST(OpsGpu, LogitsOp) {
  Cuda cu;
  auto ex = cu.exec();
  std::mt19937 rng(14);
  const aph_dtype dt = APH_DTYPE_BF16;
  const int64_t t = 9, h = 576, v = 49152;
  Tensor hidden = round_to(random_f32({t, h}, rng), dt), w = random_f32({h}, rng), head = round_to(random_f32({v, h}, rng, 0.05f), dt);
  Tensor idx = host_ids({8, 2});
  Tensor normed = Tensor::empty({2, h}, APH_DTYPE_F32, APH_DEVICE_CPU), ref = Tensor::empty({2, v}, APH_DTYPE_F32, APH_DEVICE_CPU);
  ops::logits(ops::Exec{}, hidden, idx, w, 1e-5f, head, normed, ref);
  Tensor nd = Tensor::empty({2, h}, dt, 0), out = Tensor::empty({2, v}, APH_DTYPE_F32, 0);
  Tensor hd = upload(hidden, dt, ex), wd = w.to(0), headd = upload(head, dt, ex), idxd = idx.to(0);
  ops::logits(ex, hd, idxd, wd, 1e-5f, headd, nd, out);
  ops::synchronize(ex);
  expect_close(out.to(APH_DEVICE_CPU), ref, dt, "logits");
}

// copy_words (word_copy.cu) between page-locked host memory and the device,
// with a patch laid over part of the destination: the upload of a step's
// metadata with the sampler's ids fed in, and the ids' copy to the host.
TEST(OpsGpu, CopyWordsBetweenPinnedHostAndDevice) {
  Cuda cu;
  for (int64_t words : {1, 7, 1024, 4099, 70000}) {
    uint32_t* host = nullptr;
    ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&host), words * 4), cudaSuccess);
    void* host_dev = nullptr;
    ASSERT_EQ(cudaHostGetDevicePointer(&host_dev, host, 0), cudaSuccess);
    for (int64_t i = 0; i < words; ++i) host[i] = static_cast<uint32_t>(i * 2654435761u);
    const int64_t patch_at = words / 3, patch_words = std::min<int64_t>(words - patch_at, 37);
    std::vector<uint32_t> patch(patch_words);
    for (int64_t j = 0; j < patch_words; ++j) patch[j] = 0xA0000000u + static_cast<uint32_t>(j);
    uint32_t *dev = nullptr, *patch_dev = nullptr;
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev), words * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&patch_dev), std::max<int64_t>(patch_words, 1) * 4), cudaSuccess);
    cudaMemcpy(patch_dev, patch.data(), patch_words * 4, cudaMemcpyHostToDevice);
    // Host -> device with the patch, then device -> a second pinned buffer.
    ASSERT_EQ(ops::kernels::copy_words(dev, static_cast<const uint32_t*>(host_dev), words, patch_dev, patch_at,
                                       patch_words, cu.stream), 0);
    uint32_t* back = nullptr;
    ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&back), words * 4), cudaSuccess);
    void* back_dev = nullptr;
    ASSERT_EQ(cudaHostGetDevicePointer(&back_dev, back, 0), cudaSuccess);
    std::fill(back, back + words, 0u);
    ASSERT_EQ(ops::kernels::copy_words(static_cast<uint32_t*>(back_dev), dev, words, nullptr, 0, 0, cu.stream), 0);
    ASSERT_EQ(cudaStreamSynchronize(cu.stream), cudaSuccess);
    int64_t wrong = 0;
    for (int64_t i = 0; i < words; ++i) {
      const bool patched = i >= patch_at && i < patch_at + patch_words;
      wrong += back[i] != (patched ? patch[i - patch_at] : host[i]);
    }
    EXPECT_EQ(wrong, 0) << words << " words";
    cudaFreeHost(back);
    cudaFree(patch_dev);
    cudaFree(dev);
    cudaFreeHost(host);
  }
}

// copy_word_spans: only the spans reach the destination (the rest keeps what
// it held), the patch lands inside one span, and spans of zero words and a
// span at the very end are handled.
TEST(OpsGpu, CopyWordSpansLeaveTheRestAlone) {
  Cuda cu;
  constexpr int64_t kWords = 9000;
  uint32_t* host = nullptr;
  ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&host), kWords * 4), cudaSuccess);
  void* host_dev = nullptr;
  ASSERT_EQ(cudaHostGetDevicePointer(&host_dev, host, 0), cudaSuccess);
  for (int64_t i = 0; i < kWords; ++i) host[i] = static_cast<uint32_t>(i * 2246822519u + 1);
  ops::kernels::WordSpans spans;
  const int64_t first[] = {0, 17, 40, 1000, 1024, 5000, 8990};
  const int64_t words[] = {3, 1, 0, 24, 1500, 1, 10};
  for (int r = 0; r < 7; ++r) {
    spans.first[r] = first[r];
    spans.words[r] = words[r];
  }
  spans.count = 7;
  constexpr uint32_t kOld = 0xDEADBEEFu;
  const std::vector<uint32_t> patch = {0xA1u, 0xA2u, 0xA3u, 0xA4u, 0xA5u};
  const int64_t patch_at = 1100;
  std::vector<uint32_t> back(kWords, kOld);
  uint32_t *dev = nullptr, *patch_dev = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev), kWords * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&patch_dev), patch.size() * 4), cudaSuccess);
  cudaMemcpy(dev, back.data(), kWords * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(patch_dev, patch.data(), patch.size() * 4, cudaMemcpyHostToDevice);
  ASSERT_EQ(ops::kernels::copy_word_spans(dev, static_cast<const uint32_t*>(host_dev), spans, patch_dev, patch_at,
                                          static_cast<int64_t>(patch.size()), cu.stream),
            0);
  ASSERT_EQ(cudaStreamSynchronize(cu.stream), cudaSuccess);
  cudaMemcpy(back.data(), dev, kWords * 4, cudaMemcpyDeviceToHost);
  int64_t wrong = 0;
  for (int64_t i = 0; i < kWords; ++i) {
    uint32_t want = kOld;
    for (int r = 0; r < 7; ++r)
      if (i >= first[r] && i < first[r] + words[r]) want = host[i];
    if (i >= patch_at && i < patch_at + static_cast<int64_t>(patch.size())) want = patch[i - patch_at];
    wrong += back[i] != want;
  }
  EXPECT_EQ(wrong, 0);
  spans.count = ops::kernels::WordSpans::kMax + 1;
  EXPECT_NE(ops::kernels::copy_word_spans(dev, static_cast<const uint32_t*>(host_dev), spans, nullptr, 0, 0,
                                          cu.stream),
            0);
  cudaFree(patch_dev);
  cudaFree(dev);
  cudaFreeHost(host);
}

}  // namespace
