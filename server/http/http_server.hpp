// The listening side: an acceptor thread and one thread per connection
// (plenty for hundreds of clients; a connection's handler may block on the
// engine). stop() shuts down in the order a graceful exit needs.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "server/config.hpp"
#include "server/http/connection.hpp"
#include "server/http/metrics.hpp"
#include "server/http/route_table.hpp"

namespace aph::server {

class HttpServer {
 public:
  // `routes` and `counters` must outlive the server and not change after start().
  HttpServer(HttpConfig config, const RouteTable& routes, HttpCounters& counters);
  ~HttpServer();  // stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds, listens and starts accepting. Returns the bound port. Throws
  // aph::Error naming the address when it cannot listen.
  uint16_t start();

  // Stops accepting; idle connections close, streams see client_gone() and
  // APH_ERR_CANCELLED so handlers end them. Returns at once.
  void begin_stop();
  // Waits for every connection thread; after `grace` the remaining sockets
  // are shut down under their handlers. Implies begin_stop().
  void stop(std::chrono::milliseconds grace = std::chrono::seconds(10));

  bool stopping() const { return stopping_.load(); }
  size_t open_connections() const;

 private:
  void accept_loop();
  void reject_busy(boost::asio::ip::tcp::socket& socket);

  HttpConfig config_;
  const RouteTable& routes_;
  HttpCounters& counters_;
  boost::asio::io_context io_;
  std::unique_ptr<boost::asio::ip::tcp::acceptor> acceptor_;
  std::thread accept_thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> force_close_{false};
  mutable std::mutex mutex_;
  std::condition_variable idle_;
  std::set<int> open_fds_;  // for the forced shutdown after the grace period
  bool stopped_ = false;
};

}  // namespace aph::server
