// linear_forward_gated_mlp: at batch 1 the gate/up matvec's CTAs quantize
// silu(gate) * up for the down projection as they finish (the last CTA of a
// 32-row block does it), so no quantization kernel runs between the two.
// The reference is the plugin's two calls on the same inputs:
// linear_forward_shared_rms_norm, then linear_forward_silu_mul (whose
// quantization kernel gives the same codes). gate, up, residual_out and y
// must match bit for bit, on every one of several calls in a row (the block
// counters must be back at zero after each), also with y the same buffer
// as delta (as the host passes them). Calls the plugin cannot take (other
// types, gate and up of two types, M > 1) must be declined with nothing
// written.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/common/half.hpp"
#include "plugins/quant-gguf/container/ggml_types.hpp"
#include "plugins/quant-gguf/linear.hpp"
#include "tests/gpu/gguf/abi_views.hpp"
#include "tests/gpu/gguf/cuda_fixture.hpp"
#include "tests/gpu/gguf/device_buffer.hpp"
#include "tests/unit/gguf/random_blocks.hpp"

using namespace aph::gguf;
using aph::gguf::test_gpu::Device;
using aph::gguf::test_gpu::linear_desc;
using aph::gguf::test_gpu::view;
using aph::gguf::test_gpu::weight_info;

namespace {

constexpr uint32_t kQ4_0 = 2, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14;

struct Case {
  uint32_t gate_type, up_type, down_type;
  int64_t k;  // the hidden width: gate/up input, down output
  int64_t n;  // the intermediate width: gate/up rows, down input
  int64_t m;
  aph_dtype act;
  bool y_is_delta;  // the down projection overwrites delta, as in the host's graph
  bool taken;
  std::string name() const {
    return std::string(type_traits(gate_type)->name) + "/" + std::string(type_traits(up_type)->name) + "/" +
           std::string(type_traits(down_type)->name) + " k=" + std::to_string(k) + " n=" + std::to_string(n) +
           " m=" + std::to_string(m) + (act == APH_DTYPE_BF16 ? " bf16" : " f16") + (y_is_delta ? " y=delta" : "");
  }
};

// The call is opt-in (APH_GGUF_GATED_MLP, off by default): this binary
// turns it on before the plugin first reads the flag, unless the
// environment says otherwise.
const bool kGatedMlpOn = [] { return setenv("APH_GGUF_GATED_MLP", "1", 0) == 0; }();

using GatedMlp = test_gpu::WithCuda<::testing::TestWithParam<Case>>;

TEST_P(GatedMlp, EqualsGroupThenSiluMul) {
  ASSERT_TRUE(kGatedMlpOn);
  const Case c = GetParam();
  const std::string what = c.name();
  const int64_t k = c.k, n = c.n, m = c.m;
  const bool bf16 = c.act == APH_DTYPE_BF16;
  const uint32_t types[3] = {c.gate_type, c.up_type, c.down_type};
  const int64_t rows[3] = {n, n, k}, cols[3] = {k, k, n};
  std::vector<std::vector<uint8_t>> w;
  std::vector<aph_weight_info> wi;
  std::vector<std::unique_ptr<Linear>> linears;
  for (int t = 0; t < 3; ++t) w.push_back(test_data::random_rows(types[t], rows[t], cols[t], 61 + 5 * t + types[t]));
  for (int t = 0; t < 3; ++t) wi.push_back(weight_info(types[t], rows[t], cols[t], w[t]));
  const char* names[3] = {"gate", "up", "down"};
  for (int t = 0; t < 3; ++t)
    linears.push_back(std::make_unique<Linear>(state_, linear_desc(names[t], &wi[t], rows[t], cols[t], c.act, stream_)));
  const std::vector<Linear*> gate_up = {linears[0].get(), linears[1].get()};
  Linear& down = *linears[2];

  std::mt19937 rng(9);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto act_values = [&](int64_t count, float scale) {
    std::vector<uint16_t> h(count);
    for (auto& v : h) v = bf16 ? aph::f32_to_bf16(scale * normal(rng)) : aph::f32_to_f16(scale * normal(rng));
    return h;
  };
  std::vector<float> norm_w(k);
  for (auto& v : norm_w) v = 0.5f + 0.5f * std::fabs(normal(rng));
  const std::vector<uint16_t> delta_h = act_values(m * k, 1.0f);
  Device<uint16_t> residual(act_values(m * k, 3.0f)), delta(delta_h);
  Device<float> norm_wd(norm_w);
  const aph_tensor rt = view(residual.ptr, c.act, 0, {m, k}), dt = view(delta.ptr, c.act, 0, {m, k}),
                   wt = view(norm_wd.ptr, APH_DTYPE_F32, 0, {k});

  // Reference: the group, then the down projection reading gate and up.
  Device<uint16_t> ref_out(m * k, 0xFF), ref_gate(m * n, 0xFF), ref_up(m * n, 0xFF), ref_y(m * k, 0xFF);
  aph_tensor ref_ot = view(ref_out.ptr, c.act, 0, {m, k});
  aph_rms_norm_input in{};
  in.size = sizeof(in);
  in.residual = &rt;
  in.delta = &dt;
  in.weight = &wt;
  in.eps = 1e-5f;
  in.residual_out = &ref_ot;
  aph_tensor ref_ys[2] = {view(ref_gate.ptr, c.act, 0, {m, n}), view(ref_up.ptr, c.act, 0, {m, n})};
  aph_tensor ref_yt = view(ref_y.ptr, c.act, 0, {m, k});
  const bool ref_fused = Linear::forward_shared_rms_norm(gate_up, in, ref_ys, stream_) &&
                         down.forward_silu_mul(ref_ys[0], ref_ys[1], ref_yt, stream_);
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess) << what;

  // The plugin's one call, three times over the same buffers.
  Device<uint16_t> out(m * k, 0xFF), gate(m * n, 0xFF), up(m * n, 0xFF), y_own(m * k);
  for (int call = 0; call < 3; ++call) {
    const std::string at = what + " call " + std::to_string(call);
    cudaMemset(out.ptr, 0xFF, m * k * 2);
    cudaMemset(gate.ptr, 0xFF, m * n * 2);
    cudaMemset(up.ptr, 0xFF, m * n * 2);
    uint16_t* y = c.y_is_delta ? delta.ptr : y_own.ptr;
    cudaMemcpy(delta.ptr, delta_h.data(), m * k * 2, cudaMemcpyHostToDevice);
    if (!c.y_is_delta) cudaMemset(y_own.ptr, 0xFF, m * k * 2);
    aph_tensor ot = view(out.ptr, c.act, 0, {m, k}), yt = view(y, c.act, 0, {m, k});
    aph_tensor ys[2] = {view(gate.ptr, c.act, 0, {m, n}), view(up.ptr, c.act, 0, {m, n})};
    in.residual_out = &ot;
    const bool taken = Linear::forward_gated_mlp(gate_up, down, in, ys, yt, stream_);
    ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess) << at;
    ASSERT_EQ(taken, c.taken) << at;
    if (!taken) {
      for (uint16_t v : gate.host()) ASSERT_EQ(v, 0xFFFF) << at << ": a declined call wrote gate";
      for (uint16_t v : up.host()) ASSERT_EQ(v, 0xFFFF) << at << ": a declined call wrote up";
      for (uint16_t v : out.host()) ASSERT_EQ(v, 0xFFFF) << at << ": a declined call wrote residual_out";
      if (!c.y_is_delta) {
        for (uint16_t v : y_own.host()) ASSERT_EQ(v, 0xFFFF) << at << ": a declined call wrote y";
      }
      return;
    }
    ASSERT_TRUE(ref_fused) << what << ": the reference's plugin calls were declined";
    EXPECT_EQ(out.host(), ref_out.host()) << at << ": residual_out";
    EXPECT_EQ(gate.host(), ref_gate.host()) << at << ": gate";
    EXPECT_EQ(up.host(), ref_up.host()) << at << ": up";
    const std::vector<uint16_t> got = c.y_is_delta ? delta.host() : y_own.host(), want = ref_y.host();
    for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << at << ": y element " << i;
  }
}

std::vector<Case> cases() {
  const aph_dtype bf = APH_DTYPE_BF16, f16 = APH_DTYPE_F16;
  return {
      // Enough CTAs for two rows a warp (8 rows a CTA, 8 CTAs a block).
      {kQ4_K, kQ4_K, kQ6_K, 512, 2048, 1, bf, true, true},
      {kQ4_K, kQ4_K, kQ6_K, 512, 2048, 1, f16, false, true},
      // Fewer CTAs than SMs: one row a warp (4 rows a CTA, 16 CTAs a block).
      {kQ4_K, kQ4_K, kQ4_K, 768, 256, 1, bf, false, true},
      {kQ6_K, kQ6_K, kQ5_K, 1024, 1536, 1, f16, true, true},
      {kQ5_K, kQ5_K, kQ6_K, 256, 4096, 1, bf, false, true},
      // Declined: gate and up of two types; a type without the fast
      // matvec; two tokens.
      {kQ4_K, kQ6_K, kQ6_K, 512, 1024, 1, bf, false, false},
      {kQ4_0, kQ4_0, kQ4_0, 512, 1024, 1, bf, false, false},
      {kQ4_K, kQ4_K, kQ6_K, 512, 1024, 2, bf, false, false},
  };
}

INSTANTIATE_TEST_SUITE_P(Cases, GatedMlp, ::testing::ValuesIn(cases()), [](const auto& info) {
  return "case" + std::to_string(info.index);
});

}  // namespace
