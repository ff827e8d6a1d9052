#include "server/http/builtin_routes.hpp"

#include <boost/json.hpp>

#include "core/common/error.hpp"
#include "server/http/responder.hpp"

namespace aph::server {
namespace {

HostStatus& state_of(void* s) { return *static_cast<HostStatus*>(s); }

aph_status send_json(const aph_http_responder* r, int32_t status, const boost::json::value& v) {
  std::string body = boost::json::serialize(v);
  return r->send(r->conn, status, "application/json", body.data(), body.size());
}

void host_send_error(void*, int32_t status, const char* message, const aph_http_responder* r) {
  std::string body = host_error_json(status, message ? message : "");
  r->send(r->conn, status, "application/json", body.data(), body.size());
}

aph_status handle_health(void* s, const aph_http_request*, const aph_http_responder* r,
                         aph_error*) {
  switch (state_of(s).get_phase()) {
    case ModelPhase::Ready: return send_json(r, 200, {{"status", "ready"}});
    case ModelPhase::Loading: return send_json(r, 503, {{"status", "loading"}});
    case ModelPhase::NoModel: return send_json(r, 503, {{"status", "no model configured"}});
    case ModelPhase::Failed: return send_json(r, 503, {{"status", "model load failed"}});
    case ModelPhase::Stopping: return send_json(r, 503, {{"status", "shutting down"}});
  }
  return send_json(r, 503, {{"status", "unknown"}});
}

aph_status handle_version(void*, const aph_http_request*, const aph_http_responder* r, aph_error*) {
  return send_json(r, 200,
                   {{"version", APH_VERSION},
                    {"abi", std::to_string(APH_ABI_MAJOR) + "." + std::to_string(APH_ABI_MINOR)}});
}

aph_status handle_metrics(void* s, const aph_http_request*, const aph_http_responder* r,
                          aph_error* err) {
  HostStatus& st = state_of(s);
  return guard(err, [&] {
    engine::EngineStats stats;
    const engine::Engine* engine = st.engine.load();
    if (engine != nullptr) stats = engine->stats();
    HttpCounters::Snapshot http;
    if (st.counters != nullptr) http = st.counters->snapshot();
    std::string body = render_metrics(engine ? &stats : nullptr, st.model_name, http);
    r->send(r->conn, 200, "text/plain; version=0.0.4; charset=utf-8", body.data(), body.size());
  });
}

void add(RouteTable& routes, HostStatus& status, const char* path,
         aph_status (*handle)(void*, const aph_http_request*, const aph_http_responder*, aph_error*)) {
  aph_route route{};
  route.size = sizeof(route);
  route.method = "GET";
  route.path = path;
  route.prefix_match = 0;
  route.auth = APH_ROUTE_AUTH_REQUIRED;  // /health is exempted by the connection itself
  route.handler_state = &status;
  route.handle = handle;
  route.send_error = host_send_error;
  aph_error err{};
  err.size = sizeof(err);
  check(routes.add(route, "host", &err), err, std::string("route ") + path);
}

}  // namespace

std::string host_error_json(int32_t status, const std::string& message) {
  return boost::json::serialize(boost::json::object{
      {"error", {{"message", message}, {"type", error_type_for(status)}, {"code", status}}}});
}

void register_builtin_routes(RouteTable& routes, HostStatus& status) {
  add(routes, status, "/health", handle_health);
  add(routes, status, "/version", handle_version);
  add(routes, status, "/metrics", handle_metrics);
}

}  // namespace aph::server
