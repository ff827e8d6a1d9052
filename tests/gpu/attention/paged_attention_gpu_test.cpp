// CUDA paged attention against the CPU implementation on the same inputs
// (rounded to the activation dtype first), for every head size x activation
// dtype x KV dtype: cache bytes must match exactly, outputs within the
// activation dtype's precision.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/attention/paged_attention.hpp"
#include "core/attention/split_plan.hpp"
#include "core/common/error.hpp"
#include "core/common/half.hpp"
#include "tests/unit/attention/attention_problem.hpp"

namespace aph::attention {
namespace {

using testing::Problem;
using testing::ProblemSpec;
using testing::SeqSpec;

#define CUDA_OK(expr) ASSERT_EQ((expr), cudaSuccess) << #expr

template <typename T>
struct DeviceBuffer {
  T* ptr = nullptr;
  size_t count = 0;
  explicit DeviceBuffer(size_t n) : count(n) {
    if (cudaMalloc(&ptr, std::max<size_t>(n, 1) * sizeof(T)) != cudaSuccess) ptr = nullptr;
  }
  DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) {
    if (ptr) cudaMemcpy(ptr, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice);
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  std::vector<T> download() const {
    std::vector<T> h(count);
    cudaMemcpy(h.data(), ptr, count * sizeof(T), cudaMemcpyDeviceToHost);
    return h;
  }
};

std::vector<uint16_t> to_act(const std::vector<float>& x, aph_dtype act) {
  std::vector<uint16_t> r(x.size());
  for (size_t i = 0; i < x.size(); ++i) r[i] = act == APH_DTYPE_F16 ? f32_to_f16(x[i]) : f32_to_bf16(x[i]);
  return r;
}

float from_act(uint16_t h, aph_dtype act) { return act == APH_DTYPE_F16 ? f16_to_f32(h) : bf16_to_f32(h); }

const char* dname(aph_dtype d) {
  switch (d) {
    case APH_DTYPE_F16: return "f16";
    case APH_DTYPE_BF16: return "bf16";
    case APH_DTYPE_F8_E4M3: return "e4m3";
    case APH_DTYPE_F8_E5M2: return "e5m2";
    default: return "?";
  }
}

struct GpuRun {
  std::vector<float> out;
  std::vector<uint8_t> k_cache, v_cache;
};

// RoPE fused into the KV write (PagedAttentionArgs::rope): the GPU gets q
// and k before rotation, as one fused-QKV row per token ([q | k | v]), and
// must rotate them into what the CPU reference is given.
struct RopeCase {
  int32_t rotary_dim = 0;
  bool interleaved = false;
  float mscale = 1.0f;
};
struct RopeInputs {
  RopeCase c;
  std::vector<float> qkv;  // [n_tokens, (heads + 2 kv_heads) * d], unrotated q and k
  std::vector<int32_t> positions;
  std::vector<float> inv_freq;
};

// Rotates the rows of x ([tokens, heads, d]) by -angle (inverse = true) or
// +angle, as rope_qkv does.
void rotate(std::vector<float>& x, int64_t heads, int64_t d, const RopeInputs& r, bool inverse) {
  const int half = r.c.rotary_dim / 2;
  for (size_t t = 0; t < r.positions.size(); ++t)
    for (int64_t h = 0; h < heads; ++h)
      for (int i = 0; i < half; ++i) {
        const float ang = static_cast<float>(r.positions[t]) * r.inv_freq[i];
        const float c = std::cos(ang) * r.c.mscale, sn = (inverse ? -1.0f : 1.0f) * std::sin(ang) * r.c.mscale;
        const int64_t ia = r.c.interleaved ? 2 * i : i, ib = r.c.interleaved ? 2 * i + 1 : i + half;
        float& a = x[(t * heads + h) * d + ia];
        float& b = x[(t * heads + h) * d + ib];
        const float a0 = a, b0 = b;
        // The inverse of a scaled rotation divides by mscale^2.
        const float s2 = inverse ? r.c.mscale * r.c.mscale : 1.0f;
        a = (a0 * c - b0 * sn) / s2;
        b = (b0 * c + a0 * sn) / s2;
      }
}

// The unrotated inputs whose rotation is p.q / p.k (what the CPU gets).
RopeInputs rope_inputs(const Problem& p, const RopeCase& c) {
  RopeInputs r;
  r.c = c;
  const auto& sp = p.spec;
  for (int i = 0; i < c.rotary_dim / 2; ++i)
    r.inv_freq.push_back(std::pow(10000.0f, -2.0f * static_cast<float>(i) / static_cast<float>(c.rotary_dim)));
  r.positions.assign(p.n_tokens, 0);  // padding tokens stay at 0
  for (size_t s = 0; s + 1 < p.query_start.size(); ++s) {
    const int32_t q_len = p.query_start[s + 1] - p.query_start[s];
    for (int32_t i = 0; i < q_len; ++i) r.positions[p.query_start[s] + i] = p.context_lens[s] - q_len + i;
  }
  std::vector<float> q = p.q, k = p.k;
  rotate(q, sp.num_heads, sp.head_dim, r, true);
  rotate(k, sp.num_kv_heads, sp.head_dim, r, true);
  const int64_t qw = int64_t{sp.num_heads} * sp.head_dim, kw = int64_t{sp.num_kv_heads} * sp.head_dim;
  r.qkv.resize(p.n_tokens * (qw + 2 * kw));
  for (int64_t t = 0; t < p.n_tokens; ++t) {
    float* row = r.qkv.data() + t * (qw + 2 * kw);
    std::copy_n(q.data() + t * qw, qw, row);
    std::copy_n(k.data() + t * kw, kw, row + qw);
    std::copy_n(p.v.data() + t * kw, kw, row + qw + kw);
  }
  return r;
}

// short_contexts for every problem, even long ones: a caller that claims it
// wrongly still gets right answers (a lone sequence's splits then merge in
// two levels).
bool g_claim_short_contexts = false;
// run_gpu passes its own split counters (PagedAttentionArgs::split_counters,
// zeroed once), checks that every decode left them at zero, and (eager)
// reruns the attention alone with kv_written, its output overwritten.
bool g_split_counters = false;

// Runs the problem on the GPU; with capture_max_ctx > 0 the call is captured
// in a CUDA graph planned for that max_context_len and then replayed.
// workspace_cap (bytes) forces a plan with fewer splits; 0 means no workspace.
// launches: the call (or its graph) that many times on one workspace; a
// repeat computes the same again, provided each call's split counters start
// at zero.
void run_gpu(const Problem& p, aph_dtype act, GpuRun& r, int32_t capture_max_ctx = 0,
             int64_t workspace_cap = -1, const RopeInputs* rope = nullptr, int launches = 1) {
  DeviceBuffer<uint16_t> q(to_act(p.q, act)), k(to_act(p.k, act)), v(to_act(p.v, act));
  DeviceBuffer<uint16_t> qkv(rope ? to_act(rope->qkv, act) : std::vector<uint16_t>{});
  DeviceBuffer<int32_t> pos(rope ? rope->positions : std::vector<int32_t>{});
  DeviceBuffer<float> inv_freq(rope ? rope->inv_freq : std::vector<float>{});
  DeviceBuffer<uint16_t> out(p.q.size());
  DeviceBuffer<uint8_t> kc(p.k_cache), vc(p.v_cache);
  DeviceBuffer<int32_t> qs(p.query_start), cl(p.context_lens), bt(p.block_tables);
  DeviceBuffer<int64_t> sm(p.slot_mapping);
  const int32_t n_seqs = static_cast<int32_t>(p.spec.seqs.size());
  size_t ws_bytes = paged_attention_workspace_bytes(
      n_seqs, p.spec.num_heads, p.spec.head_dim,
      capture_max_ctx > 0 ? capture_max_ctx : p.max_context_len);
  if (workspace_cap >= 0) ws_bytes = std::min(ws_bytes, static_cast<size_t>(workspace_cap));
  DeviceBuffer<uint8_t> ws(ws_bytes);
  ASSERT_TRUE(q.ptr && out.ptr && kc.ptr && ws.ptr);
  CUDA_OK(cudaMemset(out.ptr, 0xff, out.count * 2));  // NaN pattern: unwritten rows show up

  PagedAttentionArgs a;
  a.device = 0;
  a.act_dtype = act;
  a.q = q.ptr;
  a.k = k.ptr;
  a.v = v.ptr;
  a.out = out.ptr;
  a.k_cache = kc.ptr;
  a.v_cache = vc.ptr;
  a.layout = {p.num_blocks, p.spec.block_size, p.spec.num_kv_heads, p.spec.head_dim, p.spec.kv_dtype};
  a.k_scale = p.spec.k_scale;
  a.v_scale = p.spec.v_scale;
  a.num_heads = p.spec.num_heads;
  a.n_tokens = p.n_tokens;
  a.n_seqs = n_seqs;
  a.query_start = qs.ptr;
  a.context_lens = cl.ptr;
  a.block_tables = bt.ptr;
  a.max_blocks_per_seq = p.max_blocks_per_seq;
  a.slot_mapping = sm.ptr;
  a.max_query_len = p.max_query_len;
  a.max_context_len = capture_max_ctx > 0 ? capture_max_ctx : p.max_context_len;
  // As the model runner sets it: decode merges through clusters when every
  // context is short (or a test says so to reach the two-level merge).
  a.short_contexts = g_claim_short_contexts || p.max_context_len <= aph::attention::kDecodeClusterContext;
  a.softmax_scale = 1.0f / std::sqrt(static_cast<float>(p.spec.head_dim));
  a.workspace = ws_bytes > 0 ? ws.ptr : nullptr;
  a.workspace_bytes = ws_bytes;
  if (rope) {
    const int64_t qw = int64_t{p.spec.num_heads} * p.spec.head_dim, kw = int64_t{p.spec.num_kv_heads} * p.spec.head_dim;
    a.q = qkv.ptr;
    a.k = qkv.ptr + qw;
    a.v = qkv.ptr + qw + kw;
    a.rope.inv_freq = inv_freq.ptr;
    a.rope.positions = pos.ptr;
    a.rope.rotary_dim = rope->c.rotary_dim;
    a.rope.interleaved = rope->c.interleaved;
    a.rope.mscale = rope->c.mscale;
    a.rope.q_stride = a.rope.k_stride = a.rope.v_stride = qw + 2 * kw;
    a.rope.q_rot = q.ptr;  // overwritten with the rotation
  }

  DeviceBuffer<int32_t> counters(g_split_counters ? static_cast<size_t>(n_seqs) * p.spec.num_heads : 0);
  if (g_split_counters) {
    CUDA_OK(cudaMemset(counters.ptr, 0, counters.count * sizeof(int32_t)));
    a.split_counters = counters.ptr;
    a.split_counter_slots = static_cast<int64_t>(counters.count);
  }

  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  a.stream = stream;
  if (capture_max_ctx > 0) {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    paged_attention(a);
    CUDA_OK(cudaStreamEndCapture(stream, &graph));
    CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
    for (int i = 0; i < launches; ++i) CUDA_OK(cudaGraphLaunch(exec, stream));
    CUDA_OK(cudaStreamSynchronize(stream));
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
  } else {
    for (int i = 0; i < launches; ++i) paged_attention(a);
    if (g_split_counters && !rope) {  // the cache holds this step's k and v now
      CUDA_OK(cudaMemsetAsync(out.ptr, 0xff, out.count * 2, stream));
      PagedAttentionArgs b = a;
      b.kv_written = true;
      b.k = b.v = nullptr;
      paged_attention(b);
    }
  }
  CUDA_OK(cudaStreamSynchronize(stream));
  CUDA_OK(cudaStreamDestroy(stream));
  if (g_split_counters) {
    for (int32_t c : counters.download()) ASSERT_EQ(c, 0) << "a decode left its split counter set";
  }
  std::vector<uint16_t> o = out.download();
  r.out.resize(o.size());
  for (size_t i = 0; i < o.size(); ++i) r.out[i] = from_act(o[i], act);
  r.k_cache = kc.download();
  r.v_cache = vc.download();
}

// rope: the GPU rotates q and k itself (the K cache then differs from the
// CPU's by rounding only, which the outputs check).
void compare(const ProblemSpec& spec, aph_dtype act, int32_t capture_max_ctx = 0,
             int64_t workspace_cap = -1, const RopeCase* rope = nullptr, int launches = 1) {
  Problem p = testing::make_problem(spec);
  Problem cpu = p;  // the CPU run writes into its own caches
  std::vector<float> want(p.q.size(), 0.0f);
  paged_attention(cpu.args(want.data()));
  GpuRun got;
  const RopeInputs ri = rope ? rope_inputs(p, *rope) : RopeInputs{};
  run_gpu(p, act, got, capture_max_ctx, workspace_cap, rope ? &ri : nullptr, launches);
  if (::testing::Test::HasFatalFailure()) return;

  size_t bad_k = 0, bad_v = 0;
  for (size_t i = 0; i < cpu.k_cache.size(); ++i) {
    bad_k += cpu.k_cache[i] != got.k_cache[i];
    bad_v += cpu.v_cache[i] != got.v_cache[i];
  }
  if (!rope) {
    EXPECT_EQ(bad_k, 0u) << "K cache bytes differ from the CPU write";
  }
  EXPECT_EQ(bad_v, 0u) << "V cache bytes differ from the CPU write";

  const size_t real = static_cast<size_t>(p.query_start.back()) * spec.num_heads * spec.head_dim;
  // Per (token, head) row and relative to that row's scale: over long
  // contexts an output is a mean of thousands of values (|out| ~ 0.01), and a
  // kernel that skipped a few tokens must still fail. The floor keeps the
  // rounding noise of tiny outputs in.
  const float rel = act == APH_DTYPE_F16 ? 4e-3f : 2.5e-2f;
  const size_t hd = spec.head_dim;
  float worst = 0;  // error / row tolerance
  size_t at = 0, nan = 0;
  for (size_t row = 0; row < real / hd; ++row) {
    float peak = 0;
    for (size_t e = 0; e < hd; ++e) peak = std::max(peak, std::fabs(want[row * hd + e]));
    const float tol = rel * std::max(peak, 0.05f);
    for (size_t e = 0; e < hd; ++e) {
      const size_t i = row * hd + e;
      if (!std::isfinite(got.out[i])) {
        ++nan;
        continue;
      }
      const float r = std::fabs(got.out[i] - want[i]) / tol;
      if (r > worst) worst = r, at = i;
    }
  }
  EXPECT_EQ(nan, 0u) << "non-finite or unwritten outputs";
  EXPECT_LE(worst, 1.0f) << "error " << worst << "x the tolerance at element " << at << " (token "
                         << at / (spec.num_heads * hd) << ") got " << got.out[at] << " want "
                         << want[at];
}

struct Combo {
  int32_t hd;
  aph_dtype act;
  aph_dtype kv;
};

std::string combo_name(const ::testing::TestParamInfo<Combo>& info) {
  return "d" + std::to_string(info.param.hd) + "_" + dname(info.param.act) + "_kv" + dname(info.param.kv);
}

std::vector<Combo> combos() {
  std::vector<Combo> c;
  for (int32_t hd : {64, 80, 96, 128, 256})
    for (aph_dtype act : {APH_DTYPE_F16, APH_DTYPE_BF16})
      for (aph_dtype kv : {APH_DTYPE_F16, APH_DTYPE_BF16, APH_DTYPE_F8_E4M3, APH_DTYPE_F8_E5M2})
        c.push_back({hd, act, kv});
  return c;
}

ProblemSpec base(const Combo& c, uint32_t seed) {
  ProblemSpec s;
  s.head_dim = c.hd;
  s.num_heads = 8;
  s.num_kv_heads = 2;
  s.kv_dtype = c.kv;
  s.input_dtype = c.act;
  if (testing::is_fp8_dtype(c.kv)) {
    s.k_scale = 0.05f;
    s.v_scale = 0.02f;
  }
  s.seed = seed + static_cast<uint32_t>(c.hd * 17 + c.act * 5 + c.kv);
  return s;
}

class PagedAttentionGpu : public ::testing::TestWithParam<Combo> {};

TEST_P(PagedAttentionGpu, DecodeContexts) {
  ProblemSpec s = base(GetParam(), 1);
  s.seqs = {{1, 1}, {1, 17}, {1, 4096}, {1, 8192}};
  compare(s, GetParam().act);
}

// 96 sequences x 2 KV heads are more (sequence, head) CTAs than an H200 has
// SMs: with an fp8 cache, the decode kernel's 128-thread CTAs; otherwise 256.
TEST_P(PagedAttentionGpu, DecodeBatches) {
  for (int32_t batch : {1, 5, 64, 96}) {
    ProblemSpec s = base(GetParam(), 100 + batch);
    for (int32_t i = 0; i < batch; ++i) s.seqs.push_back({1, 1 + (i * 977 + batch * 31) % 700});
    compare(s, GetParam().act);
  }
}

TEST_P(PagedAttentionGpu, Prefill512WithAndWithoutPrefix) {
  ProblemSpec s = base(GetParam(), 2);
  s.seqs = {{512, 512}};
  compare(s, GetParam().act);
  s.seqs = {{512, 812}};
  compare(s, GetParam().act);
}

TEST_P(PagedAttentionGpu, MixedPrefillAndDecode) {
  ProblemSpec s = base(GetParam(), 3);
  s.seqs = {{1, 300}, {37, 37}, {1, 1}, {70, 133}, {2, 2}, {1, 2000}};
  s.padding_tokens = 3;
  compare(s, GetParam().act);
}

INSTANTIATE_TEST_SUITE_P(All, PagedAttentionGpu, ::testing::ValuesIn(combos()), combo_name);

TEST(PagedAttentionGpuShapes, GqaRatios) {
  for (int32_t group : {1, 4, 8, 16}) {
    ProblemSpec s = base({128, APH_DTYPE_F16, APH_DTYPE_F16}, 7 + group);
    s.num_kv_heads = 2;
    s.num_heads = 2 * group;
    s.seqs = {{1, 3000}, {100, 140}, {1, 9}};
    compare(s, APH_DTYPE_F16);
  }
}

TEST(PagedAttentionGpuShapes, BlockSizes) {
  for (int32_t bs : {1, 8, 32}) {
    ProblemSpec s = base({96, APH_DTYPE_BF16, APH_DTYPE_F8_E4M3}, 50 + bs);
    s.block_size = bs;
    s.seqs = {{1, 700}, {65, 90}};
    compare(s, APH_DTYPE_BF16);
  }
}

// 16-bit caches with blocks of other sizes: the tensor-core decode kernel
// (APH_DECODE_MMA) takes blocks of 16 tokens or more, its 16-token steps
// then crossing at most one block boundary; smaller ones keep the others.
TEST(PagedAttentionGpuShapes, BlockSizes16Bit) {
  for (int32_t bs : {8, 16, 32, 48}) {
    SCOPED_TRACE("block size " + std::to_string(bs));
    ProblemSpec s = base({128, APH_DTYPE_F16, APH_DTYPE_F16}, 60 + bs);
    s.num_heads = 32;
    s.num_kv_heads = 8;
    s.block_size = bs;
    s.seqs = {{1, 700}, {1, 37}, {1, 4096}, {65, 90}};
    compare(s, APH_DTYPE_F16);
  }
}

// A graph planned for short contexts replays correctly after they grew: the
// split ranges come from context_lens on the device.
TEST(PagedAttentionGpuGraph, CapturedDecodeSurvivesContextGrowth) {
  ProblemSpec s = base({128, APH_DTYPE_F16, APH_DTYPE_F8_E4M3}, 9);
  s.num_heads = 32;
  s.num_kv_heads = 8;
  s.seqs = {{1, 6000}, {1, 300}, {1, 4500}};
  compare(s, APH_DTYPE_F16, /*capture_max_ctx=*/600);
  compare(s, APH_DTYPE_F16, /*capture_max_ctx=*/8192);
}

// The runner's split counters, which nothing zeroes between calls: each
// head's last split resets its own, eager and in a graph, over repeated
// launches; and the attention alone (kv_written, no KV write) on what the
// first call stored.
TEST(PagedAttentionGpuCounters, CallerCountersStayZero) {
  g_split_counters = true;
  ProblemSpec s = base({128, APH_DTYPE_BF16, APH_DTYPE_BF16}, 31);
  s.num_heads = 32;
  s.num_kv_heads = 8;
  s.seqs = {{1, 6000}, {1, 300}, {1, 4500}};
  compare(s, APH_DTYPE_BF16, /*capture_max_ctx=*/0, -1, nullptr, /*launches=*/3);
  compare(s, APH_DTYPE_BF16, /*capture_max_ctx=*/8192, -1, nullptr, /*launches=*/3);
  s.seqs = {{1, 5000}};
  compare(s, APH_DTYPE_BF16, /*capture_max_ctx=*/0, -1, nullptr, /*launches=*/2);
  g_split_counters = false;
}

// Decode of a lone sequence through clusters (split_plan.hpp's
// decode_uses_clusters: head size 64 by default, 128 too in the variants
// with APH_DECODE_SHORT_CLUSTERS=2), eager and in a graph planned for 8k; with contexts
// past one cluster's reach claimed short (two-level merge); and a batch of
// several, which keeps the workspace merge.
TEST(PagedAttentionGpuClusters, ShortAndMisclaimedContexts) {
  for (const Combo& c : {Combo{64, APH_DTYPE_BF16, APH_DTYPE_BF16}, Combo{128, APH_DTYPE_F16, APH_DTYPE_F8_E4M3}}) {
    ProblemSpec s = base(c, 21);
    s.num_heads = c.hd == 128 ? 32 : 9;
    s.num_kv_heads = c.hd == 128 ? 8 : 3;
    for (int32_t ctx : {576, 1000, 1024, 65, 64, 3}) {
      SCOPED_TRACE("ctx " + std::to_string(ctx));
      s.seqs = {{1, ctx}};
      compare(s, c.act);
      compare(s, c.act, /*capture_max_ctx=*/8192);
    }
    g_claim_short_contexts = true;
    for (int32_t ctx : {1025, 5000}) {
      SCOPED_TRACE("claimed short, ctx " + std::to_string(ctx));
      s.seqs = {{1, ctx}};
      compare(s, c.act, /*capture_max_ctx=*/8192);
    }
    s.seqs = {{1, 1000}, {1, 64}, {1, 200}};
    compare(s, c.act, /*capture_max_ctx=*/8192);
    g_claim_short_contexts = false;
  }
}

// Less workspace than the plan wants means fewer splits (none without any),
// never a wrong answer.
TEST(PagedAttentionGpuShapes, SmallOrNoWorkspace) {
  ProblemSpec s = base({128, APH_DTYPE_BF16, APH_DTYPE_F16}, 11);
  s.num_heads = 32;
  s.num_kv_heads = 8;
  s.seqs = {{1, 8192}, {1, 100}};
  compare(s, APH_DTYPE_BF16, 0, 0);
  compare(s, APH_DTYPE_BF16, 0, 2 * 32 * 3 * (128 + 2) * 4 + 2 * 32 * 4);  // room for 3 splits
}

// RoPE in the KV write: q and k arrive unrotated in fused-QKV rows; NEOX and
// interleaved pairs, a partial rotary dim, yarn-style mscale; decode, prefill
// and padding tokens; f16/bf16/fp8 caches.
TEST(PagedAttentionGpuRope, FusedRotationMatchesRotatedInputs) {
  const RopeCase cases[] = {{128, false, 1.0f}, {128, true, 1.0f}, {64, false, 1.0f}, {128, false, 1.2f}};
  for (const RopeCase& rc : cases)
    for (aph_dtype kv : {APH_DTYPE_BF16, APH_DTYPE_F8_E4M3}) {
      ProblemSpec s = base({128, APH_DTYPE_BF16, kv}, 60 + rc.rotary_dim);
      s.num_heads = 32;
      s.num_kv_heads = 8;
      s.seqs = {{1, 600}, {37, 37}, {1, 1}, {70, 133}, {1, 3000}};
      s.padding_tokens = 2;
      SCOPED_TRACE("rotary_dim " + std::to_string(rc.rotary_dim) + (rc.interleaved ? " interleaved" : " neox") +
                   " mscale " + std::to_string(rc.mscale) + " kv " + dname(kv));
      compare(s, APH_DTYPE_BF16, 0, -1, &rc);
      compare(s, APH_DTYPE_BF16, /*capture_max_ctx=*/8192, -1, &rc);
    }
}

// Decode-only calls with RoPE (one token a sequence, no padding tokens), as
// every decode step makes them: the KV write rotates q and k, then the
// decode kernel reads the rotated q. Each call twice on one workspace: the
// write must zero the split counters the first call's merges used.
// Rotary dims: whole, partial (64, 96), and 40 (pairs that straddle the
// MMA fragments' 16-element chunks), NEOX and interleaved.
TEST(PagedAttentionGpuRope, DecodeOnlyRotationMatchesRotatedInputs) {
  const RopeCase cases[] = {
      {128, false, 1.0f}, {128, true, 1.0f}, {64, false, 1.0f}, {96, false, 1.2f}, {40, true, 1.0f}, {40, false, 1.0f}};
  for (const RopeCase& rc : cases)
    for (aph_dtype kv : {APH_DTYPE_BF16, APH_DTYPE_F8_E4M3}) {
      ProblemSpec s = base({128, APH_DTYPE_BF16, kv}, 90 + rc.rotary_dim);
      s.num_heads = 32;
      s.num_kv_heads = 8;
      s.seqs = {{1, 600}, {1, 1}, {1, 3000}, {1, 37}, {1, 8000}};
      SCOPED_TRACE("rotary_dim " + std::to_string(rc.rotary_dim) + (rc.interleaved ? " interleaved" : " neox") +
                   " mscale " + std::to_string(rc.mscale) + " kv " + dname(kv));
      compare(s, APH_DTYPE_BF16, 0, -1, &rc, 2);
      compare(s, APH_DTYPE_BF16, /*capture_max_ctx=*/8192, -1, &rc, 2);
    }
  // A lone short sequence (the cluster merge where the GPU has clusters), f16.
  const RopeCase neox{128, false, 1.0f};
  ProblemSpec s = base({128, APH_DTYPE_F16, APH_DTYPE_F16}, 7);
  s.num_heads = 32;
  s.num_kv_heads = 8;
  s.seqs = {{1, 700}};
  compare(s, APH_DTYPE_F16, 0, -1, &neox, 2);
  compare(s, APH_DTYPE_F16, /*capture_max_ctx=*/8192, -1, &neox, 2);
}

TEST(PagedAttentionGpuErrors, BadHeadDimIsAnErrorNotACrash) {
  PagedAttentionArgs a;
  a.device = 0;
  a.act_dtype = APH_DTYPE_F16;
  a.layout.head_dim = 100;
  EXPECT_THROW(paged_attention(a), Error);
}

}  // namespace
}  // namespace aph::attention
