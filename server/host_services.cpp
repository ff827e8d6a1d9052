#include "server/host_services.hpp"

#include <cstring>

#include "core/common/error.hpp"
#include "core/common/thread_pool.hpp"

namespace aph::server {
namespace {

PluginHostContext& ctx_of(void* host) { return *static_cast<PluginHostContext*>(host); }

void host_log(void* host, int32_t level, const char* message) {
  // A logging failure must never reach the plugin as an exception.
  try {
    auto& ctx = ctx_of(host);
    spdlog::level::level_enum lvl = spdlog::level::info;
    switch (level) {
      case APH_LOG_TRACE: lvl = spdlog::level::trace; break;
      case APH_LOG_DEBUG: lvl = spdlog::level::debug; break;
      case APH_LOG_INFO: lvl = spdlog::level::info; break;
      case APH_LOG_WARN: lvl = spdlog::level::warn; break;
      default: lvl = spdlog::level::err; break;
    }
    ctx.log->log(lvl, "{}", message ? message : "");
  } catch (...) {
  }
}

const char* host_config_json(void* host) { return ctx_of(host).config_json.c_str(); }

void* host_device_alloc(void* host, int32_t device, uint64_t bytes, aph_error* err) {
  try {
    return ctx_of(host).memory->device_alloc(device, bytes, err);
  } catch (...) {
    write_error(err, APH_ERR_INTERNAL, "device_alloc failed");
    return nullptr;
  }
}

void host_device_free(void* host, int32_t device, void* ptr) {
  try {
    ctx_of(host).memory->device_free(device, ptr);
  } catch (...) {
  }
}

void* host_pinned_alloc(void* host, uint64_t bytes, aph_error* err) {
  try {
    return ctx_of(host).memory->pinned_alloc(bytes, err);
  } catch (...) {
    write_error(err, APH_ERR_INTERNAL, "pinned_alloc failed");
    return nullptr;
  }
}

void host_pinned_free(void* host, void* ptr) {
  try {
    ctx_of(host).memory->pinned_free(ptr);
  } catch (...) {
  }
}

aph_status host_register_route(void* host, const aph_route* route, aph_error* err) {
  return guard(err, [&] {
    auto& ctx = ctx_of(host);
    if (!ctx.in_init) throw Error(APH_ERR_UNSUPPORTED, "register_route: only allowed from init");
    if (route == nullptr) throw invalid_argument("register_route: route is NULL");
    if (route->size < offsetof(aph_route, send_error) + sizeof(route->send_error)) {
      throw invalid_argument("register_route: route.size " + std::to_string(route->size) +
                             " is smaller than ABI 1.0's aph_route");
    }
    if (!ctx.register_route) {
      throw Error(APH_ERR_UNSUPPORTED, "register_route: this host serves no HTTP routes");
    }
    aph_error inner{};
    inner.size = sizeof(inner);
    aph_status rc = ctx.register_route(*route, ctx.name, &inner);
    if (rc != APH_OK) throw Error(rc, inner.message);
    ++ctx.routes_registered;
  });
}

int32_t host_active_device(void* host) { return ctx_of(host).active_device; }

void host_parallel_for(void* host, uint64_t n, uint64_t min_chunk,
                       void (*fn)(void* ctx, uint64_t begin, uint64_t end), void* ctx) {
  if (fn == nullptr || n == 0) return;
  try {
    ThreadPool::shared().parallel_for(static_cast<int64_t>(n), static_cast<int64_t>(min_chunk),
                                      [&](int64_t begin, int64_t end) {
                                        fn(ctx, static_cast<uint64_t>(begin), static_cast<uint64_t>(end));
                                      });
  } catch (...) {
    // The contract says fn does not throw; if the pool itself fails, do the
    // work on this thread rather than lose it.
    fn(ctx, 0, n);
  }
}

}  // namespace

void bind_host_services(PluginHostContext& ctx, const aph_engine_api* engine) {
  aph_host_services& s = ctx.services;
  std::memset(&s, 0, sizeof(s));
  s.size = sizeof(aph_host_services);
  s.host = &ctx;
  s.log = host_log;
  s.config_json = host_config_json;
  s.device_alloc = host_device_alloc;
  s.device_free = host_device_free;
  s.pinned_alloc = host_pinned_alloc;
  s.pinned_free = host_pinned_free;
  s.register_route = host_register_route;
  s.engine = engine;
  s.active_device = host_active_device;
  s.parallel_for = host_parallel_for;
}

}  // namespace aph::server
