// Loader conformance: every fake plugin is a real .so; each broken one must
// be skipped with a reason that names what is wrong, the good ones loaded,
// and the host must survive all of them (this process is the host).
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <map>
#include <string>

#include "server/http/route_table.hpp"
#include "server/plugin_loader.hpp"

namespace aph::server {
namespace {

const std::string kDir = APH_FAKE_PLUGIN_DIR;

std::string stem_of(const std::string& file) {
  auto slash = file.find_last_of('/');
  std::string base = file.substr(slash + 1);
  return base.substr(0, base.rfind('.'));
}

std::map<std::string, std::string> skip_reasons(const PluginLoader& loader) {
  std::map<std::string, std::string> out;
  for (const auto& s : loader.skipped()) out[stem_of(s.file)] = s.reason;
  return out;
}

struct Loaded {
  RouteTable routes;
  std::unique_ptr<PluginLoader> loader;
};

std::unique_ptr<Loaded> load(PluginLoadOptions options) {
  auto out = std::make_unique<Loaded>();
  RouteTable* routes = &out->routes;
  options.dirs = {kDir};
  options.register_route = [routes](const aph_route& r, const std::string& owner, aph_error* err) {
    return routes->add(r, owner, err);
  };
  options.unregister_routes = [routes](const std::string& owner) { routes->remove_owner(owner); };
  out->loader = std::make_unique<PluginLoader>(std::move(options));
  out->loader->load_all();
  return out;
}

TEST(PluginLoader, LoadsTheGoodAndSkipsEachBrokenPluginWithItsReason) {
  auto l = load({});
  auto reasons = skip_reasons(*l->loader);

  EXPECT_NE(reasons["wrong_major"].find("wrong ABI major 2 (host speaks 1)"), std::string::npos)
      << reasons["wrong_major"];
  const std::string offer = "(1.0..1." + std::to_string(APH_ABI_MINOR) + ")";
  EXPECT_NE(reasons["refuses_offer"].find("speaks no ABI version the host offers " + offer),
            std::string::npos)
      << reasons["refuses_offer"];
  EXPECT_NE(reasons["refuses_offer"].find("needs ABI 1.5 or newer"), std::string::npos);
  EXPECT_NE(reasons["minor_outside"].find("answered ABI minor 9 outside the offer"),
            std::string::npos)
      << reasons["minor_outside"];
  EXPECT_NE(reasons["missing_entry"].find("missing entry symbol aph_plugin_entry"),
            std::string::npos)
      << reasons["missing_entry"];
  EXPECT_NE(reasons["init_fails"].find("init failed with status 6: fake init failure on purpose"),
            std::string::npos)
      << reasons["init_fails"];
  EXPECT_NE(reasons["init_throws"].find("init threw: fake init threw on purpose"),
            std::string::npos)
      << reasons["init_throws"];
  EXPECT_NE(reasons["entry_throws"].find("entry threw: fake entry threw on purpose"),
            std::string::npos)
      << reasons["entry_throws"];
  EXPECT_NE(reasons["bad_vtable"].find("bad vtable size 8 for a sampler plugin"), std::string::npos)
      << reasons["bad_vtable"];
  EXPECT_NE(reasons["route_then_fail"].find("failed after registering a route"), std::string::npos)
      << reasons["route_then_fail"];
  EXPECT_NE(reasons["zz_duplicate_name"].find("duplicate plugin name 'fake-good'"),
            std::string::npos)
      << reasons["zz_duplicate_name"];
  EXPECT_NE(reasons["not_a_library"].find("cannot load the library"), std::string::npos)
      << reasons["not_a_library"];
  EXPECT_EQ(reasons.size(), 11u);

  std::map<std::string, LoadedPluginInfo> loaded;
  for (const auto& p : l->loader->loaded()) loaded[p.name] = p;
  ASSERT_EQ(loaded.size(), 3u);
  EXPECT_EQ(loaded["fake-good"].kind, APH_KIND_SAMPLER);
  EXPECT_EQ(loaded["fake-good"].version, "9.9.9");
  EXPECT_EQ(loaded["fake-api"].kind, APH_KIND_API);
  // Speaks 1.0..1.7, the host offers up to its own minor: it must answer that.
  EXPECT_EQ(loaded["fake-newer-minor"].abi_major, 1u);
  EXPECT_EQ(loaded["fake-newer-minor"].abi_minor, uint32_t{APH_ABI_MINOR});

  const PluginRegistry& reg = l->loader->registry();
  ASSERT_EQ(reg.samplers.size(), 2u);
  EXPECT_TRUE(reg.quant.empty());
  EXPECT_TRUE(reg.lora.empty());
  for (const auto& s : reg.samplers) {
    ASSERT_NE(s.vtable, nullptr);
    EXPECT_EQ(s.vtable->n_stages, 1u);
    EXPECT_NE(s.state, nullptr);  // init ran and created its state
  }
  // Each plugin logs through its own spdlog logger.
  EXPECT_NE(spdlog::get("plugin.fake-good"), nullptr);
}

TEST(PluginLoader, RoutesOfAPluginWhoseInitFailedAreRolledBack) {
  auto l = load({});
  bool api_route = false;
  for (const auto& r : l->routes.entries()) {
    EXPECT_NE(r.owner, "fake-route-then-fail") << r.path;
    api_route = api_route || (r.owner == "fake-api" && r.path == "/fake/fake-api");
  }
  EXPECT_TRUE(api_route);
}

TEST(PluginLoader, NegotiatesTheNewestMinorBothSpeak) {
  PluginLoadOptions options;
  options.offer_max_minor = 3;  // as a future host of ABI 1.3 would offer
  auto l = load(std::move(options));
  bool found = false;
  for (const auto& p : l->loader->loaded()) {
    if (p.name == "fake-newer-minor") {
      EXPECT_EQ(p.abi_minor, 3u);
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST(PluginLoader, DisableListSkipsByNameAndByFileStem) {
  PluginLoadOptions options;
  options.disable = {"fake-api", "newer_minor"};
  auto l = load(std::move(options));
  auto reasons = skip_reasons(*l->loader);
  EXPECT_NE(reasons["good_api"].find("is not enabled"), std::string::npos) << reasons["good_api"];
  EXPECT_NE(reasons["newer_minor"].find("disabled"), std::string::npos) << reasons["newer_minor"];
  ASSERT_EQ(l->loader->loaded().size(), 1u);
  EXPECT_EQ(l->loader->loaded()[0].name, "fake-good");
  EXPECT_TRUE(l->routes.entries().empty());
}

TEST(PluginLoader, EnableListLoadsOnlyTheNamedPlugins) {
  PluginLoadOptions options;
  options.enable = {"fake-api"};
  auto l = load(std::move(options));
  ASSERT_EQ(l->loader->loaded().size(), 1u);
  EXPECT_EQ(l->loader->loaded()[0].name, "fake-api");
  auto reasons = skip_reasons(*l->loader);
  EXPECT_NE(reasons["good_sampler"].find("is not enabled"), std::string::npos);
}

TEST(PluginLoader, ShutdownUnloadsEverythingAndEmptiesTheRegistry) {
  auto l = load({});
  EXPECT_FALSE(l->loader->registry().samplers.empty());
  l->loader->shutdown();
  EXPECT_TRUE(l->loader->registry().samplers.empty());
  l->loader->shutdown();  // twice is harmless
}

TEST(PluginLoader, MissingDirectoryIsNotFatal) {
  PluginLoadOptions options;
  options.dirs = {kDir + "/does-not-exist"};
  PluginLoader loader(std::move(options));
  loader.load_all();
  EXPECT_TRUE(loader.loaded().empty());
  EXPECT_TRUE(loader.skipped().empty());
}

TEST(PluginLoader, RelativeFileIsLoadedByAbsolutePathNotBySearchPath) {
  // "good_sampler.so" alone would be a search-path lookup for dlopen; the
  // loader must resolve it against the current directory instead.
  PluginLoader loader(PluginLoadOptions{});
  EXPECT_FALSE(loader.load_file("good_sampler.so"));
  ASSERT_EQ(loader.skipped().size(), 1u);
  EXPECT_EQ(loader.skipped()[0].file.front(), '/');
}

}  // namespace
}  // namespace aph::server
