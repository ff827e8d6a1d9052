// Feeds arbitrary JSON request bodies to SamplerChain::prepare with the real
// aph_samplers plugin loaded. Any outcome but success or aph::Error is a bug.
#include <boost/json.hpp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "core/common/error.hpp"
#include "core/sampling/sampler_chain.hpp"
#include "tests/unit/samplers/plugin_fixture.hpp"

namespace {

struct Harness {
  aph::test::LoadedPlugins plugins;
  std::unique_ptr<aph::sampling::SamplerChain> chain;

  Harness() {
    plugins.load(aph::test::plugin_path("aph_samplers.so"));
    aph::sampling::ChainOptions options;
    options.vocab_size = 512;
    options.eos_token_id = 2;
    options.eog_token_ids = {2};
    for (int i = 0; i < options.vocab_size; ++i) {
      options.token_bytes.push_back(i < 256 ? std::string(1, static_cast<char>(i)) : "tok" + std::to_string(i));
    }
    chain = aph::sampling::SamplerChain::create(plugins.registry(), options);
  }
};

Harness& harness() {
  static Harness h;
  return h;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Harness& h = harness();
  boost::system::error_code ec;
  boost::json::value value =
      boost::json::parse(std::string_view(reinterpret_cast<const char*>(data), size), ec);
  if (ec || !value.is_object()) return 0;
  try {
    auto prepared = h.chain->prepare(value.as_object());
    (void)prepared->seed();
  } catch (const aph::Error& e) {
    if (e.code() != APH_ERR_INVALID_ARGUMENT && e.code() != APH_ERR_UNSUPPORTED) {
      std::fprintf(stderr, "unexpected status %d: %s\n", static_cast<int>(e.code()), e.what());
      std::abort();
    }
  }
  return 0;
}
