// One client connection: reads requests (keep-alive, size limits), routes
// them, checks API keys, answers CORS preflights, calls the route's handler
// and writes one access-log line per request. Runs on its own thread.
#pragma once

#include <atomic>
#include <boost/asio/ip/tcp.hpp>

#include "server/config.hpp"
#include "server/http/metrics.hpp"
#include "server/http/route_table.hpp"

namespace aph::server {

struct ConnectionEnv {
  const HttpConfig* config = nullptr;
  const RouteTable* routes = nullptr;
  HttpCounters* counters = nullptr;
  const std::atomic<bool>* stopping = nullptr;
  const std::atomic<bool>* force_close = nullptr;
};

void serve_connection(boost::asio::ip::tcp::socket socket, const ConnectionEnv& env);

// A request id: the client's X-Request-Id when it is 1..128 characters of
// [A-Za-z0-9._:-], else 32 random hex digits.
std::string choose_request_id(std::string_view client_value);

}  // namespace aph::server
