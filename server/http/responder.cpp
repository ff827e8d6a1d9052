#include "server/http/responder.hpp"

#include <sys/socket.h>

#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

namespace aph::server {

namespace http = boost::beast::http;
namespace net = boost::asio;

namespace {

Responder& self(void* conn) { return *static_cast<Responder*>(conn); }

bool header_text_ok(const char* s, bool name) {
  if (s == nullptr) return false;
  if (name && *s == '\0') return false;
  for (const char* p = s; *p; ++p) {
    unsigned char c = static_cast<unsigned char>(*p);
    // CR/LF would let a handler split the response (header injection).
    if (c == '\r' || c == '\n' || c == 0x7f || (c < 0x20 && c != '\t')) return false;
    if (name && (c == ':' || c == ' ' || c == '\t')) return false;
  }
  return true;
}

}  // namespace

const char* error_type_for(int32_t status) {
  switch (status) {
    case 400: return "invalid_request_error";
    case 401: return "authentication_error";
    case 404: return "not_found_error";
    case 405: return "method_not_allowed";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 431: return "request_header_too_large";
    case 503: return "service_unavailable";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

Responder::Responder(TimedStream& stream, ResponseContext context)
    : stream_(stream), context_(std::move(context)) {
  chunked_ = context_.http_version >= 11;
  table_.size = sizeof(aph_http_responder);
  table_.conn = this;
  table_.add_header = [](void* c, const char* n, const char* v) { return self(c).add_header(n, v); };
  table_.send = [](void* c, int32_t s, const char* t, const char* b, uint64_t l) {
    return self(c).send(s, t, b, l);
  };
  table_.stream_begin = [](void* c, int32_t s, const char* t) { return self(c).stream_begin(s, t); };
  table_.stream_write = [](void* c, const char* d, uint64_t l) { return self(c).stream_write(d, l); };
  table_.stream_end = [](void* c) { return self(c).stream_end(); };
  table_.client_gone = [](void* c) -> int32_t { return self(c).client_gone() ? 1 : 0; };
}

aph_status Responder::add_header(const char* name, const char* value) {
  if (state_ != State::Fresh) return APH_ERR_UNSUPPORTED;
  if (!header_text_ok(name, true) || !header_text_ok(value, false)) return APH_ERR_INVALID_ARGUMENT;
  headers_.emplace_back(name, value);
  return APH_OK;
}

template <class Message>
void Responder::common_headers(Message& m, const char* content_type) {
  m.set(http::field::server, "aphrodited/" APH_VERSION);
  m.set("X-Request-Id", context_.request_id);
  if (!context_.cors_allow_origin.empty()) {
    m.set(http::field::access_control_allow_origin, context_.cors_allow_origin);
    m.set(http::field::access_control_expose_headers, "X-Request-Id");
  }
  if (content_type != nullptr && *content_type != '\0' && header_text_ok(content_type, false)) {
    m.set(http::field::content_type, content_type);
  }
  for (const auto& [n, v] : headers_) m.set(n, v);
  m.keep_alive(context_.keep_alive);
}

aph_status Responder::send(int32_t status, const char* content_type, const char* body,
                           uint64_t len) {
  if (state_ != State::Fresh) return APH_ERR_UNSUPPORTED;
  if (status < 100 || status > 599) return APH_ERR_INVALID_ARGUMENT;
  if (body == nullptr && len != 0) return APH_ERR_INVALID_ARGUMENT;
  state_ = State::Sent;
  status_ = status;
  http::response<http::string_body> res{static_cast<http::status>(status), context_.http_version};
  common_headers(res, content_type);
  if (!context_.head_request && len > 0) res.body().assign(body, len);
  res.prepare_payload();
  if (context_.head_request) res.content_length(len);
  boost::system::error_code ec;
  http::write(stream_, res, ec);
  if (ec) {
    broken_ = true;
    return APH_ERR_CANCELLED;
  }
  body_bytes_ += context_.head_request ? 0 : len;
  return APH_OK;
}

aph_status Responder::stream_begin(int32_t status, const char* content_type) {
  if (state_ != State::Fresh) return APH_ERR_UNSUPPORTED;
  if (status < 100 || status > 599) return APH_ERR_INVALID_ARGUMENT;
  state_ = State::Streaming;
  status_ = status;
  http::response<http::empty_body> res{static_cast<http::status>(status), context_.http_version};
  std::string type = content_type ? content_type : "";
  if (type.rfind("text/event-stream", 0) == 0) {
    // Proxies must not buffer or cache an event stream.
    res.set(http::field::cache_control, "no-cache");
    res.set("X-Accel-Buffering", "no");
  }
  common_headers(res, content_type);
  if (chunked_) {
    res.chunked(true);
  } else {
    context_.keep_alive = false;  // HTTP/1.0: the body ends when the connection does
    res.keep_alive(false);
  }
  http::response_serializer<http::empty_body> serializer{res};
  boost::system::error_code ec;
  http::write_header(stream_, serializer, ec);
  if (ec) {
    broken_ = true;
    return APH_ERR_CANCELLED;
  }
  return APH_OK;
}

aph_status Responder::stream_write(const char* data, uint64_t len) {
  if (state_ != State::Streaming) return APH_ERR_UNSUPPORTED;
  if (broken_ || client_gone()) return APH_ERR_CANCELLED;
  if (len == 0) return APH_OK;  // an empty chunk would end the body
  if (data == nullptr) return APH_ERR_INVALID_ARGUMENT;
  boost::system::error_code ec;
  if (chunked_) {
    net::write(stream_, http::make_chunk(net::const_buffer(data, len)), ec);
  } else {
    net::write(stream_, net::const_buffer(data, len), ec);
  }
  if (ec) {
    broken_ = true;
    return APH_ERR_CANCELLED;
  }
  body_bytes_ += len;
  return APH_OK;
}

aph_status Responder::stream_end() {
  if (state_ != State::Streaming) return APH_ERR_UNSUPPORTED;
  state_ = State::Ended;
  if (broken_) return APH_ERR_CANCELLED;
  if (!chunked_) return APH_OK;
  boost::system::error_code ec;
  net::write(stream_, http::make_chunk_last(), ec);
  if (ec) {
    broken_ = true;
    return APH_ERR_CANCELLED;
  }
  return APH_OK;
}

void Responder::finish() {
  if (state_ == State::Streaming) stream_end();
}

bool Responder::client_gone() {
  if (broken_) return true;
  if (context_.stopping != nullptr && context_.stopping->load()) return true;
  pollfd p{stream_.native_handle(), static_cast<short>(POLLIN | POLLRDHUP), 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLHUP | POLLERR | POLLRDHUP)) return true;
  if (p.revents & POLLIN) {
    char c;
    ssize_t n = ::recv(p.fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0) return true;  // orderly close
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return true;
  }
  return false;
}

void Responder::send_host_error(int32_t status, const std::string& message) {
  boost::json::object error;
  error["message"] = message;
  error["type"] = error_type_for(status);
  error["code"] = status;
  boost::json::object root;
  root["error"] = std::move(error);
  std::string body = boost::json::serialize(root);
  send(status, "application/json", body.data(), body.size());
}

}  // namespace aph::server
