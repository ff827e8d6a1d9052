// One source, many misbehaving plugins: FAKE_MODE picks how this build of the
// plugin answers the host (wrong major, failing init, ...). Each is compiled
// into its own .so by tests/unit/loader/CMakeLists.txt. It includes
// plugin-api/ only, as a third-party plugin would.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "aphrodite/api.h"
#include "aphrodite/sampler.h"

#define MODE_GOOD 0
#define MODE_WRONG_MAJOR 1
#define MODE_REFUSES_OFFER 2
#define MODE_NEWER_MINOR 3
#define MODE_MINOR_OUTSIDE 4
#define MODE_MISSING_ENTRY 5
#define MODE_INIT_FAILS 6
#define MODE_INIT_THROWS 7
#define MODE_BAD_VTABLE 8
#define MODE_API_ROUTE_THEN_FAIL 9
#define MODE_GOOD_API 10
#define MODE_ENTRY_THROWS 11

#ifndef FAKE_MODE
#error FAKE_MODE must be defined
#endif
#ifndef FAKE_NAME
#error FAKE_NAME must be defined
#endif

namespace {

struct State {
  const aph_host_services* services;
  char config[256];
};

aph_status stage_row_create(void*, const char*, void** params, aph_error*) {
  *params = nullptr;
  return APH_OK;
}
void stage_row_destroy(void*, void*) {}
aph_status stage_apply(void*, const aph_sampler_batch*, aph_stream, aph_error*) { return APH_OK; }

const aph_sampler_field kFields[] = {
    {sizeof(aph_sampler_field), "fake_strength", APH_FIELD_FLOAT, 0.0, nullptr, 0.0, 1.0,
     "how much the fake stage does"},
};
// Built field by field from zeroed structs, so fields a later minor appends
// stay zero (absent) here.
aph_sampler_stage make_stage() {
  aph_sampler_stage s{};
  s.size = sizeof(aph_sampler_stage);
  s.name = "fake_stage_" FAKE_NAME;
  s.priority_aliases = "";
  s.kobold_id = -1;
  s.default_position = 1000;
  s.n_fields = 1;
  s.fields = kFields;
  s.field_aliases = "";
  s.row_create = stage_row_create;
  s.row_destroy = stage_row_destroy;
  s.apply = stage_apply;
  return s;
}
const aph_sampler_stage kStages[] = {make_stage()};

aph_sampler_vtable make_sampler_vtable() {
  aph_sampler_vtable v{};
#if FAKE_MODE == MODE_BAD_VTABLE
  v.size = 8;  // far smaller than any ABI 1.x aph_sampler_vtable
#else
  v.size = sizeof(aph_sampler_vtable);
#endif
  v.n_stages = 1;
  v.stages = kStages;
  return v;
}
const aph_sampler_vtable kSamplerVtable = make_sampler_vtable();

[[maybe_unused]] void fake_send_error(void*, int32_t status, const char* message, const aph_http_responder* r) {
  char body[1200];
  int n = std::snprintf(body, sizeof(body), "{\"fake_error\":\"%s\",\"status\":%d}", message, status);
  r->send(r->conn, status, "application/json", body, static_cast<uint64_t>(n));
}

// Echoes what the host handed over, so tests can see the request as a
// plugin does (config section, key, request id, remote address).
[[maybe_unused]] aph_status fake_echo(void* state, const aph_http_request* req, const aph_http_responder* r,
                     aph_error*) {
  const State* s = static_cast<const State*>(state);
  char body[1024];
  int n = std::snprintf(body, sizeof(body),
                        "{\"path\":\"%s\",\"query\":\"%s\",\"body_len\":%llu,\"config\":%s,"
                        "\"api_key\":\"%s\",\"request_id\":\"%s\",\"remote\":\"%s\"}",
                        req->path, req->query, static_cast<unsigned long long>(req->body_len),
                        s->config, req->api_key, req->request_id, req->remote_addr);
  r->add_header(r->conn, "X-Fake", "yes");
  return r->send(r->conn, 200, "application/json", body, static_cast<uint64_t>(n));
}

// SSE: "data: <i>\n\n" for i < n (n from the query, "n=5"), then [DONE].
[[maybe_unused]] aph_status fake_stream(void*, const aph_http_request* req, const aph_http_responder* r,
                       aph_error*) {
  int n = 3;
  if (std::strncmp(req->query, "n=", 2) == 0) n = std::atoi(req->query + 2);
  r->stream_begin(r->conn, 200, "text/event-stream");
  for (int i = 0; i < n; ++i) {
    char event[64];
    int len = std::snprintf(event, sizeof(event), "data: %d\n\n", i);
    if (r->stream_write(r->conn, event, static_cast<uint64_t>(len)) == APH_ERR_CANCELLED) {
      r->stream_end(r->conn);  // the client left: end quietly
      return APH_OK;
    }
  }
  r->stream_write(r->conn, "data: [DONE]\n\n", 14);
  return r->stream_end(r->conn);
}

[[maybe_unused]] aph_status fake_legacy(void*, const aph_http_request*, const aph_http_responder* r, aph_error*) {
  return r->send(r->conn, 200, "text/plain", "legacy ok", 9);
}

// Asks the engine through the host's facade; before a model is ready it must
// answer busy.
[[maybe_unused]] aph_status fake_engine(void* state, const aph_http_request*, const aph_http_responder* r,
                       aph_error*) {
  const State* s = static_cast<const State*>(state);
  const aph_engine_api* engine = s->services->engine;
  aph_error err{};
  err.size = sizeof(err);
  aph_request* request = nullptr;
  aph_status rc = engine->submit(engine->engine, "{\"prompt\":\"hi\"}", &request, &err);
  aph_model_desc desc{};
  desc.size = sizeof(desc);
  aph_error info_err{};
  engine->model_info(engine->engine, &desc, &info_err);
  if (request != nullptr) engine->release(request);
  char body[1400];
  int n = std::snprintf(body, sizeof(body),
                        "{\"submit_status\":%d,\"message\":\"%s\",\"ready\":%d,\"model\":\"%s\"}",
                        rc, err.message, desc.ready, desc.served_model_name);
  return r->send(r->conn, 200, "application/json", body, static_cast<uint64_t>(n));
}

// Returns an error without answering: the host must answer 500 via send_error.
[[maybe_unused]] aph_status fake_fail(void*, const aph_http_request*, const aph_http_responder*, aph_error* err) {
  err->code = APH_ERR_INTERNAL;
  std::snprintf(err->message, sizeof(err->message), "fake handler failure");
  return APH_ERR_INTERNAL;
}

[[maybe_unused]] aph_status register_one(const aph_host_services* services, State* s, const char* method,
                        const char* path, int32_t prefix, int32_t auth,
                        aph_status (*handle)(void*, const aph_http_request*,
                                             const aph_http_responder*, aph_error*),
                        aph_error* err) {
  aph_route route{};
  route.size = sizeof(route);
  route.method = method;
  route.path = path;
  route.prefix_match = prefix;
  route.auth = auth;
  route.handler_state = s;
  route.handle = handle;
  route.send_error = fake_send_error;
  return services->register_route(services->host, &route, err);
}

const aph_api_vtable kApiVtable = {sizeof(aph_api_vtable), "fake"};

[[maybe_unused]] aph_status fake_init(const aph_host_services* services, void** state, aph_error* err) {
#if FAKE_MODE == MODE_INIT_FAILS
  (void)services;
  (void)state;
  err->code = APH_ERR_INTERNAL;
  std::snprintf(err->message, sizeof(err->message), "fake init failure on purpose");
  return APH_ERR_INTERNAL;
#elif FAKE_MODE == MODE_INIT_THROWS
  (void)services;
  (void)state;
  (void)err;
  throw std::runtime_error("fake init threw on purpose");
#else
  State* s = new State{services, {0}};
  std::snprintf(s->config, sizeof(s->config), "%s", services->config_json(services->host));
  services->log(services->host, APH_LOG_INFO, "fake plugin " FAKE_NAME " initialised");
#if FAKE_MODE == MODE_API_ROUTE_THEN_FAIL || FAKE_MODE == MODE_GOOD_API
  aph_status rc = register_one(services, s, "POST", "/fake/" FAKE_NAME, 0,
                               APH_ROUTE_AUTH_REQUIRED, fake_echo, err);
#if FAKE_MODE == MODE_GOOD_API
  if (rc == APH_OK) {
    rc = register_one(services, s, "GET", "/fake/" FAKE_NAME "/stream", 0, APH_ROUTE_AUTH_REQUIRED,
                      fake_stream, err);
  }
  if (rc == APH_OK) {
    rc = register_one(services, s, "GET", "/fake/" FAKE_NAME "/legacy", 0, APH_ROUTE_AUTH_LEGACY,
                      fake_legacy, err);
  }
  if (rc == APH_OK) {
    rc = register_one(services, s, "GET", "/fake/" FAKE_NAME "/items/", 1, APH_ROUTE_AUTH_REQUIRED,
                      fake_echo, err);
  }
  if (rc == APH_OK) {
    rc = register_one(services, s, "GET", "/fake/" FAKE_NAME "/engine", 0, APH_ROUTE_AUTH_REQUIRED,
                      fake_engine, err);
  }
  if (rc == APH_OK) {
    rc = register_one(services, s, "GET", "/fake/" FAKE_NAME "/fail", 0, APH_ROUTE_AUTH_REQUIRED,
                      fake_fail, err);
  }
#endif
  if (rc != APH_OK) {
    delete s;
    return rc;
  }
#endif
#if FAKE_MODE == MODE_API_ROUTE_THEN_FAIL
  delete s;
  err->code = APH_ERR_INTERNAL;
  std::snprintf(err->message, sizeof(err->message), "failed after registering a route");
  return APH_ERR_INTERNAL;
#else
  *state = s;
  return APH_OK;
#endif
#endif
}

[[maybe_unused]] void fake_shutdown(void* state) { delete static_cast<State*>(state); }

}  // namespace

#if FAKE_MODE == MODE_MISSING_ENTRY
// Exports something, just not the entry symbol.
extern "C" APH_EXPORT int aph_plugin_entry_misspelled(void) { return 0; }
#else
extern "C" APH_EXPORT aph_status aph_plugin_entry(const aph_version_offer* offer,
                                                  aph_plugin_info* out, aph_error* err) {
#if FAKE_MODE == MODE_ENTRY_THROWS
  (void)offer;
  (void)out;
  (void)err;
  throw std::runtime_error("fake entry threw on purpose");
#endif
  uint32_t minor = 0;
#if FAKE_MODE == MODE_REFUSES_OFFER
  // Speaks only 1.5 and later: nothing inside an offer of 1.0.
  if (offer->max_minor < 5) {
    err->code = APH_ERR_VERSION;
    std::snprintf(err->message, sizeof(err->message), "needs ABI 1.5 or newer");
    return APH_ERR_VERSION;
  }
  minor = 5;
#elif FAKE_MODE == MODE_NEWER_MINOR
  // Speaks 1.0 .. 1.7 and answers the newest the host offers.
  if (offer->major != 1) return APH_ERR_VERSION;
  minor = offer->max_minor < 7 ? offer->max_minor : 7;
#elif FAKE_MODE == MODE_MINOR_OUTSIDE
  minor = 9;  // ignores the offer
#else
  if (offer->major != APH_ABI_MAJOR || offer->min_minor > APH_ABI_MINOR) return APH_ERR_VERSION;
  minor = std::min<uint32_t>(offer->max_minor, APH_ABI_MINOR);
#endif
  std::memset(out, 0, sizeof(*out));
  out->size = sizeof(*out);
#if FAKE_MODE == MODE_WRONG_MAJOR
  out->abi_major = 2;  // answers a major the host never offered
#else
  out->abi_major = APH_ABI_MAJOR;
#endif
  out->abi_minor = minor;
#if FAKE_MODE == MODE_API_ROUTE_THEN_FAIL || FAKE_MODE == MODE_GOOD_API
  out->kind = APH_KIND_API;
  out->vtable = &kApiVtable;
#else
  out->kind = APH_KIND_SAMPLER;
  out->vtable = &kSamplerVtable;
#endif
  out->name = FAKE_NAME;
  out->version = "9.9.9";
  out->description = "a fake plugin for the loader conformance tests";
  out->init = fake_init;
  out->shutdown = fake_shutdown;
  return APH_OK;
}
#endif
