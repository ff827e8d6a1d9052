#include "tests/unit/samplers/plugin_fixture.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "aphrodite/sampler.h"

namespace aph::test {

namespace {
void host_log(void*, int32_t level, const char* message) {
  if (level >= APH_LOG_WARN) std::fprintf(stderr, "[plugin] %s\n", message);
}
const char* host_config(void* host);
void* pinned_alloc(void* host, uint64_t bytes, aph_error*);
void pinned_free(void* host, void* p);
struct HostContext {
  std::string config;
  LoadedPlugins::AllocFn alloc = nullptr;
  LoadedPlugins::FreeFn free = nullptr;
  int32_t device = APH_DEVICE_CPU;
};
void* host_alloc(void* host, int32_t device, uint64_t bytes, aph_error*) {
  auto* h = static_cast<HostContext*>(host);
  if (device != APH_DEVICE_CPU && h->alloc != nullptr) return h->alloc(device, bytes);
  return std::malloc(bytes);
}
void host_free(void* host, int32_t device, void* p) {
  auto* h = static_cast<HostContext*>(host);
  if (device != APH_DEVICE_CPU && h->free != nullptr) return h->free(device, p);
  std::free(p);
}
int32_t active_device(void* host);
const char* host_config(void* host) { return static_cast<HostContext*>(host)->config.c_str(); }
int32_t active_device(void* host) { return static_cast<HostContext*>(host)->device; }
void* pinned_alloc(void* host, uint64_t bytes, aph_error*) {
  auto* h = static_cast<HostContext*>(host);
  return h->alloc != nullptr ? h->alloc(APH_DEVICE_CPU, bytes) : std::malloc(bytes);
}
void pinned_free(void* host, void* p) {
  auto* h = static_cast<HostContext*>(host);
  if (h->free != nullptr) h->free(APH_DEVICE_CPU, p);
  else std::free(p);
}
}  // namespace

struct LoadedPlugins::Library {
  void* handle = nullptr;
  aph_plugin_info info{};
  void* state = nullptr;
  HostContext context;
  aph_host_services services{};
  ~Library() {
    if (state != nullptr && info.shutdown != nullptr) info.shutdown(state);
    if (handle != nullptr) dlclose(handle);
  }
};

LoadedPlugins::LoadedPlugins() = default;

LoadedPlugins::~LoadedPlugins() {
  registry_ = PluginRegistry{};
  while (!libraries_.empty()) libraries_.pop_back();  // reverse load order
}

void LoadedPlugins::load(const std::string& path, const std::string& config_json) {
  auto lib = std::make_unique<Library>();
  lib->handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib->handle == nullptr) throw std::runtime_error("dlopen " + path + ": " + dlerror());
  auto entry = reinterpret_cast<aph_plugin_entry_fn>(dlsym(lib->handle, APH_PLUGIN_ENTRY_SYMBOL));
  if (entry == nullptr) throw std::runtime_error(path + ": no " APH_PLUGIN_ENTRY_SYMBOL);
  aph_version_offer offer{sizeof(aph_version_offer), APH_ABI_MAJOR, 0, APH_ABI_MINOR};
  aph_error err{};
  if (entry(&offer, &lib->info, &err) != APH_OK) throw std::runtime_error(path + ": " + err.message);
  if (lib->info.kind != APH_KIND_SAMPLER) throw std::runtime_error(path + ": not a sampler plugin");
  lib->context = HostContext{config_json, alloc_, free_, active_device_};
  lib->services = aph_host_services{sizeof(aph_host_services), &lib->context, &host_log, &host_config, &host_alloc,
                                    &host_free, &pinned_alloc, &pinned_free, nullptr, nullptr, &active_device, nullptr};
  if (lib->info.init(&lib->services, &lib->state, &err) != APH_OK) {
    throw std::runtime_error(path + ": init: " + err.message);
  }
  registry_.samplers.push_back(
      {lib->info.name, static_cast<const aph_sampler_vtable*>(lib->info.vtable), lib->state});
  libraries_.push_back(std::move(lib));
}

void LoadedPlugins::set_device_memory(AllocFn alloc, FreeFn free, int32_t active_device) {
  alloc_ = alloc;
  free_ = free;
  active_device_ = active_device;
}

std::string plugin_path(const std::string& file) {
  const char* dir = std::getenv("APH_PLUGIN_DIR");
  return std::string(dir != nullptr ? dir : "build/plugins") + "/" + file;
}

}  // namespace aph::test
