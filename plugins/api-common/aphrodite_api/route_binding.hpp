// Registers a dialect's routes and wraps each handler in the C shim that turns
// exceptions into the dialect's own error shape (nothing crosses the ABI).
#pragma once

#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "aphrodite/api.h"
#include "aphrodite_api/http_error.hpp"
#include "aphrodite_api/responder.hpp"

namespace aph::api {

template <typename Plugin>
struct RouteSpec {
  const char* method;
  const char* path;
  int prefix_match;
  int auth;  // aph_route_auth
  void (*handler)(Plugin&, const aph_http_request*, const Responder&);
};

template <typename Plugin>
class RouteTable {
 public:
  using ErrorWriter = void (*)(const Responder&, int status, const std::string& message);

  RouteTable(Plugin* plugin, ErrorWriter write_error) : plugin_(plugin), write_error_(write_error) {}

  aph_status register_all(const aph_host_services* services,
                          const std::vector<RouteSpec<Plugin>>& specs, aph_error* err) {
    for (const auto& spec : specs) {
      bindings_.push_back(std::make_unique<Binding>(Binding{this, spec.handler}));
      aph_route route{};
      route.size = sizeof(route);
      route.method = spec.method;
      route.path = spec.path;
      route.prefix_match = spec.prefix_match;
      route.auth = spec.auth;
      route.handler_state = bindings_.back().get();
      route.handle = &RouteTable::handle;
      route.send_error = &RouteTable::route_error;
      aph_status status = services->register_route(services->host, &route, err);
      if (status != APH_OK) return status;
    }
    return APH_OK;
  }

 private:
  struct Binding {
    RouteTable* table;
    void (*handler)(Plugin&, const aph_http_request*, const Responder&);
  };

  static aph_status handle(void* state, const aph_http_request* request,
                           const aph_http_responder* responder, aph_error*) {
    auto* binding = static_cast<Binding*>(state);
    RouteTable* table = binding->table;
    Responder out(responder);
    try {
      binding->handler(*table->plugin_, request, out);
    } catch (const HttpError& e) {
      if (!out.answered()) table->write_error_(out, e.status(), e.what());
    } catch (const std::exception& e) {
      table->plugin_->log(APH_LOG_ERROR, std::string("request failed: ") + e.what());
      if (!out.answered()) table->write_error_(out, 500, std::string("internal error: ") + e.what());
    } catch (...) {
      if (!out.answered()) table->write_error_(out, 500, "internal error");
    }
    if (out.streaming()) out.end_stream();
    return APH_OK;
  }

  static void route_error(void* state, int32_t status, const char* message,
                          const aph_http_responder* responder) {
    auto* binding = static_cast<Binding*>(state);
    binding->table->write_error_(Responder(responder), status, message ? message : "");
  }

  Plugin* plugin_;
  ErrorWriter write_error_;
  std::vector<std::unique_ptr<Binding>> bindings_;
};

inline aph_status init_failure(aph_error* err, aph_status status, const std::string& message) {
  if (err != nullptr) {
    err->code = status;
    std::snprintf(err->message, sizeof(err->message), "%s", message.c_str());
  }
  return status;
}

}  // namespace aph::api
