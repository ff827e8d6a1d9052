// Entry point of the OpenAI dialect: negotiation, init (route registration)
// and the C shims that turn exceptions into the OpenAI error shape.
#include <exception>
#include <memory>

#include "aphrodite_api/plugin_entry.hpp"
#include "openai_errors.hpp"
#include "openai_plugin.hpp"

namespace aph::openai {
namespace {

using Handler = void (*)(Plugin&, const aph_http_request*, const api::Responder&);

struct RouteBinding {
  Plugin* plugin;
  Handler handler;
};

aph_status handle_route(void* state, const aph_http_request* request,
                        const aph_http_responder* responder, aph_error* err) {
  auto* binding = static_cast<RouteBinding*>(state);
  api::Responder out(responder);
  try {
    binding->handler(*binding->plugin, request, out);
  } catch (const api::HttpError& e) {
    if (!out.answered()) send_error(out, e.status(), e.what(), e.param());
  } catch (const std::exception& e) {
    binding->plugin->log(APH_LOG_ERROR, std::string("request failed: ") + e.what());
    if (!out.answered()) send_error(out, 500, std::string("internal error: ") + e.what());
  } catch (...) {
    if (!out.answered()) send_error(out, 500, "internal error");
  }
  if (out.streaming()) out.end_stream();
  return APH_OK;
}

void route_error(void* state, int32_t status, const char* message,
                 const aph_http_responder* responder) {
  send_error(api::Responder(responder), status, message ? message : "");
}

struct PluginState {
  std::unique_ptr<Plugin> plugin;
  std::vector<std::unique_ptr<RouteBinding>> bindings;
};

aph_status init(const aph_host_services* services, void** state, aph_error* err) {
  if (services == nullptr || services->engine == nullptr || services->register_route == nullptr) {
    if (err) std::snprintf(err->message, sizeof(err->message), "api-openai needs the engine API");
    return APH_ERR_UNSUPPORTED;
  }
  try {
    auto owned = std::make_unique<PluginState>();
    owned->plugin = std::make_unique<Plugin>(services);
    struct Spec {
      const char* method;
      const char* path;
      int prefix;
      Handler handler;
    };
    const Spec specs[] = {
        {"GET", "/v1/models", 0, handle_models},
        {"GET", "/v1/models/", 1, handle_model_by_id},
        {"POST", "/v1/tokenize", 0, handle_tokenize},
        {"POST", "/v1/detokenize", 0, handle_detokenize},
        {"POST", "/v1/completions", 0, handle_completions},
        {"POST", "/v1/chat/completions", 0, handle_chat},
    };
    for (const Spec& spec : specs) {
      owned->bindings.push_back(std::make_unique<RouteBinding>(RouteBinding{owned->plugin.get(), spec.handler}));
      aph_route route{};
      route.size = sizeof(route);
      route.method = spec.method;
      route.path = spec.path;
      route.prefix_match = spec.prefix;
      route.auth = APH_ROUTE_AUTH_REQUIRED;
      route.handler_state = owned->bindings.back().get();
      route.handle = handle_route;
      route.send_error = route_error;
      aph_status status = services->register_route(services->host, &route, err);
      if (status != APH_OK) return status;
    }
    *state = owned.release();
    return APH_OK;
  } catch (const std::exception& e) {
    if (err) std::snprintf(err->message, sizeof(err->message), "api-openai init: %s", e.what());
    return APH_ERR_INTERNAL;
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
  out->description = "OpenAI HTTP dialect: /v1/completions, /v1/chat/completions, /v1/models, /v1/tokenize";
  out->vtable = &aph::openai::kVtable;
  out->init = aph::openai::init;
  out->shutdown = aph::openai::shutdown;
  return APH_OK;
}
