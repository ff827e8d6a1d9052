// The built plugin .so through the C ABI only: negotiation, probe, the model
// source on the real SmolLM2 file and on synthetic qwen2/yarn files, linear
// layers, and errors crossing as values.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "aphrodite/quant.h"
#include "plugins/quant-gguf/container/ggml_types.hpp"
#include "plugins/quant-gguf/container/gguf_writer.hpp"
#include "plugins/quant-gguf/cpu/dequant.hpp"
#include "tests/unit/gguf/random_blocks.hpp"

namespace json = boost::json;
using namespace aph::gguf;

namespace {

const char* kModel = "models/SmolLM2-135M-Instruct.Q4_1.gguf";

struct Host {
  static void log(void*, int32_t, const char*) {}
  static const char* config(void*) { return "{\"cpu_exact\": false}"; }
  static void* alloc(void*, int32_t, uint64_t bytes, aph_error*) { return std::malloc(bytes); }
  static void free_(void*, int32_t, void* p) { std::free(p); }
  static int32_t device(void*) { return APH_DEVICE_CPU; }
};

class Plugin : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const char* dir = std::getenv("APH_PLUGIN_DIR");
    std::string path = std::string(dir ? dir : "build/plugins") + "/aph_quant_gguf.so";
    handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    auto entry = reinterpret_cast<aph_plugin_entry_fn>(dlsym(handle_, APH_PLUGIN_ENTRY_SYMBOL));
    ASSERT_NE(entry, nullptr);
    aph_version_offer offer{sizeof(offer), APH_ABI_MAJOR, 0, APH_ABI_MINOR};
    aph_error err{};
    ASSERT_EQ(entry(&offer, &info_, &err), APH_OK) << err.message;
    vt_ = static_cast<const aph_quant_vtable*>(info_.vtable);
    services_.size = sizeof(services_);
    services_.log = Host::log;
    services_.config_json = Host::config;
    services_.device_alloc = Host::alloc;
    services_.device_free = Host::free_;
    services_.active_device = Host::device;
    ASSERT_EQ(info_.init(&services_, &state_, &err), APH_OK) << err.message;
  }
  static void TearDownTestSuite() {
    if (info_.shutdown) info_.shutdown(state_);
  }

  static float probe(const std::string& path) {
    aph_checkpoint_desc d{sizeof(d), path.c_str(), nullptr, nullptr};
    float score = -1;
    aph_error err{};
    EXPECT_EQ(vt_->probe(state_, &d, &score, &err), APH_OK);
    return score;
  }

  static inline void* handle_ = nullptr;
  static inline aph_plugin_info info_{};
  static inline const aph_quant_vtable* vt_ = nullptr;
  static inline aph_host_services services_{};
  static inline void* state_ = nullptr;
};

// A one-part CPU linear (F32 activations) of weights [n, k].
aph_linear_desc cpu_linear_desc(const char* name, const aph_weight_info* w, int64_t n, int64_t k) {
  aph_linear_desc ld{};
  ld.size = sizeof(ld);
  ld.name = name;
  ld.in_features = k;
  ld.out_features = n;
  ld.device = APH_DEVICE_CPU;
  ld.act_dtype = APH_DTYPE_F32;
  ld.n_parts = 1;
  ld.parts = w;
  return ld;
}

std::string write_temp(const std::string& name, const std::vector<uint8_t>& bytes) {
  auto p = std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()) + ".gguf");
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  return p.string();
}

}  // namespace

TEST_F(Plugin, NegotiatesAndRejectsOtherMajors) {
  EXPECT_EQ(info_.kind, APH_KIND_QUANT);
  EXPECT_STREQ(vt_->format_name, "gguf");
  auto entry = reinterpret_cast<aph_plugin_entry_fn>(dlsym(handle_, APH_PLUGIN_ENTRY_SYMBOL));
  aph_version_offer offer{sizeof(offer), APH_ABI_MAJOR + 1, 0, 0};
  aph_plugin_info info{};
  aph_error err{};
  EXPECT_EQ(entry(&offer, &info, &err), APH_ERR_VERSION);
}

TEST_F(Plugin, ProbeScoresGgufOnly) {
  if (std::filesystem::exists(kModel)) {
    EXPECT_EQ(probe(kModel), 100.0f);
  }
  EXPECT_EQ(probe("/nonexistent/file.gguf"), 0.0f);
  EXPECT_EQ(probe("/"), 0.0f);
  EXPECT_EQ(probe(write_temp("notgguf", {'P', 'K', 3, 4, 0, 0})), 0.0f);
}

TEST_F(Plugin, RealModelSource) {
  if (!std::filesystem::exists(kModel)) GTEST_SKIP() << "run scripts/fetch-default-model.sh";
  aph_checkpoint_desc d{sizeof(d), kModel, nullptr, nullptr};
  aph_model_source* src = nullptr;
  aph_error err{};
  ASSERT_EQ(vt_->source_open(state_, &d, &src, &err), APH_OK) << err.message;
  json::value meta = json::parse(vt_->source_metadata_json(src));
  const auto& c = meta.at("config").as_object();
  EXPECT_EQ(c.at("architectures").as_array()[0].as_string(), "LlamaForCausalLM");
  EXPECT_EQ(json::value_to<int64_t>(c.at("hidden_size")), 576);
  EXPECT_EQ(json::value_to<int64_t>(c.at("intermediate_size")), 1536);
  EXPECT_EQ(json::value_to<int64_t>(c.at("num_hidden_layers")), 30);
  EXPECT_EQ(json::value_to<int64_t>(c.at("num_attention_heads")), 9);
  EXPECT_EQ(json::value_to<int64_t>(c.at("num_key_value_heads")), 3);
  EXPECT_EQ(json::value_to<int64_t>(c.at("head_dim")), 64);
  EXPECT_EQ(json::value_to<int64_t>(c.at("vocab_size")), 49152);
  EXPECT_EQ(json::value_to<int64_t>(c.at("max_position_embeddings")), 8192);
  EXPECT_DOUBLE_EQ(c.at("rope_theta").as_double(), 100000.0);
  EXPECT_NEAR(c.at("rms_norm_eps").as_double(), 1e-5, 1e-12);
  EXPECT_TRUE(c.at("tie_word_embeddings").as_bool());
  EXPECT_FALSE(c.at("attention_bias").as_bool());
  EXPECT_TRUE(c.at("rope_scaling").is_null());
  EXPECT_TRUE(meta.at("rope_interleaved").as_bool());
  EXPECT_TRUE(meta.at("chat_template").is_string());
  const auto& tok = meta.at("tokenizer").as_object();
  EXPECT_EQ(tok.at("tokenizer.ggml.tokens").as_array().size(), 49152u);
  EXPECT_EQ(tok.at("tokenizer.ggml.model").as_string(), "gpt2");
  EXPECT_TRUE(meta.at("metadata").as_object().contains("general.architecture"));
  EXPECT_FALSE(meta.at("metadata").as_object().contains("tokenizer.ggml.tokens"));

  ASSERT_EQ(vt_->source_tensor_count(src), 272u);
  std::map<std::string, aph_weight_info> by_name;
  for (uint64_t i = 0; i < vt_->source_tensor_count(src); ++i) {
    aph_weight_info w{};
    w.size = sizeof(w);
    ASSERT_EQ(vt_->source_tensor(src, i, &w, &err), APH_OK) << err.message;
    by_name[w.name] = w;
  }
  const auto& emb = by_name.at("model.embed_tokens.weight");
  EXPECT_EQ(emb.dtype, -1);
  EXPECT_EQ(emb.format_type, kQ8_0);
  EXPECT_STREQ(emb.type_name, "Q8_0");
  ASSERT_EQ(emb.rank, 2);
  EXPECT_EQ(emb.shape[0], 49152);
  EXPECT_EQ(emb.shape[1], 576);
  const auto& norm = by_name.at("model.layers.3.input_layernorm.weight");
  EXPECT_EQ(norm.dtype, APH_DTYPE_F32);
  EXPECT_EQ(norm.nbytes, 576u * 4);
  const auto& down = by_name.at("model.layers.29.mlp.down_proj.weight");
  EXPECT_EQ(down.shape[0], 576);
  EXPECT_EQ(down.shape[1], 1536);
  EXPECT_TRUE(by_name.count("model.norm.weight"));
  EXPECT_TRUE(by_name.count("model.layers.0.self_attn.k_proj.weight"));
  EXPECT_EQ(by_name.count("lm_head.weight"), 0u);
  aph_weight_info w{};
  EXPECT_EQ(vt_->source_tensor(src, 272, &w, &err), APH_ERR_INVALID_ARGUMENT);

  // A linear layer over a real Q4_1 tensor, checked against dequantize.
  aph_linear_desc ld = cpu_linear_desc("model.layers.29.mlp.down_proj", &down, 576, 1536);
  aph_quant_linear* lin = nullptr;
  ASSERT_EQ(vt_->linear_create(state_, &ld, &lin, &err), APH_OK) << err.message;
  std::vector<float> x(2 * 1536), y(2 * 576), wf(576 * 1536);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * i);
  dequantize_row(kQ4_1, static_cast<const uint8_t*>(down.data), wf.data(), 576 * 1536);
  aph_tensor xt{sizeof(aph_tensor), APH_DTYPE_F32, APH_DEVICE_CPU, 2, x.data(), {2, 1536}, {1536, 1}};
  aph_tensor yt{sizeof(aph_tensor), APH_DTYPE_F32, APH_DEVICE_CPU, 2, y.data(), {2, 576}, {576, 1}};
  ASSERT_EQ(vt_->linear_forward(lin, &xt, &yt, nullptr, &err), APH_OK) << err.message;
  for (int m = 0; m < 2; ++m)
    for (int n = 0; n < 576; ++n) {
      double ref = 0, mag = 0;
      for (int k = 0; k < 1536; ++k) {
        ref += double(wf[n * 1536 + k]) * x[m * 1536 + k];
        mag += std::fabs(double(wf[n * 1536 + k]) * x[m * 1536 + k]);
      }
      ASSERT_NEAR(y[m * 576 + n], ref, 1e-2 * mag + 1e-5);
    }
  // Wrong shapes are errors, not crashes.
  aph_tensor bad = xt;
  bad.shape[1] = 1000;
  EXPECT_EQ(vt_->linear_forward(lin, &bad, &yt, nullptr, &err), APH_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err.message).find("down_proj"), std::string::npos) << err.message;
  EXPECT_EQ(vt_->linear_device_bytes(lin), 0u);
  vt_->linear_destroy(lin);

  // Quantized embedding rows.
  ld.name = "model.embed_tokens";
  ld.in_features = 576;
  ld.out_features = 49152;
  ld.parts = &emb;
  ASSERT_EQ(vt_->linear_create(state_, &ld, &lin, &err), APH_OK) << err.message;
  std::vector<int32_t> ids = {49151, 0, 1234};
  std::vector<float> rows(3 * 576), ref(576);
  aph_tensor it{sizeof(aph_tensor), APH_DTYPE_I32, APH_DEVICE_CPU, 1, ids.data(), {3}, {1}};
  aph_tensor rt{sizeof(aph_tensor), APH_DTYPE_F32, APH_DEVICE_CPU, 2, rows.data(), {3, 576}, {576, 1}};
  ASSERT_EQ(vt_->linear_get_rows(lin, &it, &rt, nullptr, &err), APH_OK) << err.message;
  for (int i = 0; i < 3; ++i) {
    dequantize_row(kQ8_0, static_cast<const uint8_t*>(emb.data) + uint64_t(ids[i]) * 18 * 34, ref.data(), 576);
    for (int k = 0; k < 576; ++k) ASSERT_EQ(rows[i * 576 + k], ref[k]);
  }
  ids[1] = 49152;
  EXPECT_EQ(vt_->linear_get_rows(lin, &it, &rt, nullptr, &err), APH_ERR_INVALID_ARGUMENT);
  vt_->linear_destroy(lin);
  vt_->source_close(src);
}

// Every matrix of the real file as a CPU linear through the ABI (M = 2),
// against dequantize + a naive matmul.
TEST_F(Plugin, EveryRealLinearForwards) {
  if (!std::filesystem::exists(kModel)) GTEST_SKIP() << "run scripts/fetch-default-model.sh";
  aph_checkpoint_desc d{sizeof(d), kModel, nullptr, nullptr};
  aph_model_source* src = nullptr;
  aph_error err{};
  ASSERT_EQ(vt_->source_open(state_, &d, &src, &err), APH_OK) << err.message;
  int checked = 0;
  for (uint64_t i = 0; i < vt_->source_tensor_count(src); ++i) {
    aph_weight_info w{};
    w.size = sizeof(w);
    ASSERT_EQ(vt_->source_tensor(src, i, &w, &err), APH_OK);
    if (w.rank != 2) continue;
    const int64_t n = w.shape[0], k = w.shape[1];
    if (n > 4096) continue;  // the embedding is covered by get_rows above
    const aph_linear_desc ld = cpu_linear_desc(w.name, &w, n, k);
    aph_quant_linear* lin = nullptr;
    ASSERT_EQ(vt_->linear_create(state_, &ld, &lin, &err), APH_OK) << w.name << ": " << err.message;
    std::vector<float> x(2 * k), y(2 * n), wf(n * k);
    for (int64_t j = 0; j < 2 * k; ++j) x[j] = std::cos(0.11f * j + i);
    dequantize_row(w.format_type, static_cast<const uint8_t*>(w.data), wf.data(), n * k);
    aph_tensor xt{sizeof(aph_tensor), APH_DTYPE_F32, APH_DEVICE_CPU, 2, x.data(), {2, k}, {k, 1}};
    aph_tensor yt{sizeof(aph_tensor), APH_DTYPE_F32, APH_DEVICE_CPU, 2, y.data(), {2, n}, {n, 1}};
    ASSERT_EQ(vt_->linear_forward(lin, &xt, &yt, nullptr, &err), APH_OK) << w.name << ": " << err.message;
    for (int m = 0; m < 2; ++m)
      for (int64_t r = 0; r < n; ++r) {
        double ref = 0, mag = 0;
        for (int64_t c = 0; c < k; ++c) {
          ref += double(wf[r * k + c]) * x[m * k + c];
          mag += std::fabs(double(wf[r * k + c]) * x[m * k + c]);
        }
        ASSERT_NEAR(y[m * n + r], ref, 1e-2 * mag + 1e-5) << w.name << " row " << r;
      }
    vt_->linear_destroy(lin);
    ++checked;
  }
  EXPECT_EQ(checked, 210);
  vt_->source_close(src);
}

TEST_F(Plugin, Qwen2YarnSyntheticSource) {
  GgufWriter w;
  w.add_string("general.architecture", "qwen2");
  w.add_u32("qwen2.embedding_length", 64);
  w.add_u32("qwen2.block_count", 1);
  w.add_u32("qwen2.feed_forward_length", 128);
  w.add_u32("qwen2.attention.head_count", 4);
  w.add_u32("qwen2.attention.head_count_kv", 2);
  w.add_f32("qwen2.attention.layer_norm_rms_epsilon", 1e-6f);
  w.add_f32("qwen2.rope.freq_base", 1000000.0f);
  w.add_u32("qwen2.context_length", 32768);
  w.add_string("qwen2.rope.scaling.type", "yarn");
  w.add_f32("qwen2.rope.scaling.factor", 4.0f);
  w.add_u32("qwen2.rope.scaling.original_context_length", 8192);
  w.add_kv("tokenizer.ggml.tokens", {kVArray, kVString}, json::array{"a", "b", "c", "d"});
  w.add_u32("tokenizer.ggml.eos_token_id", 3);
  w.add_string("tokenizer.chat_template.tool_use", "{{ x }}");
  w.add_tensor("token_embd.weight", kF16, {64, 4});
  w.add_tensor("blk.0.attn_q.weight", kQ8_0, {64, 64});
  w.add_tensor("blk.0.attn_q.bias", kF32, {64});
  std::vector<std::vector<uint8_t>> data = {std::vector<uint8_t>(512), test_data::random_rows(kQ8_0, 64, 64, 1),
                                            std::vector<uint8_t>(256)};
  std::string path = write_temp("qwen2", w.to_bytes(data));
  aph_checkpoint_desc d{sizeof(d), path.c_str(), nullptr, nullptr};
  aph_model_source* src = nullptr;
  aph_error err{};
  ASSERT_EQ(vt_->source_open(state_, &d, &src, &err), APH_OK) << err.message;
  json::value meta = json::parse(vt_->source_metadata_json(src));
  const auto& c = meta.at("config").as_object();
  EXPECT_EQ(c.at("architectures").as_array()[0].as_string(), "Qwen2ForCausalLM");
  EXPECT_FALSE(meta.at("rope_interleaved").as_bool());
  EXPECT_TRUE(c.at("attention_bias").as_bool());
  EXPECT_TRUE(c.at("tie_word_embeddings").as_bool());
  EXPECT_EQ(json::value_to<int64_t>(c.at("head_dim")), 16);
  EXPECT_EQ(json::value_to<int64_t>(c.at("vocab_size")), 4);
  EXPECT_EQ(json::value_to<int64_t>(c.at("eos_token_id")), 3);
  const auto& rs = c.at("rope_scaling").as_object();
  EXPECT_EQ(rs.at("rope_type").as_string(), "yarn");
  EXPECT_DOUBLE_EQ(rs.at("factor").as_double(), 4.0);
  EXPECT_EQ(json::value_to<int64_t>(rs.at("original_max_position_embeddings")), 8192);
  EXPECT_TRUE(meta.at("chat_template").is_null());
  EXPECT_EQ(meta.at("chat_templates").at("tool_use").as_string(), "{{ x }}");
  aph_weight_info t{};
  t.size = sizeof(t);
  ASSERT_EQ(vt_->source_tensor(src, 2, &t, &err), APH_OK);
  EXPECT_STREQ(t.name, "model.layers.0.self_attn.q_proj.bias");
  ASSERT_EQ(vt_->source_tensor(src, 0, &t, &err), APH_OK);
  EXPECT_EQ(t.dtype, APH_DTYPE_F16);
  EXPECT_EQ(t.shape[0], 4);
  vt_->source_close(src);
  std::filesystem::remove(path);
}

TEST_F(Plugin, BrokenFilesAreErrorsNamingTheFile) {
  GgufWriter w;
  w.add_string("general.architecture", "llama");
  std::string path = write_temp("nokeys", w.to_bytes({}));
  aph_checkpoint_desc d{sizeof(d), path.c_str(), nullptr, nullptr};
  aph_model_source* src = nullptr;
  aph_error err{};
  EXPECT_EQ(vt_->source_open(state_, &d, &src, &err), APH_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err.message).find(path), std::string::npos) << err.message;
  EXPECT_NE(std::string(err.message).find("llama.embedding_length"), std::string::npos) << err.message;
  std::filesystem::remove(path);
  std::string trunc = write_temp("trunc", {'G', 'G', 'U', 'F', 3, 0, 0, 0, 1});
  d.path = trunc.c_str();
  EXPECT_EQ(vt_->source_open(state_, &d, &src, &err), APH_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err.message).find("truncated"), std::string::npos) << err.message;
  std::filesystem::remove(trunc);
}

// linear_forward_shared_rms_norm through the ABI: its input is checked (each
// error names the field), and on the CPU a valid call is declined with
// APH_ERR_UNSUPPORTED and nothing written, for the host to norm x itself.
TEST_F(Plugin, RmsNormInputIsCheckedAndDeclinedOnCpu) {
  const size_t needed = offsetof(aph_quant_vtable, linear_forward_shared_rms_norm) + sizeof(void*);
  ASSERT_GE(vt_->size, needed);
  ASSERT_NE(vt_->linear_forward_shared_rms_norm, nullptr);
  const int64_t n = 8, k = 64, m = 2;
  auto w = test_data::random_rows(kQ4_0, n, k, 3);
  aph_weight_info wi{};
  wi.size = sizeof(wi);
  wi.name = "blk.0.attn_q.weight";
  wi.dtype = -1;
  wi.format_type = kQ4_0;
  wi.rank = 2;
  wi.shape[0] = n;
  wi.shape[1] = k;
  wi.data = w.data();
  wi.nbytes = w.size();
  const aph_linear_desc ld = cpu_linear_desc("model.layers.0.self_attn.q_proj", &wi, n, k);
  aph_quant_linear* lin = nullptr;
  aph_error err{};
  ASSERT_EQ(vt_->linear_create(state_, &ld, &lin, &err), APH_OK) << err.message;

  std::vector<float> res(m * k, 1.0f), delta(m * k, 0.5f), out(m * k, -7.0f), norm_w(k, 1.0f), y(m * n, -7.0f);
  aph_tensor rt{sizeof(aph_tensor), APH_DTYPE_F32, APH_DEVICE_CPU, 2, res.data(), {m, k}, {k, 1}};
  aph_tensor dt{sizeof(aph_tensor), APH_DTYPE_F32, APH_DEVICE_CPU, 2, delta.data(), {m, k}, {k, 1}};
  aph_tensor ot{sizeof(aph_tensor), APH_DTYPE_F32, APH_DEVICE_CPU, 2, out.data(), {m, k}, {k, 1}};
  aph_tensor wt{sizeof(aph_tensor), APH_DTYPE_F32, APH_DEVICE_CPU, 1, norm_w.data(), {k}, {1}};
  aph_tensor yt{sizeof(aph_tensor), APH_DTYPE_F32, APH_DEVICE_CPU, 2, y.data(), {m, n}, {n, 1}};
  aph_rms_norm_input in{};
  in.size = sizeof(in);
  in.residual = &rt;
  in.delta = &dt;
  in.weight = &wt;
  in.eps = 1e-6f;
  in.residual_out = &ot;
  aph_quant_linear* group[1] = {lin};

  EXPECT_EQ(vt_->linear_forward_shared_rms_norm(group, 1, &in, &yt, nullptr, &err), APH_ERR_UNSUPPORTED);
  for (float v : out) ASSERT_EQ(v, -7.0f) << "a declined call wrote residual_out";
  for (float v : y) ASSERT_EQ(v, -7.0f) << "a declined call wrote y";

  auto fails_naming = [&](aph_rms_norm_input bad, const std::string& field) {
    aph_error e{};
    EXPECT_EQ(vt_->linear_forward_shared_rms_norm(group, 1, &bad, &yt, nullptr, &e), APH_ERR_INVALID_ARGUMENT)
        << field;
    EXPECT_NE(std::string(e.message).find(field), std::string::npos) << e.message;
  };
  aph_tensor short_w = wt;
  short_w.shape[0] = k - 1;
  aph_rms_norm_input bad = in;
  bad.weight = &short_w;
  fails_naming(bad, "RMSNorm weight");
  bad = in;
  bad.residual_out = &rt;
  fails_naming(bad, "residual_out");
  bad = in;
  bad.residual_out = nullptr;
  fails_naming(bad, "residual_out");
  aph_tensor wide = dt;
  wide.shape[1] = k + 32;
  wide.strides[0] = k + 32;
  bad = in;
  bad.delta = &wide;
  fails_naming(bad, "delta");
  vt_->linear_destroy(lin);
}

// linear_forward_qkv_rope_kv through the ABI: its RoPE and cache arguments
// are checked (each error names the field), and on the CPU a valid call is
// declined with APH_ERR_UNSUPPORTED and nothing written, for the host to run
// its projections, rope and KV write.
TEST_F(Plugin, QkvRopeKvIsCheckedAndDeclinedOnCpu) {
  const size_t needed = offsetof(aph_quant_vtable, linear_forward_qkv_rope_kv) + sizeof(void*);
  ASSERT_GE(vt_->size, needed);
  ASSERT_NE(vt_->linear_forward_qkv_rope_kv, nullptr);
  const int64_t head_dim = 64, qn = 2 * head_dim, kvn = head_dim, k = 64, m = 1;
  const int64_t ns[3] = {qn, kvn, kvn};
  std::vector<std::vector<uint8_t>> w;
  std::vector<aph_weight_info> wi(3);
  aph_quant_linear* group[3] = {};
  aph_error err{};
  for (int t = 0; t < 3; ++t) w.push_back(test_data::random_rows(kQ4_0, ns[t], k, 5 + t));
  for (int t = 0; t < 3; ++t) {
    wi[t].size = sizeof(aph_weight_info);
    wi[t].name = "blk.0.attn_qkv.weight";
    wi[t].dtype = -1;
    wi[t].format_type = kQ4_0;
    wi[t].rank = 2;
    wi[t].shape[0] = ns[t];
    wi[t].shape[1] = k;
    wi[t].data = w[t].data();
    wi[t].nbytes = w[t].size();
    const aph_linear_desc ld = cpu_linear_desc("model.layers.0.self_attn.qkv", &wi[t], ns[t], k);
    ASSERT_EQ(vt_->linear_create(state_, &ld, &group[t], &err), APH_OK) << err.message;
  }
  std::vector<float> res(m * k, 1.0f), norm_w(k, 1.0f), q(m * qn, -7.0f), inv_freq(head_dim / 2, 0.5f);
  std::vector<uint16_t> k_cache(16 * kvn, 0x1111), v_cache(16 * kvn, 0x2222);
  std::vector<int32_t> positions(m, 3);
  std::vector<int64_t> slots(m, 2);
  aph_tensor rt{sizeof(aph_tensor), APH_DTYPE_F32, APH_DEVICE_CPU, 2, res.data(), {m, k}, {k, 1}};
  aph_tensor wt{sizeof(aph_tensor), APH_DTYPE_F32, APH_DEVICE_CPU, 1, norm_w.data(), {k}, {1}};
  aph_tensor qt{sizeof(aph_tensor), APH_DTYPE_F32, APH_DEVICE_CPU, 2, q.data(), {m, qn}, {qn, 1}};
  aph_rms_norm_input in{};
  in.size = sizeof(in);
  in.residual = &rt;
  in.weight = &wt;
  in.eps = 1e-6f;
  aph_rope_kv_store kv{};
  kv.size = sizeof(kv);
  kv.positions = positions.data();
  kv.inv_freq = inv_freq.data();
  kv.head_dim = static_cast<int32_t>(head_dim);
  kv.rotary_dim = static_cast<int32_t>(head_dim);
  kv.mscale = 1.0f;
  kv.slot_mapping = slots.data();
  kv.total_slots = 16;
  kv.k_cache = k_cache.data();
  kv.v_cache = v_cache.data();
  kv.kv_dtype = APH_DTYPE_F16;
  kv.k_scale = kv.v_scale = 1.0f;

  EXPECT_EQ(vt_->linear_forward_qkv_rope_kv(group, &in, &qt, &kv, nullptr, &err), APH_ERR_UNSUPPORTED) << err.message;
  for (float v : q) ASSERT_EQ(v, -7.0f) << "a declined call wrote q";
  for (uint16_t v : k_cache) ASSERT_EQ(v, 0x1111) << "a declined call wrote the K cache";
  for (uint16_t v : v_cache) ASSERT_EQ(v, 0x2222) << "a declined call wrote the V cache";

  auto fails_naming = [&](aph_rope_kv_store bad, const std::string& field) {
    aph_error e{};
    EXPECT_EQ(vt_->linear_forward_qkv_rope_kv(group, &in, &qt, &bad, nullptr, &e), APH_ERR_INVALID_ARGUMENT) << field;
    EXPECT_NE(std::string(e.message).find(field), std::string::npos) << e.message;
  };
  aph_rope_kv_store bad = kv;
  bad.rotary_dim = 63;
  fails_naming(bad, "rotary_dim");
  bad = kv;
  bad.head_dim = 48;  // does not divide q's 128 rows
  fails_naming(bad, "head_dim");
  bad = kv;
  bad.kv_dtype = APH_DTYPE_F32;
  fails_naming(bad, "kv_dtype");
  bad = kv;
  bad.v_scale = 0.0f;
  fails_naming(bad, "v_scale");
  bad = kv;
  bad.slot_mapping = nullptr;
  fails_naming(bad, "slot_mapping");
  aph_error e{};
  aph_quant_linear* two[3] = {group[0], group[1], nullptr};
  EXPECT_EQ(vt_->linear_forward_qkv_rope_kv(two, &in, &qt, &kv, nullptr, &e), APH_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(e.message).find("linear 2"), std::string::npos) << e.message;
  for (aph_quant_linear* l : group) vt_->linear_destroy(l);
}
