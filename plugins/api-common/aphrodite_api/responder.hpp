// A C++ face for aph_http_responder and aph_http_request.
#pragma once

#include <boost/json.hpp>
#include <cctype>
#include <string>
#include <string_view>

#include "aphrodite/api.h"

namespace aph::api {

class Responder {
 public:
  explicit Responder(const aph_http_responder* raw) : raw_(raw) {}

  void header(const char* name, const std::string& value) const {
    raw_->add_header(raw_->conn, name, value.c_str());
  }
  void json(int status, const boost::json::value& body) const {
    std::string text = boost::json::serialize(body);
    raw_->send(raw_->conn, status, "application/json", text.data(), text.size());
    answered_ = true;
  }
  void begin_stream(int status, const char* content_type) const {
    raw_->stream_begin(raw_->conn, status, content_type);
    answered_ = true;
    streaming_ = true;
  }
  // False once the client is gone.
  bool write(std::string_view chunk) const {
    return raw_->stream_write(raw_->conn, chunk.data(), chunk.size()) == APH_OK;
  }
  void end_stream() const { raw_->stream_end(raw_->conn); }
  bool client_gone() const { return raw_->client_gone(raw_->conn) != 0; }
  bool answered() const { return answered_; }
  bool streaming() const { return streaming_; }

 private:
  const aph_http_responder* raw_;
  mutable bool answered_ = false;
  mutable bool streaming_ = false;
};

inline std::string_view body_of(const aph_http_request* request) {
  return std::string_view(request->body ? request->body : "", request->body_len);
}

inline std::string header_of(const aph_http_request* request, std::string_view name) {
  for (uint32_t i = 0; i < request->n_headers; ++i) {
    std::string_view key = request->headers[i].name;
    if (key.size() != name.size()) continue;
    bool same = true;
    for (size_t c = 0; c < key.size() && same; ++c) {
      same = std::tolower(static_cast<unsigned char>(key[c])) ==
             std::tolower(static_cast<unsigned char>(name[c]));
    }
    if (same) return request->headers[i].value;
  }
  return {};
}

}  // namespace aph::api
