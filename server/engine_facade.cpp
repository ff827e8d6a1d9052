#include "server/engine_facade.hpp"

#include <cstring>
#include <new>

#include "core/common/error.hpp"

namespace aph::server {
namespace {

// What a facade request hands the plugin: the engine's own request plus the
// table that made it, so next_event/cancel/release need no global lookup and
// keep working while the facade detaches during shutdown.
struct FacadeRequest {
  const aph_engine_api* engine;
  aph_request* inner;
};

FacadeRequest* unwrap(aph_request* request) { return reinterpret_cast<FacadeRequest*>(request); }

}  // namespace

EngineFacade::EngineFacade(std::string served_model_name, std::string model_path,
                           int64_t max_model_len)
    : served_model_name_(std::move(served_model_name)),
      model_path_(std::move(model_path)),
      max_model_len_(max_model_len) {
  table_.size = sizeof(aph_engine_api);
  table_.engine = this;
  table_.model_info = &EngineFacade::model_info;
  table_.tokenize = &EngineFacade::tokenize;
  table_.detokenize = &EngineFacade::detokenize;
  table_.apply_chat_template = &EngineFacade::apply_chat_template;
  table_.free_buffer = &EngineFacade::free_buffer;
  table_.submit = &EngineFacade::submit;
  table_.next_event = &EngineFacade::next_event;
  table_.cancel = &EngineFacade::cancel;
  table_.release = &EngineFacade::release;
}

const aph_engine_api* EngineFacade::target(aph_error* err) const {
  const aph_engine_api* e = engine_.load(std::memory_order_acquire);
  if (e == nullptr) write_error(err, APH_ERR_BUSY, "model is loading");
  return e;
}

aph_status EngineFacade::model_info(void* engine, aph_model_desc* out, aph_error* err) {
  EngineFacade& f = self(engine);
  if (const aph_engine_api* e = f.engine_.load(std::memory_order_acquire)) {
    return e->model_info(e->engine, out, err);
  }
  if (out == nullptr) {
    write_error(err, APH_ERR_INVALID_ARGUMENT, "model_info: out is NULL");
    return APH_ERR_INVALID_ARGUMENT;
  }
  std::memset(out, 0, sizeof(*out));
  out->size = sizeof(*out);
  out->served_model_name = f.served_model_name_.c_str();
  out->model_path = f.model_path_.c_str();
  out->max_model_len = f.max_model_len_;
  out->bos_token_id = -1;
  out->eos_token_id = -1;
  out->lora_names_json = "[]";
  out->ready = 0;
  return APH_OK;
}

aph_status EngineFacade::tokenize(void* engine, const char* text, uint64_t text_len,
                                  int32_t add_special, int32_t parse_special, aph_buffer* out,
                                  aph_error* err) {
  const aph_engine_api* e = self(engine).target(err);
  if (e == nullptr) return APH_ERR_BUSY;
  return e->tokenize(e->engine, text, text_len, add_special, parse_special, out, err);
}

aph_status EngineFacade::detokenize(void* engine, const int32_t* ids, uint64_t n_ids,
                                    int32_t skip_special_tokens, aph_buffer* out, aph_error* err) {
  const aph_engine_api* e = self(engine).target(err);
  if (e == nullptr) return APH_ERR_BUSY;
  return e->detokenize(e->engine, ids, n_ids, skip_special_tokens, out, err);
}

aph_status EngineFacade::apply_chat_template(void* engine, const char* messages_json,
                                             const char* options_json, aph_buffer* out,
                                             aph_error* err) {
  const aph_engine_api* e = self(engine).target(err);
  if (e == nullptr) return APH_ERR_BUSY;
  return e->apply_chat_template(e->engine, messages_json, options_json, out, err);
}

void EngineFacade::free_buffer(void* engine, aph_buffer* buffer) {
  // Buffers only come from a ready engine; it stays alive until the HTTP
  // server has stopped, so even a detached facade can forward here.
  EngineFacade& f = self(engine);
  const aph_engine_api* e = f.engine_.load(std::memory_order_acquire);
  if (e == nullptr) e = f.last_engine_.load(std::memory_order_acquire);
  if (e != nullptr && buffer != nullptr) e->free_buffer(e->engine, buffer);
}

aph_status EngineFacade::submit(void* engine, const char* request_json, aph_request** out,
                                aph_error* err) {
  const aph_engine_api* e = self(engine).target(err);
  if (e == nullptr) return APH_ERR_BUSY;
  if (out == nullptr) {
    write_error(err, APH_ERR_INVALID_ARGUMENT, "submit: out is NULL");
    return APH_ERR_INVALID_ARGUMENT;
  }
  auto* wrapper = new (std::nothrow) FacadeRequest{e, nullptr};
  if (wrapper == nullptr) {
    write_error(err, APH_ERR_OUT_OF_MEMORY, "out of host memory");
    return APH_ERR_OUT_OF_MEMORY;
  }
  aph_status rc = e->submit(e->engine, request_json, &wrapper->inner, err);
  if (rc != APH_OK) {
    delete wrapper;
    *out = nullptr;
    return rc;
  }
  *out = reinterpret_cast<aph_request*>(wrapper);
  return APH_OK;
}

aph_status EngineFacade::next_event(aph_request* request, int32_t timeout_ms, aph_gen_event* out,
                                    aph_error* err) {
  if (request == nullptr) {
    write_error(err, APH_ERR_INVALID_ARGUMENT, "next_event: request is NULL");
    return APH_ERR_INVALID_ARGUMENT;
  }
  FacadeRequest* r = unwrap(request);
  return r->engine->next_event(r->inner, timeout_ms, out, err);
}

void EngineFacade::cancel(aph_request* request) {
  if (request == nullptr) return;
  FacadeRequest* r = unwrap(request);
  r->engine->cancel(r->inner);
}

void EngineFacade::release(aph_request* request) {
  if (request == nullptr) return;
  FacadeRequest* r = unwrap(request);
  r->engine->release(r->inner);
  delete r;
}

}  // namespace aph::server
