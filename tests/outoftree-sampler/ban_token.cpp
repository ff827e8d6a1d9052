// An example third-party sampler stage: "ban_token" removes one token id,
// chosen in the deployment's toml ([plugins.ban_token] token = 7), from the
// rows of requests that set the field it declares ("ban_token": true).
//
// It includes plugin-api/ only. The host hands row_create a normalized JSON
// object (no whitespace, every declared field present), so a plain scan for
// the one key this stage reads is enough here; a real plugin would bring its
// own JSON parser.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

#include "aphrodite/sampler.h"

namespace {

struct State {
  int32_t token = -1;  // from the toml; -1 = not configured (the stage does nothing)
};

struct Params {
  int32_t token;
};

void fail(aph_error* err, aph_status code, const char* message) {
  if (err == nullptr) return;
  err->size = sizeof(aph_error);
  err->code = code;
  std::strncpy(err->message, message, APH_ERROR_MESSAGE_CAPACITY - 1);
  err->message[APH_ERROR_MESSAGE_CAPACITY - 1] = '\0';
}

// The value after "key": in a compact JSON object, or nullptr.
const char* find_value(const char* json, const char* key) {
  const size_t n = std::strlen(key);
  for (const char* p = std::strstr(json, key); p != nullptr; p = std::strstr(p + 1, key)) {
    if (p > json && p[-1] == '"' && p[n] == '"') {
      const char* v = p + n + 1;
      while (*v == ' ' || *v == ':') ++v;
      return v;
    }
  }
  return nullptr;
}

const aph_sampler_field kFields[] = {
    {sizeof(aph_sampler_field), "ban_token", APH_FIELD_BOOL, 0.0, nullptr, 0.0, 1.0,
     "ban the token id configured in [plugins.ban_token]"},
};

aph_status row_create(void* state, const char* request_json, void** params, aph_error* err) {
  *params = nullptr;
  const auto* st = static_cast<const State*>(state);
  const char* v = find_value(request_json, "ban_token");
  if (v == nullptr) {
    fail(err, APH_ERR_INVALID_ARGUMENT, "ban_token: missing from the request object");
    return APH_ERR_INVALID_ARGUMENT;
  }
  if (std::strncmp(v, "true", 4) != 0 || st->token < 0) return APH_OK;
  auto* p = new (std::nothrow) Params{st->token};
  if (p == nullptr) {
    fail(err, APH_ERR_OUT_OF_MEMORY, "ban_token: out of memory");
    return APH_ERR_OUT_OF_MEMORY;
  }
  *params = p;
  return APH_OK;
}

void row_destroy(void*, void* params) { delete static_cast<Params*>(params); }

aph_status apply(void*, const aph_sampler_batch* batch, aph_stream, aph_error* err) {
  if (batch->logits.device != APH_DEVICE_CPU) {
    // A CPU-only stage: it says so instead of touching device memory.
    fail(err, APH_ERR_UNSUPPORTED, "ban_token: this example stage runs on CPU logits only");
    return APH_ERR_UNSUPPORTED;
  }
  auto* logits = static_cast<float*>(batch->logits.data);
  const int64_t vocab = batch->logits.shape[1];
  for (uint32_t i = 0; i < batch->n_rows; ++i) {
    const auto* p = static_cast<const Params*>(batch->rows[i].params);
    if (p != nullptr && p->token < vocab) logits[i * batch->logits.strides[0] + p->token] = -INFINITY;
  }
  return APH_OK;
}

const aph_sampler_stage kStages[] = {{
    sizeof(aph_sampler_stage), "ban_token", "", -1, 30, APH_SAMPLER_FIXED_POSITION, 1, kFields, "", &row_create,
    &row_destroy, &apply,
}};

const aph_sampler_vtable kVtable = {sizeof(aph_sampler_vtable), 1, kStages, nullptr};

aph_status init(const aph_host_services* services, void** state, aph_error* err) {
  auto* st = new (std::nothrow) State;
  if (st == nullptr) {
    fail(err, APH_ERR_OUT_OF_MEMORY, "ban_token: out of memory");
    return APH_ERR_OUT_OF_MEMORY;
  }
  const char* config = services->config_json(services->host);
  if (const char* v = find_value(config, "token")) {
    char* end = nullptr;
    const long id = std::strtol(v, &end, 10);
    if (end == v || id < 0 || id > INT32_MAX) {
      delete st;
      fail(err, APH_ERR_INVALID_ARGUMENT, "[plugins.ban_token] token: expected a token id");
      return APH_ERR_INVALID_ARGUMENT;
    }
    st->token = static_cast<int32_t>(id);
  }
  *state = st;
  return APH_OK;
}

void shutdown(void* state) { delete static_cast<State*>(state); }

}  // namespace

extern "C" APH_EXPORT aph_status aph_plugin_entry(const aph_version_offer* offer, aph_plugin_info* out,
                                                  aph_error* err) {
  if (offer == nullptr || out == nullptr) {
    fail(err, APH_ERR_INVALID_ARGUMENT, "aph_plugin_entry: NULL argument");
    return APH_ERR_INVALID_ARGUMENT;
  }
  // Written against ABI 1.0; any host offering 1.0 can load it.
  if (offer->major != 1 || offer->min_minor > 0) {
    fail(err, APH_ERR_VERSION, "ban_token speaks ABI 1.0");
    return APH_ERR_VERSION;
  }
  aph_plugin_info info{};
  info.size = sizeof(aph_plugin_info);
  info.abi_major = 1;
  info.abi_minor = 0;
  info.kind = APH_KIND_SAMPLER;
  info.name = "ban_token";
  info.version = "1.0.0";
  info.description = "example out-of-tree stage: bans the configured token when a request asks";
  info.vtable = &kVtable;
  info.init = &init;
  info.shutdown = &shutdown;
  *out = info;
  return APH_OK;
}
