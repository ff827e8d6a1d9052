// The plugin built out of tree (tests/outoftree) is found by the daemon and
// works through its vtable like any in-tree plugin.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "server/plugin_loader.hpp"

namespace aph::server {
namespace {

TEST(OutOfTreePlugin, DaemonDiscoversAndLoadsIt) {
  std::string command =
      std::string(APH_DAEMON_PATH) + " --list-plugins --plugin-dir " APH_OUTOFTREE_DIR " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) output.append(buf, n);
  int rc = pclose(pipe);
  ASSERT_TRUE(WIFEXITED(rc));
  EXPECT_EQ(WEXITSTATUS(rc), 0) << output;
  // Built against this checkout's plugin-api, it answers the host's minor.
  EXPECT_NE(output.find("loaded  quant outoftree-f32 1.0.0 ABI 1." + std::to_string(APH_ABI_MINOR) +
                        " " APH_OUTOFTREE_DIR "/outoftree_f32.so"),
            std::string::npos)
      << output;
  EXPECT_NE(output.find("1 loaded, 0 skipped"), std::string::npos) << output;
}

TEST(OutOfTreePlugin, ProbesCreatesAndRunsALinearLayer) {
  PluginLoadOptions options;
  options.dirs = {APH_OUTOFTREE_DIR};
  options.memory = std::make_shared<MemoryBudget>();
  auto memory = options.memory;
  PluginLoader loader(std::move(options));
  loader.load_all();
  ASSERT_EQ(loader.registry().quant.size(), 1u);
  const LoadedQuantPlugin& q = loader.registry().quant[0];
  EXPECT_STREQ(q.vtable->format_name, "outoftree-f32");

  aph_error err{};
  err.size = sizeof(err);
  aph_checkpoint_desc ckpt{sizeof(aph_checkpoint_desc), "/x/model", nullptr, "outoftree-f32"};
  float score = -1;
  ASSERT_EQ(q.vtable->probe(q.state, &ckpt, &score, &err), APH_OK);
  EXPECT_EQ(score, 100.0f);
  ckpt.quantization = "";
  ASSERT_EQ(q.vtable->probe(q.state, &ckpt, &score, &err), APH_OK);
  EXPECT_EQ(score, 0.0f);

  // W = [[1, 2, 3], [4, 5, 6]], b = [0.5, -1]; x = [[1, 0, -1], [2, 1, 0]].
  const float w[] = {1, 2, 3, 4, 5, 6};
  const float b[] = {0.5f, -1.0f};
  aph_weight_info weight{};
  weight.size = sizeof(weight);
  weight.name = "l.weight";
  weight.dtype = APH_DTYPE_F32;
  weight.rank = 2;
  weight.shape[0] = 2;
  weight.shape[1] = 3;
  weight.data = w;
  weight.nbytes = sizeof(w);
  aph_weight_info bias = weight;
  bias.name = "l.bias";
  bias.rank = 1;
  bias.shape[0] = 2;
  bias.data = b;
  bias.nbytes = sizeof(b);
  aph_linear_desc desc{};
  desc.size = sizeof(desc);
  desc.name = "l";
  desc.in_features = 3;
  desc.out_features = 2;
  desc.device = APH_DEVICE_CPU;
  desc.act_dtype = APH_DTYPE_F32;
  desc.n_parts = 1;
  desc.parts = &weight;
  desc.bias = &bias;
  aph_quant_linear* linear = nullptr;
  ASSERT_EQ(q.vtable->linear_create(q.state, &desc, &linear, &err), APH_OK) << err.message;
  EXPECT_GT(memory->device_used(APH_DEVICE_CPU), sizeof(w));  // through the host's budget

  float x[] = {1, 0, -1, 2, 1, 0};
  float y[4] = {};
  aph_tensor tx{sizeof(aph_tensor), APH_DTYPE_F32, APH_DEVICE_CPU, 2, x, {2, 3}, {3, 1}};
  aph_tensor ty{sizeof(aph_tensor), APH_DTYPE_F32, APH_DEVICE_CPU, 2, y, {2, 2}, {2, 1}};
  ASSERT_EQ(q.vtable->linear_forward(linear, &tx, &ty, nullptr, &err), APH_OK) << err.message;
  EXPECT_FLOAT_EQ(y[0], 1 - 3 + 0.5f);
  EXPECT_FLOAT_EQ(y[1], 4 - 6 - 1.0f);
  EXPECT_FLOAT_EQ(y[2], 2 + 2 + 0.5f);
  EXPECT_FLOAT_EQ(y[3], 8 + 5 - 1.0f);

  tx.shape[1] = 4;  // wrong K: an error value naming the problem, no crash
  EXPECT_EQ(q.vtable->linear_forward(linear, &tx, &ty, nullptr, &err), APH_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err.message).find("outoftree-f32"), std::string::npos);

  q.vtable->linear_destroy(linear);
  EXPECT_EQ(memory->device_used(APH_DEVICE_CPU), 0u);
}

}  // namespace
}  // namespace aph::server
