// A typed, RAII view of aph_engine_api for dialect plugins. Engine failures
// become HttpError with the engine's message (which names the field at fault).
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "aphrodite/api.h"
#include "aphrodite_api/http_error.hpp"

namespace aph::api {

struct ModelInfo {
  std::string served_model_name;
  int64_t max_model_len = 0;
  int64_t vocab_size = 0;
  int32_t bos_token_id = -1;
  int32_t eos_token_id = -1;
  bool add_bos = false;
  bool ready = false;
  std::vector<std::string> lora_names;
};

// One event of a running generation, copied out of the engine's buffers.
struct GenEvent {
  int32_t kind = APH_EVENT_NONE;
  uint32_t choice = 0;
  std::string text;
  std::vector<int32_t> token_ids;
  boost::json::array logprobs;  // per token: {id, token, bytes, logprob, top:[...]}
  bool has_logprobs = false;
  std::string finish_reason;
  std::string stop_reason;
  bool has_stop_reason = false;
  uint64_t prompt_tokens = 0;
  uint64_t completion_tokens = 0;
  uint64_t cached_prompt_tokens = 0;
  std::string error;  // for APH_EVENT_ERROR
  int32_t error_code = APH_OK;
};

class Generation {
 public:
  Generation(const aph_engine_api* api, aph_request* request) : api_(api), request_(request) {}
  ~Generation() {
    if (request_ != nullptr) api_->release(request_);
  }
  Generation(const Generation&) = delete;
  Generation& operator=(const Generation&) = delete;

  // Waits up to timeout_ms; kind NONE on timeout.
  GenEvent next(int32_t timeout_ms) {
    aph_gen_event raw{};
    raw.size = sizeof(raw);
    aph_error err{};
    err.size = sizeof(err);
    GenEvent out;
    aph_status status = api_->next_event(request_, timeout_ms, &raw, &err);
    if (status != APH_OK) {
      out.kind = APH_EVENT_ERROR;
      out.error = err.message;
      out.error_code = status;
      return out;
    }
    out.kind = raw.kind;
    out.choice = raw.choice;
    if (raw.text != nullptr) out.text.assign(raw.text, raw.text_len);
    if (raw.token_ids != nullptr) out.token_ids.assign(raw.token_ids, raw.token_ids + raw.n_tokens);
    if (raw.logprobs_json != nullptr && raw.logprobs_json[0] != '\0') {
      boost::system::error_code ec;
      boost::json::value parsed = boost::json::parse(raw.logprobs_json, ec);
      if (!ec && parsed.is_array()) {
        out.logprobs = std::move(parsed.as_array());
        out.has_logprobs = true;
      }
    }
    if (raw.finish_reason != nullptr) out.finish_reason = raw.finish_reason;
    if (raw.stop_reason != nullptr) {
      out.stop_reason = raw.stop_reason;
      out.has_stop_reason = true;
    }
    out.prompt_tokens = raw.prompt_tokens;
    out.completion_tokens = raw.completion_tokens;
    out.cached_prompt_tokens = raw.cached_prompt_tokens;
    if (raw.kind == APH_EVENT_ERROR) {
      out.error = err.message[0] ? err.message : "generation failed";
      out.error_code = err.code ? err.code : APH_ERR_INTERNAL;
    }
    return out;
  }

  void cancel() { api_->cancel(request_); }

 private:
  const aph_engine_api* api_;
  aph_request* request_;
};

class EngineClient {
 public:
  EngineClient(const aph_engine_api* api, int busy_status) : api_(api), busy_status_(busy_status) {}

  ModelInfo model() const {
    aph_model_desc desc{};
    desc.size = sizeof(desc);
    aph_error err = fresh_error();
    expect(api_->model_info(api_->engine, &desc, &err), err);
    ModelInfo info;
    info.served_model_name = desc.served_model_name ? desc.served_model_name : "";
    info.max_model_len = desc.max_model_len;
    info.vocab_size = desc.vocab_size;
    info.bos_token_id = desc.bos_token_id;
    info.eos_token_id = desc.eos_token_id;
    info.add_bos = desc.add_bos != 0;
    info.ready = desc.ready != 0;
    if (desc.lora_names_json != nullptr) {
      boost::system::error_code ec;
      auto names = boost::json::parse(desc.lora_names_json, ec);
      if (!ec && names.is_array()) {
        for (const auto& n : names.as_array()) {
          if (n.is_string()) info.lora_names.emplace_back(n.as_string());
        }
      }
    }
    return info;
  }

  std::vector<int32_t> tokenize(std::string_view text, bool add_special, bool parse_special) const {
    aph_buffer buffer{};
    buffer.size = sizeof(buffer);
    aph_error err = fresh_error();
    expect(api_->tokenize(api_->engine, text.data(), text.size(), add_special, parse_special,
                          &buffer, &err),
           err);
    const auto* ids = static_cast<const int32_t*>(buffer.data);
    std::vector<int32_t> out(ids, ids + buffer.len / sizeof(int32_t));
    api_->free_buffer(api_->engine, &buffer);
    return out;
  }

  std::string detokenize(const std::vector<int32_t>& ids, bool skip_special) const {
    aph_buffer buffer{};
    buffer.size = sizeof(buffer);
    aph_error err = fresh_error();
    expect(api_->detokenize(api_->engine, ids.data(), ids.size(), skip_special, &buffer, &err),
           err);
    std::string out(static_cast<const char*>(buffer.data), buffer.len);
    api_->free_buffer(api_->engine, &buffer);
    return out;
  }

  std::string apply_chat_template(const boost::json::value& messages,
                                  const boost::json::object& options) const {
    std::string messages_text = boost::json::serialize(messages);
    std::string options_text = boost::json::serialize(options);
    aph_buffer buffer{};
    buffer.size = sizeof(buffer);
    aph_error err = fresh_error();
    expect(api_->apply_chat_template(api_->engine, messages_text.c_str(), options_text.c_str(),
                                     &buffer, &err),
           err);
    std::string out(static_cast<const char*>(buffer.data), buffer.len);
    api_->free_buffer(api_->engine, &buffer);
    return out;
  }

  std::unique_ptr<Generation> submit(const boost::json::object& request) const {
    std::string text = boost::json::serialize(request);
    aph_request* handle = nullptr;
    aph_error err = fresh_error();
    expect(api_->submit(api_->engine, text.c_str(), &handle, &err), err);
    return std::make_unique<Generation>(api_, handle);
  }

  int busy_status() const { return busy_status_; }

 private:
  static aph_error fresh_error() {
    aph_error err{};
    err.size = sizeof(err);
    return err;
  }
  void expect(aph_status status, const aph_error& err) const {
    if (status == APH_OK) return;
    throw HttpError(http_status_for(status, busy_status_),
                    err.message[0] ? err.message : "engine request failed");
  }

  const aph_engine_api* api_;
  int busy_status_;
};

}  // namespace aph::api
