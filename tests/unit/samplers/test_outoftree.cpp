// A stage built out of tree (tests/outoftree-sampler, against plugin-api/
// only) runs in the chain next to aph_samplers: enabled by its toml section
// and by the request field it declares.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "core/common/error.hpp"

#include "tests/unit/samplers/chain_harness.hpp"

namespace aph::test {
namespace {

std::string outoftree_plugin() {
  const char* p = std::getenv("APH_OUTOFTREE_SAMPLER");
  return p != nullptr ? p : "";
}

TEST(OutOfTree, BansItsTokenOnlyWhenTheRequestAsks) {
  const std::string path = outoftree_plugin();
  ASSERT_FALSE(path.empty()) << "APH_OUTOFTREE_SAMPLER is not set (the ctest fixture builds it)";
  LoadedPlugins plugins;
  plugins.load(plugin_path("aph_samplers.so"));
  plugins.load(path, R"({"token": 7})");  // [plugins.ban_token] token = 7
  sampling::ChainOptions options;
  options.vocab_size = 16;
  auto chain = sampling::SamplerChain::create(plugins.registry(), options);
  auto names = chain->stage_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "ban_token"), names.end());

  std::vector<float> x(16, 0.0f);
  x[7] = 20.0f;  // greedy would pick 7
  for (bool ban : {false, true}) {
    auto req = chain->prepare(boost::json::parse(std::string(R"({"temperature": 0, "ban_token": )") +
                                                 (ban ? "true" : "false") + "}")
                                  .as_object());
    sampling::RowInput row;
    row.sampling = req.get();
    Tensor t = Tensor::empty({1, 16}, APH_DTYPE_F32, APH_DEVICE_CPU);
    std::copy(x.begin(), x.end(), t.as<float>());
    std::vector<int32_t> chosen;
    chain->sample(t, std::span<const sampling::RowInput>(&row, 1), chosen, nullptr);
    EXPECT_EQ(t.as<float>()[7] == kNegInf, ban);
    EXPECT_EQ(chosen[0] == 7, !ban);
  }
  // The chain validates the field the plugin declared.
  try {
    chain->prepare(boost::json::parse(R"({"ban_token": "yes"})").as_object());
    FAIL() << "a string for a BOOL field was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("ban_token:", 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace aph::test
