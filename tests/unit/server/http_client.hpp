// A small blocking HTTP client for tests: Beast for well-formed exchanges,
// raw bytes for framing checks and malformed input.
#pragma once

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <map>
#include <string>

namespace aph::test {

namespace net = boost::asio;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;

struct Reply {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? "" : it->second;
  }
};

inline std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

class Client {
 public:
  explicit Client(uint16_t port) : socket_(io_) {
    socket_.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
  }

  Reply request(const std::string& method, const std::string& target,
                const std::map<std::string, std::string>& headers = {}, const std::string& body = "") {
    http::request<http::string_body> req{http::string_to_verb(method), target, 11};
    req.set(http::field::host, "127.0.0.1");
    for (const auto& [k, v] : headers) req.set(k, v);
    req.body() = body;
    req.prepare_payload();
    http::write(socket_, req);
    http::response_parser<http::string_body> parser;
    parser.body_limit(64u << 20);
    if (method == "HEAD") parser.skip(true);
    http::read(socket_, buffer_, parser);
    auto res = parser.release();
    Reply r;
    r.status = res.result_int();
    for (const auto& f : res) r.headers[lower(std::string(f.name_string()))] = std::string(f.value());
    r.body = res.body();
    return r;
  }

  void send_raw(const std::string& bytes) { net::write(socket_, net::buffer(bytes)); }

  // Everything the server sends until it closes the connection.
  std::string read_all() {
    std::string out;
    boost::system::error_code ec;
    char buf[4096];
    for (;;) {
      size_t n = socket_.read_some(net::buffer(buf), ec);
      out.append(buf, n);
      if (ec) break;
    }
    return out;
  }

  // Reads until `needle` arrives (or the connection ends).
  std::string read_until(const std::string& needle) {
    boost::system::error_code ec;
    char buf[4096];
    while (raw_.find(needle) == std::string::npos) {
      size_t n = socket_.read_some(net::buffer(buf), ec);
      raw_.append(buf, n);
      if (ec) break;
    }
    return raw_;
  }

  tcp::socket& socket() { return socket_; }

 private:
  net::io_context io_;
  tcp::socket socket_;
  boost::beast::flat_buffer buffer_;
  std::string raw_;
};

inline Reply fetch(uint16_t port, const std::string& method, const std::string& target,
                   const std::map<std::string, std::string>& headers = {},
                   const std::string& body = "") {
  Client c(port);
  return c.request(method, target, headers, body);
}

}  // namespace aph::test
