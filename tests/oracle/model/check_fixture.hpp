// Runs a fixture's prompt and greedy continuation through a ModelRunner and
// checks them against the reference (shared by the CPU and GPU oracle tests).
#pragma once

#include <gtest/gtest.h>

#include "core/model/model_runner.hpp"
#include "core/model/sequence.hpp"
#include "server/config.hpp"
#include "server/subcommands.hpp"
#include "tests/oracle/model/fixture.hpp"

namespace aph::oracle {

// The quant plugins of this build (for fixtures that name a GGUF file).
// gguf_cpu_exact: the GGUF plugin's CPU linears dequantize to fp32 instead of
// quantizing activations to int8 blocks as llama.cpp does.
inline std::unique_ptr<server::PluginLoader> load_build_plugins(bool cuda, bool gguf_cpu_exact = false) {
  server::DaemonConfig config;
  const char* dir = std::getenv("APH_PLUGIN_DIR");
  config.plugins.dirs = {dir ? dir : "build/plugins"};
  config.engine.device = cuda ? "cuda" : "cpu";
  if (gguf_cpu_exact) config.plugins.sections_json["gguf"] = R"({"cpu_exact": true})";
  return server::load_plugins(config);
}

// tol: relative logits tolerance; tie_tol: a greedy divergence is accepted
// only where the reference's top-two margin is below tie_tol * max|logit|.
inline void check_fixture(const Fixture& f, int32_t device, const std::string& dtype, double tol, double tie_tol,
                          const PluginRegistry& plugins) {
  ASSERT_FALSE(f.logits.empty()) << "missing logits.f32 in " << f.dir;
  model::LoadOptions opts;
  opts.path = f.model_file.empty() ? f.dir : std::string(std::getenv("APH_SOURCE_DIR") ? std::getenv("APH_SOURCE_DIR") : ".") + "/" + f.model_file;
  opts.device = device;
  opts.dtype = dtype;
  opts.max_model_len = f.max_model_len;
  opts.cpu_threads = 2;
  auto runner = model::ModelRunner::load(opts, plugins);
  ASSERT_EQ(runner->info().vocab_size, f.vocab);
  const int64_t cap = static_cast<int64_t>(f.prompt.size() + f.greedy.size());
  model::SingleSequence seq(*runner, cap);
  if (device != APH_DEVICE_CPU) runner->capture_decode_graphs({1, 2, 4}, static_cast<int>((cap + 15) / 16));
  std::vector<float> logits = seq.append(f.prompt, !f.logits_last_only);
  ASSERT_EQ(logits.size(), f.logits.size());
  const double err = worst_relative_error(logits.data(), f.logits.data(), f.logit_rows(), f.vocab);
  EXPECT_LE(err, tol) << f.dir << " (" << f.source << ")";
  std::printf("[ fixture  ] %s: worst relative logits error %.3g\n", f.dir.c_str(), err);

  const double scale = max_abs(f.logits);
  std::vector<float> last(logits.end() - f.vocab, logits.end());
  size_t matched = 0;
  for (size_t step = 0; step < f.greedy.size(); ++step) {
    const int32_t next = model::argmax(last.data(), f.vocab);
    if (next != f.greedy[step]) {
      EXPECT_LT(f.margins[step], tie_tol * scale) << f.dir << ": greedy diverges at step " << step << " (got " << next
                                                  << ", want " << f.greedy[step] << ") with a clear reference margin";
      break;
    }
    ++matched;
    if (step + 1 < f.greedy.size()) last = seq.append({next});
  }
  std::printf("[ fixture  ] %s: greedy %zu/%zu tokens identical\n", f.dir.c_str(), matched, f.greedy.size());
}

inline std::string fixture_test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = std::filesystem::path(info.param).parent_path().filename().string() + "_" +
                     std::filesystem::path(info.param).filename().string();
  for (char& c : name)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

}  // namespace aph::oracle
