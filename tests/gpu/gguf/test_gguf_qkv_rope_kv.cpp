// linear_forward_qkv_rope_kv: the q/k/v matvecs rotate q and k by RoPE and
// store k and v into the paged KV cache themselves. The reference is the
// host's two steps on the same inputs: the plugin's own
// linear_forward_shared_rms_norm, then the core's KV write with RoPE
// (paged_attention with no sequence to attend). q, both caches (every byte,
// untouched slots included) and residual_out must match bit for bit; a
// padding token (slot -1) stores nothing. Groups the plugin cannot take (q
// and k outside the k-quants' fast matvec, where a warp holds a RoPE pair's
// rows) must be declined with nothing written.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/attention/paged_attention.hpp"
#include "core/common/half.hpp"
#include "core/common/tensor.hpp"
#include "plugins/quant-gguf/container/ggml_types.hpp"
#include "plugins/quant-gguf/linear.hpp"
#include "tests/gpu/gguf/abi_views.hpp"
#include "tests/gpu/gguf/cuda_fixture.hpp"
#include "tests/unit/gguf/random_blocks.hpp"

using namespace aph::gguf;
using aph::gguf::test_gpu::linear_desc;
using aph::gguf::test_gpu::view;
using aph::gguf::test_gpu::weight_info;

namespace {

constexpr uint32_t kQ4_0 = 2, kQ4_1 = 3, kQ4_K = 12, kQ6_K = 14;
constexpr int32_t kHeadDim = 64, kHeads = 4, kKvHeads = 2, kBlockSize = 16, kBlocks = 4;

template <typename T>
struct Device {
  T* ptr = nullptr;
  size_t count = 0;
  explicit Device(size_t n, int fill = 0) : count(n) {
    if (cudaMalloc(&ptr, std::max<size_t>(n, 1) * sizeof(T)) == cudaSuccess) cudaMemset(ptr, fill, n * sizeof(T));
  }
  explicit Device(const std::vector<T>& h) : Device(h.size()) {
    cudaMemcpy(ptr, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice);
  }
  ~Device() { cudaFree(ptr); }
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  std::vector<T> host() const {
    std::vector<T> h(count);
    cudaMemcpy(h.data(), ptr, count * sizeof(T), cudaMemcpyDeviceToHost);
    return h;
  }
};

struct Case {
  uint32_t q_type, k_type, v_type;
  int64_t k;  // input width
  int64_t m;  // tokens
  int32_t rotary_dim;
  aph_dtype act, kv;
  bool taken;  // whether the plugin takes the call
  std::string name() const {
    return std::string(type_traits(q_type)->name) + "/" + std::string(type_traits(k_type)->name) + "/" +
           std::string(type_traits(v_type)->name) + " k=" + std::to_string(k) + " m=" + std::to_string(m) + " rot=" + std::to_string(rotary_dim) +
           (act == APH_DTYPE_BF16 ? " bf16" : " f16") + " kv=" + aph::dtype_name(kv);
  }
};

size_t kv_bytes(aph_dtype d) { return d == APH_DTYPE_F8_E4M3 || d == APH_DTYPE_F8_E5M2 ? 1 : 2; }

using QkvRopeKv = test_gpu::WithCuda<::testing::TestWithParam<Case>>;

TEST_P(QkvRopeKv, EqualsProjectionThenKvWrite) {
  const Case c = GetParam();
  const std::string what = c.name();
  const int64_t k = c.k, m = c.m, qn = kHeads * kHeadDim, kvn = kKvHeads * kHeadDim;
  const bool bf16 = c.act == APH_DTYPE_BF16;
  const uint32_t types[3] = {c.q_type, c.k_type, c.v_type};
  const int64_t ns[3] = {qn, kvn, kvn};
  std::vector<std::vector<uint8_t>> w;
  std::vector<aph_weight_info> wi;
  std::vector<std::unique_ptr<Linear>> linears;
  std::vector<Linear*> group;
  for (int t = 0; t < 3; ++t) w.push_back(test_data::random_rows(types[t], ns[t], k, 101 + 7 * t + types[t]));
  for (int t = 0; t < 3; ++t) wi.push_back(weight_info(types[t], ns[t], k, w[t]));
  for (int t = 0; t < 3; ++t) {
    linears.push_back(std::make_unique<Linear>(state_, linear_desc("qkv", &wi[t], ns[t], k, c.act, stream_)));
    group.push_back(linears.back().get());
  }

  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto act_values = [&](int64_t count, float scale) {
    std::vector<uint16_t> h(count);
    for (auto& v : h) v = bf16 ? aph::f32_to_bf16(scale * normal(rng)) : aph::f32_to_f16(scale * normal(rng));
    return h;
  };
  std::vector<float> norm_w(k);
  for (auto& v : norm_w) v = 0.5f + 0.5f * std::fabs(normal(rng));
  std::vector<float> inv_freq(c.rotary_dim / 2);
  for (size_t i = 0; i < inv_freq.size(); ++i)
    inv_freq[i] = static_cast<float>(std::pow(10000.0, -2.0 * static_cast<double>(i) / c.rotary_dim));
  std::vector<int32_t> positions = {517, 3, 40000};
  std::vector<int64_t> slots = {kBlockSize + 5, -1, 3 * kBlockSize + 15};  // token 1 pads
  positions.resize(m);
  slots.resize(m);

  Device<uint16_t> residual(act_values(m * k, 3.0f)), delta(act_values(m * k, 1.0f));
  Device<float> norm_wd(norm_w), inv_freq_d(inv_freq);
  Device<int32_t> pos_d(positions);
  Device<int64_t> slots_d(slots);
  const size_t cache_bytes = size_t{kBlocks} * kBlockSize * kvn * kv_bytes(c.kv);
  const float k_scale = 0.5f, v_scale = 0.25f;

  // Reference: the projections, then the core's KV write with RoPE.
  Device<uint16_t> ref_out(m * k, 0xFF), ref_q(m * qn, 0xFF), raw_q(m * qn), raw_k(m * kvn), raw_v(m * kvn);
  Device<uint8_t> ref_kc(cache_bytes, 0x11), ref_vc(cache_bytes, 0x22);
  const aph_tensor rt = view(residual.ptr, c.act, 0, {m, k}), dt = view(delta.ptr, c.act, 0, {m, k}),
                   wt = view(norm_wd.ptr, APH_DTYPE_F32, 0, {k});
  aph_tensor ref_ot = view(ref_out.ptr, c.act, 0, {m, k});
  aph_rms_norm_input in{};
  in.size = sizeof(in);
  in.residual = &rt;
  in.delta = &dt;
  in.weight = &wt;
  in.eps = 1e-5f;
  in.residual_out = &ref_ot;
  aph_tensor ys[3] = {view(raw_q.ptr, c.act, 0, {m, qn}), view(raw_k.ptr, c.act, 0, {m, kvn}),
                      view(raw_v.ptr, c.act, 0, {m, kvn})};
  ASSERT_TRUE(Linear::forward_shared_rms_norm(group, in, ys, stream_)) << what;
  aph::attention::PagedAttentionArgs a;
  a.device = 0;
  a.act_dtype = c.act;
  a.q = raw_q.ptr;
  a.k = raw_k.ptr;
  a.v = raw_v.ptr;
  a.k_cache = ref_kc.ptr;
  a.v_cache = ref_vc.ptr;
  a.layout = {kBlocks, kBlockSize, kKvHeads, kHeadDim, c.kv};
  a.k_scale = k_scale;
  a.v_scale = v_scale;
  a.num_heads = kHeads;
  a.n_tokens = static_cast<int32_t>(m);
  a.slot_mapping = slots_d.ptr;
  a.softmax_scale = 0.125f;
  a.stream = stream_;
  a.rope.inv_freq = inv_freq_d.ptr;
  a.rope.positions = pos_d.ptr;
  a.rope.rotary_dim = c.rotary_dim;
  a.rope.interleaved = true;
  a.rope.mscale = 1.25f;
  a.rope.q_stride = qn;
  a.rope.k_stride = a.rope.v_stride = kvn;
  a.rope.q_rot = ref_q.ptr;
  aph::attention::paged_attention(a);

  // The plugin's one call.
  Device<uint16_t> out(m * k, 0xFF), q(m * qn, 0xFF);
  Device<uint8_t> kc(cache_bytes, 0x11), vc(cache_bytes, 0x22);
  aph_tensor ot = view(out.ptr, c.act, 0, {m, k}), qt = view(q.ptr, c.act, 0, {m, qn});
  in.residual_out = &ot;
  aph_rope_kv_store kv{};
  kv.size = sizeof(kv);
  kv.positions = pos_d.ptr;
  kv.inv_freq = inv_freq_d.ptr;
  kv.head_dim = kHeadDim;
  kv.rotary_dim = c.rotary_dim;
  kv.mscale = 1.25f;
  kv.slot_mapping = slots_d.ptr;
  kv.total_slots = int64_t{kBlocks} * kBlockSize;
  kv.k_cache = kc.ptr;
  kv.v_cache = vc.ptr;
  kv.kv_dtype = c.kv;
  kv.k_scale = k_scale;
  kv.v_scale = v_scale;
  const bool taken = Linear::forward_qkv_rope_kv(group, in, qt, kv, stream_);
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess) << what;
  ASSERT_EQ(taken, c.taken) << what;
  if (!taken) {
    for (uint16_t v : q.host()) ASSERT_EQ(v, 0xFFFF) << what << ": a declined call wrote q";
    for (uint16_t v : out.host()) ASSERT_EQ(v, 0xFFFF) << what << ": a declined call wrote residual_out";
    for (uint8_t v : kc.host()) ASSERT_EQ(v, 0x11) << what << ": a declined call wrote the K cache";
    for (uint8_t v : vc.host()) ASSERT_EQ(v, 0x22) << what << ": a declined call wrote the V cache";
    return;
  }
  const std::vector<uint16_t> got_q = q.host(), want_q = ref_q.host(), got_o = out.host(), want_o = ref_out.host();
  for (size_t i = 0; i < want_q.size(); ++i)
    ASSERT_EQ(got_q[i], want_q[i]) << what << ": q token " << i / qn << " element " << i % qn;
  for (size_t i = 0; i < want_o.size(); ++i) ASSERT_EQ(got_o[i], want_o[i]) << what << ": residual_out " << i;
  const size_t eb = kv_bytes(c.kv);
  const std::vector<uint8_t> got_k = kc.host(), want_k = ref_kc.host(), got_v = vc.host(), want_v = ref_vc.host();
  for (size_t i = 0; i < want_k.size(); ++i)
    ASSERT_EQ(got_k[i], want_k[i]) << what << ": K cache slot " << i / eb / kvn << " element " << i / eb % kvn;
  for (size_t i = 0; i < want_v.size(); ++i)
    ASSERT_EQ(got_v[i], want_v[i]) << what << ": V cache slot " << i / eb / kvn << " element " << i / eb % kvn;
  // The stores happened: the reference changed the first token's slot.
  EXPECT_NE(want_k[slots[0] * kvn * eb], 0x11) << what;
}

std::vector<Case> cases() {
  const aph_dtype B = APH_DTYPE_BF16, H = APH_DTYPE_F16;
  return {
      // Llama-3-8B Q4_K_M's kinds: q, k Q4_K (the fast matvec, two rows a
      // warp), v Q6_K in its own launch.
      {kQ4_K, kQ4_K, kQ6_K, 512, 1, 64, B, APH_DTYPE_BF16, true},
      {kQ4_K, kQ4_K, kQ6_K, 512, 3, 64, H, APH_DTYPE_F16, true},
      {kQ4_K, kQ4_K, kQ6_K, 512, 1, 32, B, APH_DTYPE_F8_E4M3, true},  // partial rotary, fp8
      {kQ4_K, kQ4_K, kQ6_K, 512, 3, 64, B, APH_DTYPE_F8_E5M2, true},
      // q, k Q4_K and v Q4_0: v through the generic matvec (a row a warp).
      {kQ4_K, kQ4_K, kQ4_0, 512, 1, 64, B, APH_DTYPE_BF16, true},
      {kQ4_K, kQ4_K, kQ4_0, 512, 3, 64, H, APH_DTYPE_F8_E4M3, true},
      // Declined: q and k in a type without the fast matvec (SmolLM2-135M's
      // Q4_1: the raw-x matvec at batch 1, the generic one beyond).
      {kQ4_1, kQ4_1, kQ4_1, 576, 1, 64, B, APH_DTYPE_BF16, false},
      {kQ4_1, kQ4_1, kQ4_1, 576, 3, 64, B, APH_DTYPE_BF16, false},
  };
}

INSTANTIATE_TEST_SUITE_P(Shapes, QkvRopeKv, ::testing::ValuesIn(cases()), [](const auto& info) {
  return "case" + std::to_string(info.index);
});

}  // namespace
