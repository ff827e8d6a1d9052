// Batch-1 decode speed on the device, with the bandwidth each figure implies
// against the card's measured copy bandwidth (issue targets: random-weight
// Llama-3-8B bf16 >= 200 tok/s; SmolLM2-135M Q4_1 >= 1500 tok/s).
//   APH_SPEED_DIR: scratch directory for the 16 GB random checkpoint (default /tmp).
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>

#include "core/common/half.hpp"
#include "core/model/model_runner.hpp"
#include "core/model/sequence.hpp"
#include "tests/oracle/model/check_fixture.hpp"

namespace {

namespace fs = std::filesystem;

double copy_bandwidth_gbs() {
  const size_t bytes = size_t(1) << 30;
  void *a = nullptr, *b = nullptr;
  cudaMalloc(&a, bytes);
  cudaMalloc(&b, bytes);
  cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice);
  cudaDeviceSynchronize();
  const int reps = 10;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice);
  cudaDeviceSynchronize();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  cudaFree(a);
  cudaFree(b);
  return 2.0 * bytes * reps / s / 1e9;  // a copy reads and writes every byte
}

// Decodes `steps` tokens at batch 1 through a captured graph; returns tok/s.
double decode_tok_s(aph::model::ModelRunner& runner, int steps) {
  aph::model::SingleSequence seq(runner, 16 + steps + 1);
  runner.capture_decode_graphs({1}, static_cast<int>((16 + steps + 1 + 15) / 16));
  std::vector<int32_t> prompt(16);
  for (int i = 0; i < 16; ++i) prompt[i] = 100 + i;
  std::vector<float> logits = seq.append(prompt);
  int32_t next = aph::model::argmax(logits.data(), int64_t(logits.size()));
  logits = seq.append({next});  // warm-up step
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < steps - 1; ++i) {
    next = aph::model::argmax(logits.data(), int64_t(logits.size()));
    logits = seq.append({next});
  }
  return (steps - 1) / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void report(const char* what, double tok_s, double weight_bytes, double bw) {
  std::printf("[ speed    ] %s: %.1f tok/s, %.2f GB/token -> %.0f GB/s = %.1f%% of measured copy bandwidth (%.0f GB/s)\n",
              what, tok_s, weight_bytes / 1e9, tok_s * weight_bytes / 1e9, 100.0 * tok_s * weight_bytes / 1e9 / bw, bw);
}

// A Llama-3-8B-shaped HF checkpoint with random bf16 weights.
fs::path write_llama8b(const fs::path& dir, double* total_bytes) {
  fs::create_directories(dir);
  boost::json::object cfg{{"architectures", boost::json::array{"LlamaForCausalLM"}}, {"model_type", "llama"},
                          {"hidden_size", 4096}, {"intermediate_size", 14336}, {"num_hidden_layers", 32},
                          {"num_attention_heads", 32}, {"num_key_value_heads", 8}, {"rms_norm_eps", 1e-5},
                          {"rope_theta", 500000.0}, {"max_position_embeddings", 8192}, {"vocab_size", 128256},
                          {"tie_word_embeddings", false}, {"torch_dtype", "bfloat16"},
                          {"rope_scaling", {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                                            {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}}}};
  std::ofstream(dir / "config.json") << boost::json::serialize(cfg);
  std::vector<std::pair<std::string, std::vector<int64_t>>> ts = {{"model.embed_tokens.weight", {128256, 4096}},
                                                                   {"lm_head.weight", {128256, 4096}},
                                                                   {"model.norm.weight", {4096}}};
  for (int l = 0; l < 32; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    ts.push_back({p + "input_layernorm.weight", {4096}});
    ts.push_back({p + "post_attention_layernorm.weight", {4096}});
    ts.push_back({p + "self_attn.q_proj.weight", {4096, 4096}});
    ts.push_back({p + "self_attn.k_proj.weight", {1024, 4096}});
    ts.push_back({p + "self_attn.v_proj.weight", {1024, 4096}});
    ts.push_back({p + "self_attn.o_proj.weight", {4096, 4096}});
    ts.push_back({p + "mlp.gate_proj.weight", {14336, 4096}});
    ts.push_back({p + "mlp.up_proj.weight", {14336, 4096}});
    ts.push_back({p + "mlp.down_proj.weight", {4096, 14336}});
  }
  boost::json::object header;
  uint64_t off = 0;
  for (const auto& [name, shape] : ts) {
    uint64_t n = 2;
    boost::json::array sh;
    for (int64_t d : shape) n *= d, sh.push_back(d);
    header[name] = {{"dtype", "BF16"}, {"shape", sh}, {"data_offsets", {off, off + n}}};
    off += n;
  }
  *total_bytes = static_cast<double>(off);
  std::string h = boost::json::serialize(header);
  std::ofstream out(dir / "model.safetensors", std::ios::binary);
  uint64_t hl = h.size();
  out.write(reinterpret_cast<const char*>(&hl), 8);
  out << h;
  // Small random values (|w| < 0.03), one 64 MB pattern repeated: content does not change the speed.
  std::vector<uint16_t> block(32u << 20);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-0.03f, 0.03f);
  for (auto& v : block) v = aph::f32_to_bf16(u(rng));
  for (uint64_t done = 0; done < off;) {
    const uint64_t n = std::min<uint64_t>(off - done, block.size() * 2);
    out.write(reinterpret_cast<const char*>(block.data()), static_cast<std::streamsize>(n));
    done += n;
  }
  return dir;
}

TEST(Speed, Llama8BBf16Batch1) {
  const char* scratch = std::getenv("APH_SPEED_DIR");
  double bytes = 0;
  fs::path dir = write_llama8b(fs::path(scratch ? scratch : "/tmp") / "aph_speed_llama8b", &bytes);
  const double bw = copy_bandwidth_gbs();
  aph::model::LoadOptions o;
  o.path = dir.string();
  o.device = 0;
  o.dtype = "bfloat16";
  o.max_model_len = 1024;
  aph::PluginRegistry none;
  double tok_s = 0;
  {
    auto runner = aph::model::ModelRunner::load(o, none);
    tok_s = decode_tok_s(*runner, 256);
  }
  fs::remove_all(dir);
  // Per token the whole checkpoint is read except the embedding table (one row).
  report("Llama-3-8B bf16, batch 1", tok_s, bytes - 128256.0 * 4096 * 2, bw);
  EXPECT_GE(tok_s, 200.0);
}

TEST(Speed, SmolLM2Q4_1Batch1) {
  const char* src = std::getenv("APH_SOURCE_DIR");
  const std::string path = std::string(src ? src : ".") + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
  if (!fs::exists(path)) GTEST_SKIP() << path << " missing (scripts/fetch-default-model.sh)";
  auto plugins = aph::oracle::load_build_plugins(true);
  const double bw = copy_bandwidth_gbs();
  aph::model::LoadOptions o;
  o.path = path;
  o.device = 0;
  o.max_model_len = 1024;
  auto runner = aph::model::ModelRunner::load(o, plugins->registry());
  const double tok_s = decode_tok_s(*runner, 512);
  report("SmolLM2-135M Q4_1, batch 1", tok_s, static_cast<double>(fs::file_size(path)), bw);
  EXPECT_GE(tok_s, 1500.0);
}

}  // namespace
