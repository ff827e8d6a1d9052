#include "server/subcommands.hpp"

#include <algorithm>
#include <map>

#include "core/common/error.hpp"
#include "core/common/log.hpp"
#include "core/common/device_choice.hpp"
#include "server/engine_facade.hpp"

namespace aph::server {
namespace {

// Function-local so registration from other translation units' static
// initializers never sees an unconstructed map.
std::map<std::string, Subcommand>& table() {
  static std::map<std::string, Subcommand> subcommands;
  return subcommands;
}

}  // namespace

bool register_subcommand(const char* name, const char* summary, SubcommandFn run) {
  auto [it, inserted] = table().emplace(name, Subcommand{name, summary ? summary : "", run});
  if (!inserted) throw Error(APH_ERR_INTERNAL, std::string("subcommand registered twice: ") + name);
  return true;
}

const Subcommand* find_subcommand(const std::string& name) {
  auto it = table().find(name);
  return it == table().end() ? nullptr : &it->second;
}

std::vector<Subcommand> list_subcommands() {
  std::vector<Subcommand> out;
  for (const auto& [name, sub] : table()) out.push_back(sub);
  return out;
}

namespace {

// Owns the facade API plugins see, so it outlives the loader that uses it.
class SubcommandPluginLoader : public PluginLoader {
 public:
  SubcommandPluginLoader(PluginLoadOptions options, std::unique_ptr<EngineFacade> facade)
      : PluginLoader(std::move(options)), facade_(std::move(facade)) {}
  ~SubcommandPluginLoader() { shutdown(); }

 private:
  std::unique_ptr<EngineFacade> facade_;
};

}  // namespace

std::unique_ptr<PluginLoader> load_plugins(const DaemonConfig& config) {
  auto facade = std::make_unique<EngineFacade>(config.engine.served_model_name,
                                               config.engine.model_path, config.engine.max_model_len);
  PluginLoadOptions options;
  options.dirs = config.plugins.dirs;
  if (options.dirs.empty()) options.dirs = default_plugin_dirs();
  options.enable = config.plugins.enable;
  options.disable = config.plugins.disable;
  options.sections_json = config.plugins.sections_json;
  options.engine = facade->api();
  options.memory = std::make_shared<MemoryBudget>(config.plugins.device_memory_budget,
                                                  config.plugins.pinned_memory_budget);
  options.active_device = resolve_device(config.engine.device);  // as the daemon and generate resolve it
  // No HTTP server in a subcommand: API plugins' routes are accepted and unused.
  options.register_route = [](const aph_route&, const std::string&, aph_error*) { return APH_OK; };
  auto loader = std::make_unique<SubcommandPluginLoader>(std::move(options), std::move(facade));
  loader->load_all();
  return loader;
}

SubcommandSetup prepare_subcommand(const std::vector<std::string>& args) {
  SubcommandSetup setup;
  setup.config = parse_command_line(args, &setup.rest);
  finalize_config(setup.config);
  set_log_level(setup.config.log_level);
  setup.plugins = load_plugins(setup.config);
  return setup;
}

}  // namespace aph::server
