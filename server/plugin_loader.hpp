// Plugin discovery and loading: every *.so in the configured directories (no
// library search path is ever consulted), two-way ABI negotiation, validation
// of the vtable, then init with a per-plugin host services table. A plugin
// that fails any step is skipped with one log line and never half-loaded.
// Plugins are unloaded only by shutdown() (or the destructor).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "aphrodite/api.h"
#include "core/plugins/registry.hpp"
#include "server/memory_budget.hpp"

namespace aph::server {

struct LoadedPluginInfo {
  std::string name;
  std::string version;
  std::string description;
  std::string file;
  int32_t kind = 0;  // aph_plugin_kind
  uint32_t abi_major = 0;
  uint32_t abi_minor = 0;
};

struct SkippedPlugin {
  std::string file;
  std::string reason;
};

struct PluginLoadOptions {
  std::vector<std::string> dirs;
  std::vector<std::string> enable;   // plugin names or file stems; empty = all
  std::vector<std::string> disable;  // plugin names or file stems
  std::map<std::string, std::string> sections_json;  // plugin name -> JSON object text
  // Handed to API plugins as services->engine; must outlive the loader.
  const aph_engine_api* engine = nullptr;
  // Receives register_route calls from API plugins' init (start-up thread).
  // Unset: routes are rejected with APH_ERR_UNSUPPORTED.
  std::function<aph_status(const aph_route& route, const std::string& plugin, aph_error* err)>
      register_route;
  // Removes the routes a plugin registered when its init fails afterwards.
  std::function<void(const std::string& plugin)> unregister_routes;
  std::shared_ptr<MemoryBudget> memory;  // null = an unlimited budget of its own
  int32_t active_device = APH_DEVICE_CPU;
  // The range of minors offered; tests narrow it to exercise negotiation.
  uint32_t offer_min_minor = 0;
  uint32_t offer_max_minor = APH_ABI_MINOR;
};

class PluginLoader {
 public:
  explicit PluginLoader(PluginLoadOptions options);
  virtual ~PluginLoader();  // shutdown()
  PluginLoader(const PluginLoader&) = delete;
  PluginLoader& operator=(const PluginLoader&) = delete;

  // Scans every directory (sorted by file name) and loads what it can.
  // Never throws for a bad plugin; a missing directory is logged.
  void load_all();
  // Loads one file; returns false (and records/logs the reason) if skipped.
  bool load_file(const std::string& path);

  // The quant, sampler and LoRA plugins, for the core.
  const PluginRegistry& registry() const { return registry_; }
  const std::vector<LoadedPluginInfo>& loaded() const { return loaded_; }
  const std::vector<SkippedPlugin>& skipped() const { return skipped_; }

  // Calls every plugin's shutdown (reverse load order), then unloads the
  // libraries. Everything created through a plugin must be destroyed first.
  void shutdown();

  struct Plugin;  // one loaded library (plugin_loader.cpp)

 private:
  void skip(const std::string& file, const std::string& reason);
  bool allowed(const std::string& name, const std::string& stem) const;

  PluginLoadOptions options_;
  std::vector<std::unique_ptr<Plugin>> plugins_;
  PluginRegistry registry_;
  std::vector<LoadedPluginInfo> loaded_;
  std::vector<SkippedPlugin> skipped_;
};

// "quant", "sampler", "lora", "api" or "unknown".
const char* kind_name(int32_t kind);

}  // namespace aph::server
