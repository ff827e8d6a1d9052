// The aph_engine_api API plugins receive at init, before the engine exists.
// It forwards to the engine once attach() is called and answers APH_ERR_BUSY
// "model is loading" until then (model_info answers with ready = 0).
#pragma once

#include <atomic>
#include <string>

#include "aphrodite/api.h"

namespace aph::server {

class EngineFacade {
 public:
  // served_model_name / model_path: what model_info reports while loading.
  EngineFacade(std::string served_model_name, std::string model_path, int64_t max_model_len);
  EngineFacade(const EngineFacade&) = delete;
  EngineFacade& operator=(const EngineFacade&) = delete;

  const aph_engine_api* api() const { return &table_; }

  // The engine is ready: every call forwards to `engine` from now on.
  void attach(const aph_engine_api* engine) {
    last_engine_.store(engine, std::memory_order_release);
    engine_.store(engine, std::memory_order_release);
  }
  // Shutdown: new submissions answer busy again; requests already submitted
  // keep forwarding (they carry their engine with them).
  void detach() { engine_.store(nullptr, std::memory_order_release); }
  bool ready() const { return engine_.load(std::memory_order_acquire) != nullptr; }

 private:
  static EngineFacade& self(void* engine) { return *static_cast<EngineFacade*>(engine); }
  static aph_status model_info(void* engine, aph_model_desc* out, aph_error* err);
  static aph_status tokenize(void* engine, const char* text, uint64_t text_len, int32_t add_special,
                             int32_t parse_special, aph_buffer* out, aph_error* err);
  static aph_status detokenize(void* engine, const int32_t* ids, uint64_t n_ids,
                               int32_t skip_special_tokens, aph_buffer* out, aph_error* err);
  static aph_status apply_chat_template(void* engine, const char* messages_json,
                                        const char* options_json, aph_buffer* out, aph_error* err);
  static void free_buffer(void* engine, aph_buffer* buffer);
  static aph_status submit(void* engine, const char* request_json, aph_request** out,
                           aph_error* err);
  static aph_status next_event(aph_request* request, int32_t timeout_ms, aph_gen_event* out,
                               aph_error* err);
  static void cancel(aph_request* request);
  static void release(aph_request* request);

  const aph_engine_api* target(aph_error* err) const;

  std::string served_model_name_;
  std::string model_path_;
  int64_t max_model_len_;
  std::atomic<const aph_engine_api*> engine_{nullptr};
  std::atomic<const aph_engine_api*> last_engine_{nullptr};  // survives detach()
  aph_engine_api table_{};
};

}  // namespace aph::server
