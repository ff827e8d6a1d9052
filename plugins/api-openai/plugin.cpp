// Entry point of the OpenAI dialect: negotiation and route registration.
#include <memory>

#include "aphrodite_api/plugin_entry.hpp"
#include "aphrodite_api/route_binding.hpp"
#include "openai_errors.hpp"
#include "openai_plugin.hpp"

namespace aph::openai {
namespace {

struct PluginState {
  std::unique_ptr<Plugin> plugin;
  std::unique_ptr<api::RouteTable<Plugin>> routes;
};

void write_error(const api::Responder& out, int status, const std::string& message) {
  send_error(out, status, message);
}

aph_status init(const aph_host_services* services, void** state, aph_error* err) {
  if (services == nullptr || services->engine == nullptr || services->register_route == nullptr) {
    return api::init_failure(err, APH_ERR_UNSUPPORTED, "api-openai needs the engine API");
  }
  try {
    auto owned = std::make_unique<PluginState>();
    owned->plugin = std::make_unique<Plugin>(services);
    owned->routes = std::make_unique<api::RouteTable<Plugin>>(owned->plugin.get(), write_error);
    const int auth = APH_ROUTE_AUTH_REQUIRED;
    aph_status status = owned->routes->register_all(
        services,
        {
            {"GET", "/v1/models", 0, auth, handle_models},
            {"GET", "/v1/models/", 1, auth, handle_model_by_id},
            {"POST", "/v1/tokenize", 0, auth, handle_tokenize},
            {"POST", "/v1/detokenize", 0, auth, handle_detokenize},
            {"POST", "/v1/completions", 0, auth, handle_completions},
            {"POST", "/v1/chat/completions", 0, auth, handle_chat},
        },
        err);
    if (status != APH_OK) return status;
    *state = owned.release();
    return APH_OK;
  } catch (const std::exception& e) {
    return api::init_failure(err, APH_ERR_INTERNAL, std::string("api-openai init: ") + e.what());
  }
}

void shutdown(void* state) { delete static_cast<PluginState*>(state); }

const aph_api_vtable kVtable = {sizeof(aph_api_vtable), "openai"};

}  // namespace
}  // namespace aph::openai

extern "C" APH_EXPORT aph_status aph_plugin_entry(const aph_version_offer* offer,
                                                  aph_plugin_info* out, aph_error* err) {
  aph_status status = aph::api::negotiate(offer, out, err, "api-openai");
  if (status != APH_OK) return status;
  out->kind = APH_KIND_API;
  out->name = "api-openai";
  out->version = "0.1.0";
  out->description = "OpenAI dialect: /v1/completions, /v1/chat/completions, /v1/models, /v1/tokenize";
  out->vtable = &aph::openai::kVtable;
  out->init = aph::openai::init;
  out->shutdown = aph::openai::shutdown;
  return APH_OK;
}
