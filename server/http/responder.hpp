// The aph_http_responder of one request: a plain response, or a chunked
// stream (SSE) flushed on every write. Also answers the host's own errors.
#pragma once

#include <atomic>
#include <string>
#include <utility>
#include <vector>

#include "aphrodite/api.h"
#include "server/http/timed_stream.hpp"

namespace aph::server {

struct ResponseContext {
  unsigned http_version = 11;  // 10 or 11
  bool keep_alive = true;
  bool head_request = false;
  std::string request_id;
  std::string cors_allow_origin;  // "" = no CORS headers
  const std::atomic<bool>* stopping = nullptr;
};

class Responder {
 public:
  Responder(TimedStream& stream, ResponseContext context);
  Responder(const Responder&) = delete;
  Responder& operator=(const Responder&) = delete;

  const aph_http_responder* table() const { return &table_; }

  aph_status add_header(const char* name, const char* value);
  aph_status send(int32_t status, const char* content_type, const char* body, uint64_t len);
  aph_status stream_begin(int32_t status, const char* content_type);
  aph_status stream_write(const char* data, uint64_t len);
  aph_status stream_end();
  bool client_gone();

  // The host's error body ({"error":{"message","type","code"}}), for requests
  // no route answers.
  void send_host_error(int32_t status, const std::string& message);
  // Ends a stream the handler left open.
  void finish();

  bool answered() const { return state_ != State::Fresh; }
  bool stream_open() const { return state_ == State::Streaming; }
  // After a write error the connection cannot carry another request.
  bool broken() const { return broken_; }
  bool keep_alive() const { return context_.keep_alive && !broken_; }
  int status() const { return status_; }
  uint64_t body_bytes() const { return body_bytes_; }

 private:
  enum class State { Fresh, Sent, Streaming, Ended };
  template <class Message>
  void common_headers(Message& message, const char* content_type);

  TimedStream& stream_;
  ResponseContext context_;
  aph_http_responder table_{};
  State state_ = State::Fresh;
  bool broken_ = false;
  bool chunked_ = true;
  int status_ = 0;
  uint64_t body_bytes_ = 0;
  std::vector<std::pair<std::string, std::string>> headers_;
};

// Reason text for the host's own error bodies ("not_found", ...).
const char* error_type_for(int32_t status);

}  // namespace aph::server
