// Batch invariance (issue 5 item 4). On the CPU a greedy request gives exactly
// the same tokens alone as inside a batch of 64, on a real (tiny, random
// weight) Llama checkpoint loaded through the normal model path; on CUDA the
// test reports how often they differ.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <thread>

#include "core/engine/engine.hpp"
#include "server/plugin_loader.hpp"

namespace {

namespace fs = std::filesystem;

std::string env(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

// The benchmark's generator writes the checkpoint (one generator for both).
fs::path make_tiny_model() {
  const fs::path src = env("APH_SOURCE_DIR", ".");
  const fs::path out = fs::temp_directory_path() / ("aph-tiny-llama-" + std::to_string(::getpid()));
  std::string python = (src / ".venv/bin/python").string();
  if (!fs::exists(python)) python = "python3";
  const std::string cmd = python + " " + (src / "bench/engine/make_model.py").string() +
                          " --shape tiny --dtype f32 --seed 3 --out " + out.string();
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("make_model.py failed: " + cmd);
  return out;
}

// Tokens and the chosen tokens' logprobs as JSON text: comparing the text
// compares the floats bit for bit (shortest round-trip form), which catches
// batch-dependent arithmetic even where the argmax would not change.
struct Output {
  std::vector<int32_t> tokens;
  std::string logprobs;
};

Output generate(const aph_engine_api* api, const std::vector<int32_t>& prompt, int max_tokens) {
  boost::json::object o;
  boost::json::array ids;
  for (int32_t id : prompt) ids.push_back(id);
  o["prompt_token_ids"] = std::move(ids);
  o["max_tokens"] = max_tokens;
  o["ignore_eos"] = true;
  o["temperature"] = 0.0;
  o["logprobs"] = 0;
  const std::string json = boost::json::serialize(o);
  aph_error err{};
  err.size = sizeof err;
  aph_request* req = nullptr;
  if (api->submit(api->engine, json.c_str(), &req, &err) != APH_OK)
    throw std::runtime_error(err.message);
  Output out;
  for (;;) {
    aph_gen_event ev{};
    ev.size = sizeof ev;
    if (api->next_event(req, 30000, &ev, &err) != APH_OK || ev.kind == APH_EVENT_NONE ||
        ev.kind == APH_EVENT_ERROR) {
      api->release(req);
      throw std::runtime_error(std::string("generation failed: ") + err.message);
    }
    out.tokens.insert(out.tokens.end(), ev.token_ids, ev.token_ids + ev.n_tokens);
    if (ev.logprobs_json) {
      const boost::json::value parsed = boost::json::parse(ev.logprobs_json);
      for (const auto& e : parsed.as_array())
        out.logprobs += boost::json::serialize(e.as_object().at("logprob")) + ",";
    }
    if (ev.kind == APH_EVENT_DONE) break;
  }
  api->release(req);
  return out;
}

std::vector<std::vector<int32_t>> random_prompts() {
  std::mt19937 rng(11);
  std::vector<std::vector<int32_t>> prompts(64);
  for (auto& p : prompts) {
    p.resize(4 + rng() % 40);
    for (auto& id : p) id = static_cast<int32_t>(rng() % 500);
  }
  return prompts;
}

std::vector<Output> one_at_a_time(const aph_engine_api* api, const std::vector<std::vector<int32_t>>& prompts,
                                  int max_tokens) {
  std::vector<Output> out;
  for (const auto& p : prompts) out.push_back(generate(api, p, max_tokens));
  return out;
}

// All prompts at once, one client thread each: they share decode steps.
std::vector<Output> all_at_once(const aph_engine_api* api, const std::vector<std::vector<int32_t>>& prompts,
                                int max_tokens) {
  std::vector<Output> out(prompts.size());
  std::vector<std::thread> clients;
  for (size_t i = 0; i < prompts.size(); ++i)
    clients.emplace_back([&, i] { out[i] = generate(api, prompts[i], max_tokens); });
  for (auto& t : clients) t.join();
  return out;
}

// Each prompt alone, then all at once: the same tokens and the same
// logprobs bit for bit.
void expect_alone_equals_batched(const aph_engine_api* api, const std::vector<std::vector<int32_t>>& prompts,
                                 int max_tokens, const std::string& label) {
  const std::vector<Output> alone = one_at_a_time(api, prompts, max_tokens);
  const std::vector<Output> batched = all_at_once(api, prompts, max_tokens);
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_EQ(alone[i].tokens.size(), static_cast<size_t>(max_tokens)) << label;
    ASSERT_FALSE(alone[i].logprobs.empty()) << label;
    EXPECT_EQ(batched[i].tokens, alone[i].tokens) << label << " request " << i;
    EXPECT_EQ(batched[i].logprobs, alone[i].logprobs) << label << " request " << i;
  }
}

// The tiny checkpoint quantized by the project's quantizer into one GGUF
// file of `type` (its head Q6_K), beside the checkpoint.
fs::path quantize_tiny_model(const fs::path& hf_dir, const std::string& type) {
  const fs::path tool = fs::path(env("APH_BUILD_DIR", "build")) / "bin/aphrodite-quantize";
  const fs::path out = hf_dir / ("tiny-" + type + ".gguf");
  const std::string cmd = tool.string() + " --type " + type + " " + hf_dir.string() + " " + out.string() +
                          " > /dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("quantizing failed: " + cmd);
  return out;
}

// The tiny checkpoint, its plugins and an engine config for 64 sequences.
struct TinyModel {
  fs::path model = make_tiny_model();
  aph::server::PluginLoader plugins{options()};
  aph::engine::EngineConfig cfg;

  explicit TinyModel(const std::string& device) {
    plugins.load_all();
    cfg.model_path = model.string();
    cfg.device = device;
    cfg.max_model_len = 256;
    cfg.max_num_seqs = 64;
    cfg.max_num_batched_tokens = 4096;
    cfg.cpu_kv_cache_bytes = 64ll << 20;
    cfg.cpu_threads = 2;
    cfg.kv_cache_memory = 256ll << 20;  // CUDA: a small pool, quick to set up
    cfg.enable_prefix_caching = false;
  }
  ~TinyModel() { fs::remove_all(model); }
  static aph::server::PluginLoadOptions options() {
    aph::server::PluginLoadOptions o;
    o.dirs = {env("APH_PLUGIN_DIR", "build/plugins")};
    return o;
  }
};

}  // namespace

TEST(BatchInvariance, GreedyAloneEqualsInABatchOf64) {
  TinyModel setup("cpu");
  auto& cfg = setup.cfg;
  // test_batch_invariance_overlap: decode steps queued before the previous
  // step's tokens are read must not change a bit either.
  cfg.overlap_decode = env("APH_TEST_OVERLAP_DECODE", "0") == "1";
  auto engine = aph::engine::Engine::create(cfg, setup.plugins.registry());
  const aph_engine_api* api = engine->api();

  expect_alone_equals_batched(api, random_prompts(), 12, "f32");
  if (cfg.overlap_decode) {
    EXPECT_GT(engine->stats().overlapped_steps, 0u);
  }
  engine->shutdown();
}

// A GGUF model on the CPU takes the integer kernels: a lone decode reads the
// blocks directly (Q4_0), a batch of 64 unpacks them; Q5_K unpacks always.
// Either way a row's bits must not change.
TEST(BatchInvariance, GgufGreedyAloneEqualsInABatchOf64) {
  for (const char* type : {"Q4_0", "Q5_K"}) {
    TinyModel setup("cpu");
    auto& cfg = setup.cfg;
    cfg.model_path = quantize_tiny_model(setup.model, type).string();
    auto engine = aph::engine::Engine::create(cfg, setup.plugins.registry());
    expect_alone_equals_batched(engine->api(), random_prompts(), 12, type);
    engine->shutdown();
  }
}

// Contexts of several key splits (the CPU attention's 256 keys): a lone
// decode runs its splits as separate work items, a batch runs each unit's in
// order; the bits must agree. On an fp16 and an fp8 KV cache, which the CPU
// engine also offers.
TEST(BatchInvariance, LongContextsOnHalfAndFp8KvCaches) {
  for (const char* kv : {"fp16", "fp8"}) {
    TinyModel setup("cpu");
    auto& cfg = setup.cfg;
    cfg.max_model_len = 1024;
    cfg.kv_cache_dtype = kv;
    auto engine = aph::engine::Engine::create(cfg, setup.plugins.registry());
    std::mt19937 rng(17);
    std::vector<std::vector<int32_t>> prompts(6);
    for (auto& p : prompts) {
      p.resize(250 + rng() % 500);
      for (auto& id : p) id = static_cast<int32_t>(rng() % 500);
    }
    expect_alone_equals_batched(engine->api(), prompts, 10, kv);
    engine->shutdown();
  }
}

// On CUDA (APH_TEST_DEVICE=cuda, the gpu-labelled ctest): a batch's kernels
// may sum in another order than batch 1's, so a greedy request in a batch of
// 64 can leave the lone run's path; the test prints how often (issue 5 asks
// for the rate) and checks only that every request completes. Overlapped
// decoding must not change a bit: the lone runs with engine.overlap_decode on
// and off give the same tokens and logprobs.
TEST(BatchInvariance, CudaDivergenceRateAndOverlapAgreement) {
  if (env("APH_TEST_DEVICE", "cpu") != "cuda") GTEST_SKIP() << "APH_TEST_DEVICE=cuda runs it";
  TinyModel setup("cuda");
  const auto prompts = random_prompts();
  const int max_tokens = 32;
  std::vector<Output> alone[2], batched;
  for (bool overlap : {false, true}) {
    setup.cfg.overlap_decode = overlap;
    auto engine = aph::engine::Engine::create(setup.cfg, setup.plugins.registry());
    alone[overlap] = one_at_a_time(engine->api(), prompts, max_tokens);
    if (overlap) {
      EXPECT_GT(engine->stats().overlapped_steps, 0u);
    } else {
      batched = all_at_once(engine->api(), prompts, max_tokens);
    }
    engine->shutdown();
  }
  int diverged = 0, same_tokens = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_EQ(alone[0][i].tokens.size(), static_cast<size_t>(max_tokens));
    ASSERT_EQ(batched[i].tokens.size(), static_cast<size_t>(max_tokens));
    EXPECT_EQ(alone[1][i].tokens, alone[0][i].tokens) << "request " << i << ": overlap changed the tokens";
    EXPECT_EQ(alone[1][i].logprobs, alone[0][i].logprobs) << "request " << i << ": overlap changed the logprobs";
    int t = 0;
    while (t < max_tokens && batched[i].tokens[t] == alone[0][i].tokens[t]) ++t;
    same_tokens += t;
    diverged += t < max_tokens;
  }
  std::printf("CUDA batch invariance: %d of %zu greedy requests diverged in a batch of 64; "
              "%d of %zu tokens came before the first divergence\n",
              diverged, prompts.size(), same_tokens, prompts.size() * max_tokens);
}
