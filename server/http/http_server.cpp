#include "server/http/http_server.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <boost/asio/write.hpp>

#include "core/common/error.hpp"
#include "core/common/log.hpp"

namespace aph::server {

namespace net = boost::asio;
using tcp = net::ip::tcp;

HttpServer::HttpServer(HttpConfig config, const RouteTable& routes, HttpCounters& counters)
    : config_(std::move(config)), routes_(routes), counters_(counters) {}

HttpServer::~HttpServer() { stop(); }

uint16_t HttpServer::start() {
  const std::string where = config_.host + ":" + std::to_string(config_.port);
  boost::system::error_code ec;
  tcp::resolver resolver(io_);
  auto results = resolver.resolve(config_.host, std::to_string(config_.port),
                                  tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || results.empty()) {
    throw invalid_argument("server.host / --host: cannot resolve " + config_.host + ": " + ec.message());
  }
  tcp::endpoint endpoint = results.begin()->endpoint();
  auto acceptor = std::make_unique<tcp::acceptor>(io_);
  acceptor->open(endpoint.protocol(), ec);
  if (!ec) acceptor->set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor->bind(endpoint, ec);
  if (!ec) acceptor->listen(net::socket_base::max_listen_connections, ec);
  if (ec) throw Error(APH_ERR_IO, "cannot listen on " + where + ": " + ec.message());
  acceptor->non_blocking(true, ec);
  uint16_t port = acceptor->local_endpoint().port();
  acceptor_ = std::move(acceptor);
  accept_thread_ = std::thread([this] { accept_loop(); });
  logger("http")->info("listening on {}:{}", config_.host, port);
  return port;
}

void HttpServer::reject_busy(tcp::socket& socket) {
  static const char kBody[] =
      "{\"error\":{\"message\":\"too many connections\",\"type\":\"service_unavailable\",\"code\":503}}";
  std::string response = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                         "Connection: close\r\nX-Request-Id: " + choose_request_id("") +
                         "\r\nContent-Length: " + std::to_string(sizeof(kBody) - 1) + "\r\n\r\n" +
                         kBody;
  boost::system::error_code ec;
  net::write(socket, net::buffer(response), ec);
  socket.close(ec);
}

void HttpServer::accept_loop() {
  auto log = logger("http");
  while (!stopping_.load()) {
    pollfd p{acceptor_->native_handle(), POLLIN, 0};
    int rc = ::poll(&p, 1, 100);
    if (rc <= 0) continue;
    boost::system::error_code ec;
    tcp::socket socket(io_);
    acceptor_->accept(socket, ec);
    if (ec) continue;  // would_block after a race, or a connection that vanished
    socket.non_blocking(false, ec);
    int fd = socket.native_handle();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (open_fds_.size() >= static_cast<size_t>(config_.max_connections)) {
        log->warn("refusing a connection: {} open (server.max_connections)", open_fds_.size());
        reject_busy(socket);
        continue;
      }
      open_fds_.insert(fd);
    }
    counters_.connection_opened();
    ConnectionEnv env;
    env.config = &config_;
    env.routes = &routes_;
    env.counters = &counters_;
    env.stopping = &stopping_;
    env.force_close = &force_close_;
    // The socket dies inside the thread before the server hears the thread is
    // done, so nothing touches io_ after stop() returns.
    auto owned = std::make_unique<tcp::socket>(std::move(socket));
    try {
      std::thread([this, env, fd, s = std::move(owned)]() mutable {
        serve_connection(std::move(*s), env);
        s.reset();
        counters_.connection_closed();
        std::lock_guard<std::mutex> lock(mutex_);
        open_fds_.erase(fd);
        idle_.notify_all();
      }).detach();
    } catch (const std::system_error& e) {
      // Out of threads: the socket went with the lambda; only the books remain.
      log->error("cannot start a connection thread: {}", e.what());
      counters_.connection_closed();
      std::lock_guard<std::mutex> lock(mutex_);
      open_fds_.erase(fd);
    }
  }
}

size_t HttpServer::open_connections() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return open_fds_.size();
}

void HttpServer::begin_stop() { stopping_.store(true); }

void HttpServer::stop(std::chrono::milliseconds grace) {
  begin_stop();
  if (accept_thread_.joinable()) accept_thread_.join();
  std::unique_lock<std::mutex> lock(mutex_);
  if (stopped_) return;
  if (!idle_.wait_for(lock, grace, [&] { return open_fds_.empty(); })) {
    logger("http")->warn("{} connection(s) still open after {} ms; closing them",
                         open_fds_.size(), grace.count());
    force_close_.store(true);
    for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
    idle_.wait(lock, [&] { return open_fds_.empty(); });
  }
  stopped_ = true;
  boost::system::error_code ec;
  if (acceptor_) acceptor_->close(ec);
}

}  // namespace aph::server
