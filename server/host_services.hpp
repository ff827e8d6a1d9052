// The services table one plugin receives: a C face over the host's logger,
// its toml section, the memory budget, route registration and the engine.
// One PluginHostContext per plugin, so `host` tells the trampolines whose
// logger and config to use.
#pragma once

#include <spdlog/spdlog.h>

#include <functional>
#include <memory>
#include <string>

#include "aphrodite/api.h"
#include "server/memory_budget.hpp"

namespace aph::server {

using RouteRegistrar =
    std::function<aph_status(const aph_route& route, const std::string& plugin, aph_error* err)>;

struct PluginHostContext {
  std::string name;
  std::shared_ptr<spdlog::logger> log;  // "plugin.<name>"
  std::string config_json = "{}";
  std::shared_ptr<MemoryBudget> memory;
  RouteRegistrar register_route;
  int32_t active_device = APH_DEVICE_CPU;
  bool in_init = false;  // routes may be registered only from init
  int routes_registered = 0;
  aph_host_services services{};
};

// Fills ctx.services (pointing back at ctx). `engine` is null except for API
// plugins.
void bind_host_services(PluginHostContext& ctx, const aph_engine_api* engine);

}  // namespace aph::server
