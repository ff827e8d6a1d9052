// Loads sampler plugins the way the server does (dlopen, two-way version
// negotiation, init with a host services table) and exposes them as a
// PluginRegistry for the chain. Host memory stands in for device memory.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/plugins/registry.hpp"

namespace aph::test {

class LoadedPlugins {
 public:
  LoadedPlugins();
  ~LoadedPlugins();
  LoadedPlugins(const LoadedPlugins&) = delete;
  LoadedPlugins& operator=(const LoadedPlugins&) = delete;

  // Device memory for plugins (GPU tests pass cudaMalloc/cudaFree); host
  // malloc otherwise. Set before load().
  using AllocFn = void* (*)(int32_t device, uint64_t bytes);
  using FreeFn = void (*)(int32_t device, void* ptr);
  // pinned_alloc / pinned_free use the same functions with APH_DEVICE_CPU.
  void set_device_memory(AllocFn alloc, FreeFn free, int32_t active_device);

  // Loads `path`; throws std::runtime_error with the reason on failure.
  void load(const std::string& path, const std::string& config_json = "{}");
  const PluginRegistry& registry() const { return registry_; }

 private:
  struct Library;
  std::vector<std::unique_ptr<Library>> libraries_;
  AllocFn alloc_ = nullptr;
  FreeFn free_ = nullptr;
  int32_t active_device_ = APH_DEVICE_CPU;
  PluginRegistry registry_;
};

// $APH_PLUGIN_DIR/<file>, or build/plugins/<file> when unset.
std::string plugin_path(const std::string& file);

}  // namespace aph::test
