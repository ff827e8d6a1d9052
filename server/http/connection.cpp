#include "server/http/connection.hpp"

#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <random>

#include "core/common/error.hpp"
#include "core/common/log.hpp"
#include "server/http/auth.hpp"
#include "server/http/json_body.hpp"
#include "server/http/responder.hpp"

namespace aph::server {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

std::string choose_request_id(std::string_view client_value) {
  bool usable = !client_value.empty() && client_value.size() <= 128;
  for (char c : client_value) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == ':' || c == '-';
    usable = usable && ok;
  }
  if (usable) return std::string(client_value);
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* hex = "0123456789abcdef";
  std::string id(32, '0');
  uint64_t a = rng(), b = rng();
  for (int i = 0; i < 16; ++i) {
    id[i] = hex[(a >> (i * 4)) & 15];
    id[16 + i] = hex[(b >> (i * 4)) & 15];
  }
  return id;
}

namespace {

struct Exchange {
  std::string method;
  std::string target;
  int status = 0;
  uint64_t bytes = 0;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
};

void log_access(const std::string& remote, const Exchange& x, const std::string& request_id) {
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - x.start)
                  .count();
  logger("http.access")
      ->info("{} \"{} {}\" {} {}B {:.1f}ms id={}", remote, x.method, x.target, x.status, x.bytes, ms,
             request_id);
}

// A route's own error shape (send_error), falling back to the host's when the
// route does not answer.
void send_route_error(Responder& responder, const RouteEntry* entry, int32_t status,
                      const std::string& message) {
  if (entry != nullptr && !responder.answered()) {
    try {
      entry->route.send_error(entry->route.handler_state, status, message.c_str(), responder.table());
    } catch (...) {
    }
  }
  if (!responder.answered()) responder.send_host_error(status, message);
  responder.finish();
}

const char* status_reason_for_read_error(const beast::error_code& ec, int* status) {
  if (ec == http::error::header_limit) {
    *status = 431;
    return "request headers are too large";
  }
  if (ec == http::error::body_limit) {
    *status = 413;
    return "request body is too large";
  }
  *status = 400;
  return "malformed HTTP request";
}

// A host-built error for a request the parser rejected: no route is known.
void answer_unreadable(TimedStream& stream, const ConnectionEnv& env, int status,
                       const std::string& message, const std::string& remote, Exchange& x) {
  // When the request line was read, the route's dialect shapes the error.
  const RouteEntry* entry = nullptr;
  if (!x.target.empty()) {
    std::string method = x.method == "HEAD" ? "GET" : x.method;
    auto found = env.routes->find(method, x.target.substr(0, x.target.find('?')));
    entry = found.match;
  }
  ResponseContext ctx;
  ctx.keep_alive = false;
  ctx.request_id = choose_request_id("");
  ctx.cors_allow_origin = env.config->cors_allow_origin;
  ctx.stopping = env.stopping;
  Responder responder(stream, ctx);
  send_route_error(responder, entry, status, message);
  x.status = status;
  x.bytes = responder.body_bytes();
  env.counters->record(x.method.empty() ? "-" : x.method, status, x.bytes);
  log_access(remote, x, ctx.request_id);
}

// Handles one parsed request; returns false when the connection must close.
bool dispatch(TimedStream& stream, const ConnectionEnv& env, http::request<http::string_body>& req,
              const std::string& remote) {
  Exchange x;
  x.method = std::string(req.method_string());
  x.target = std::string(req.target());
  const HttpConfig& cfg = *env.config;

  ResponseContext ctx;
  ctx.http_version = req.version() >= 11 ? 11 : 10;
  ctx.keep_alive = req.keep_alive() && !env.stopping->load();
  ctx.head_request = req.method() == http::verb::head;
  ctx.request_id = choose_request_id(req["X-Request-Id"]);
  ctx.cors_allow_origin = cfg.cors_allow_origin;
  ctx.stopping = env.stopping;
  Responder responder(stream, ctx);

  std::string path = x.target.substr(0, x.target.find('?'));
  std::string query = x.target.size() > path.size() ? x.target.substr(path.size() + 1) : "";

  auto finish = [&] {
    x.status = responder.status();
    x.bytes = responder.body_bytes();
    env.counters->record(x.method, x.status, x.bytes);
    log_access(remote, x, ctx.request_id);
    return responder.keep_alive();
  };

  if (req.method() == http::verb::options && !cfg.cors_allow_origin.empty()) {
    // CORS preflight: browsers send it without credentials, so no key check.
    std::string requested = std::string(req[http::field::access_control_request_headers]);
    responder.add_header("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE, OPTIONS");
    responder.add_header("Access-Control-Allow-Headers",
                         requested.empty() ? "Authorization, Content-Type, X-API-KEY, X-Request-Id"
                                           : requested.c_str());
    responder.add_header("Access-Control-Max-Age", "86400");
    responder.send(204, nullptr, nullptr, 0);
    return finish();
  }

  std::string method = x.method == "HEAD" ? "GET" : x.method;
  RouteTable::Lookup found = env.routes->find(method, path);
  if (found.match == nullptr) {
    if (found.on_path != nullptr) {
      std::string allow;
      for (const auto& m : found.allowed) allow += (allow.empty() ? "" : ", ") + m;
      responder.add_header("Allow", allow.c_str());
      send_route_error(responder, found.on_path, 405,
                       "method " + x.method + " is not allowed on " + path + " (allowed: " + allow + ")");
    } else {
      responder.send_host_error(404, "no route for " + x.method + " " + path);
    }
    return finish();
  }
  const RouteEntry& entry = *found.match;

  std::string key = presented_key(req[http::field::authorization], req["X-API-KEY"]);
  bool open = cfg.api_keys.empty() || path == "/health" ||
              (entry.route.auth == APH_ROUTE_AUTH_LEGACY && cfg.kobold_routes_open);
  if (!open && !key_accepted(key, cfg.api_keys)) {
    responder.add_header("WWW-Authenticate", "Bearer");
    send_route_error(responder, &entry, 401,
                     key.empty() ? "missing API key (Authorization: Bearer <key> or X-API-KEY)"
                                 : "invalid API key");
    return finish();
  }

  const std::string& body = req.body();
  if (!body.empty() && is_json_content_type(req[http::field::content_type])) {
    std::string problem = prevalidate_json_body(body);
    if (!problem.empty()) {
      send_route_error(responder, &entry, 400, problem);
      return finish();
    }
  }

  std::vector<std::string> header_text;
  header_text.reserve(2 * 64);
  for (const auto& field : req) {
    header_text.emplace_back(field.name_string());
    header_text.emplace_back(field.value());
  }
  std::vector<aph_http_header> headers(header_text.size() / 2);
  for (size_t i = 0; i < headers.size(); ++i) {
    headers[i].size = sizeof(aph_http_header);
    headers[i].name = header_text[2 * i].c_str();
    headers[i].value = header_text[2 * i + 1].c_str();
  }
  std::string authenticated_key = open ? "" : key;
  aph_http_request request{};
  request.size = sizeof(request);
  request.method = method.c_str();
  request.path = path.c_str();
  request.query = query.c_str();
  request.body = body.data();
  request.body_len = body.size();
  request.n_headers = static_cast<uint32_t>(headers.size());
  request.headers = headers.data();
  request.request_id = ctx.request_id.c_str();
  request.api_key = authenticated_key.c_str();
  request.remote_addr = remote.c_str();

  aph_error err{};
  err.size = sizeof(err);
  aph_status rc = APH_ERR_INTERNAL;
  try {
    rc = entry.route.handle(entry.route.handler_state, &request, responder.table(), &err);
  } catch (const std::exception& e) {
    write_error(&err, APH_ERR_INTERNAL, e.what());
  } catch (...) {
    write_error(&err, APH_ERR_INTERNAL, "handler threw an unknown exception");
  }
  if (!responder.answered()) {
    std::string message = rc != APH_OK ? std::string(err.message) : "the handler sent no response";
    if (message.empty()) message = "internal error (status " + std::to_string(rc) + ")";
    logger("http")->error("{} {} (owner '{}'): {}", x.method, path, entry.owner, message);
    send_route_error(responder, &entry, 500, message);
  }
  responder.finish();
  return finish();
}

}  // namespace

void serve_connection(tcp::socket socket, const ConnectionEnv& env) {
  boost::system::error_code ec;
  std::string remote = "-";
  auto endpoint = socket.remote_endpoint(ec);
  if (!ec) remote = endpoint.address().to_string();
  socket.set_option(tcp::no_delay(true), ec);  // SSE chunks must leave at once

  StreamLimits limits;
  limits.idle_read = std::chrono::seconds(env.config->keep_alive_timeout_s);
  TimedStream stream(socket, *env.stopping, *env.force_close, limits);
  beast::flat_buffer buffer;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(static_cast<uint32_t>(env.config->max_header_bytes));
    parser.body_limit(env.config->max_body_bytes);
    beast::error_code rec;
    http::read_header(stream, buffer, parser, rec);
    if (rec == http::error::end_of_stream || rec == net::error::operation_aborted ||
        rec == net::error::timed_out || rec == net::error::eof ||
        rec == net::error::connection_reset) {
      break;
    }
    Exchange x;
    // Beast checks Content-Length against the body limit while parsing the
    // header, so a body_limit error still has a complete request line.
    if (parser.is_header_done() || rec == http::error::body_limit) {
      x.method = std::string(parser.get().method_string());
      x.target = std::string(parser.get().target());
    }
    if (rec) {
      int status = 400;
      const char* message = status_reason_for_read_error(rec, &status);
      answer_unreadable(stream, env, status, message, remote, x);
      break;
    }
    auto content_length = parser.content_length();
    if (content_length && *content_length > env.config->max_body_bytes) {
      answer_unreadable(stream, env, 413,
                        "request body of " + std::to_string(*content_length) +
                            " bytes exceeds server.max_body_bytes (" +
                            std::to_string(env.config->max_body_bytes) + ")",
                        remote, x);
      break;
    }
    if (beast::iequals(parser.get()[http::field::expect], "100-continue")) {
      static const char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
      net::write(stream, net::buffer(kContinue, sizeof(kContinue) - 1), ec);
      if (ec) break;
    }
    if (!parser.is_done()) http::read(stream, buffer, parser, rec);
    if (rec) {
      if (rec == net::error::operation_aborted || rec == net::error::timed_out ||
          rec == net::error::eof || rec == http::error::partial_message) {
        break;
      }
      int status = 400;
      const char* message = status_reason_for_read_error(rec, &status);
      answer_unreadable(stream, env, status, message, remote, x);
      break;
    }
    http::request<http::string_body> req = parser.release();
    bool keep = false;
    try {
      keep = dispatch(stream, env, req, remote);
    } catch (const std::exception& e) {
      logger("http")->error("connection from {}: {}", remote, e.what());
      keep = false;
    }
    if (!keep || env.stopping->load()) break;
  }
  socket.shutdown(tcp::socket::shutdown_send, ec);
  // Read what the client still sends (an unread oversized body) for a moment,
  // so closing does not reset the connection before it reads our answer.
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  char sink[16384];
  while (std::chrono::steady_clock::now() < until && !env.force_close->load()) {
    pollfd p{socket.native_handle(), POLLIN, 0};
    if (::poll(&p, 1, 50) < 0) break;
    if (!(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
    ssize_t n = ::recv(socket.native_handle(), sink, sizeof(sink), MSG_DONTWAIT);
    if (n <= 0) break;
  }
  socket.close(ec);
}

}  // namespace aph::server
