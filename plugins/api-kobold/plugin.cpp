// Entry point of the KoboldAI dialect: negotiation and route registration
// (every route under /api/v1 also answers under /api/latest).
#include <memory>

#include "aphrodite_api/plugin_entry.hpp"
#include "aphrodite_api/route_binding.hpp"
#include "kobold_errors.hpp"
#include "kobold_plugin.hpp"

namespace aph::kobold {
namespace {

struct PluginState {
  std::unique_ptr<Plugin> plugin;
  std::unique_ptr<api::RouteTable<Plugin>> routes;
};

std::vector<api::RouteSpec<Plugin>> route_specs() {
  const int auth = APH_ROUTE_AUTH_LEGACY;
  std::vector<api::RouteSpec<Plugin>> versioned = {
      {"GET", "/model", 0, auth, handle_model},
      {"GET", "/info/version", 0, auth, handle_info_version},
      {"GET", "/config/max_length", 0, auth, handle_max_length},
      {"GET", "/config/max_context_length", 0, auth, handle_max_context_length},
      {"POST", "/generate", 0, auth, handle_generate},
  };
  std::vector<api::RouteSpec<Plugin>> specs = {
      {"GET", "/api/extra/version", 0, auth, handle_extra_version},
      {"GET", "/api/extra/true_max_context_length", 0, auth, handle_max_context_length},
      {"GET", "/api/extra/preloadstory", 0, auth, handle_preloadstory},
      {"GET", "/api/extra/perf", 0, auth, handle_perf},
      {"POST", "/api/extra/generate/stream", 0, auth, handle_generate_stream},
      {"POST", "/api/extra/generate/check", 0, auth, handle_check},
      {"GET", "/api/extra/generate/check", 0, auth, handle_check},
      {"POST", "/api/extra/abort", 0, auth, handle_abort},
      {"POST", "/api/extra/last_logprobs", 0, auth, handle_last_logprobs},
      {"POST", "/api/extra/tokencount", 0, auth, handle_tokencount},
      {"POST", "/api/extra/detokenize", 0, auth, handle_detokenize},
  };
  // Paths must outlive registration: keep them in static storage.
  static std::vector<std::string> paths;
  paths.clear();
  paths.reserve(versioned.size() * 2);
  for (const char* prefix : {"/api/v1", "/api/latest"}) {
    for (const auto& spec : versioned) paths.push_back(std::string(prefix) + spec.path);
  }
  size_t i = 0;
  for (int copy = 0; copy < 2; ++copy) {
    for (auto spec : versioned) {
      spec.path = paths[i++].c_str();
      specs.push_back(spec);
    }
  }
  return specs;
}

void write_error(const api::Responder& out, int status, const std::string& message) {
  send_error(out, status, message);
}

aph_status init(const aph_host_services* services, void** state, aph_error* err) {
  if (services == nullptr || services->engine == nullptr || services->register_route == nullptr) {
    return api::init_failure(err, APH_ERR_UNSUPPORTED, "api-kobold needs the engine API");
  }
  try {
    auto owned = std::make_unique<PluginState>();
    owned->plugin = std::make_unique<Plugin>(services);
    owned->routes = std::make_unique<api::RouteTable<Plugin>>(owned->plugin.get(), write_error);
    aph_status status = owned->routes->register_all(services, route_specs(), err);
    if (status != APH_OK) return status;
    *state = owned.release();
    return APH_OK;
  } catch (const std::exception& e) {
    return api::init_failure(err, APH_ERR_INTERNAL, std::string("api-kobold init: ") + e.what());
  }
}

void shutdown(void* state) { delete static_cast<PluginState*>(state); }

const aph_api_vtable kVtable = {sizeof(aph_api_vtable), "kobold"};

}  // namespace
}  // namespace aph::kobold

extern "C" APH_EXPORT aph_status aph_plugin_entry(const aph_version_offer* offer,
                                                  aph_plugin_info* out, aph_error* err) {
  aph_status status = aph::api::negotiate(offer, out, err, "api-kobold");
  if (status != APH_OK) return status;
  out->kind = APH_KIND_API;
  out->name = "api-kobold";
  out->version = "0.1.0";
  out->description = "KoboldAI dialect (koboldcpp API) for Kobold Lite and SillyTavern";
  out->vtable = &aph::kobold::kVtable;
  out->init = aph::kobold::init;
  out->shutdown = aph::kobold::shutdown;
  return APH_OK;
}
