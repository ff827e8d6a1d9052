// Chunked SSE framing on the wire, and disconnect detection in the responder.
#include <boost/asio/ip/tcp.hpp>

#include <thread>

#include "server/http/responder.hpp"
#include "tests/unit/server/server_fixture.hpp"

namespace aph::test {
namespace {

TEST_F(ServerTest, SseIsChunkedOneEventPerChunk) {
  start();
  Client c(port_);
  c.send_raw("GET /fake/fake-api/stream?n=3 HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string raw = c.read_until("\r\n0\r\n\r\n");
  auto head_end = raw.find("\r\n\r\n");
  ASSERT_NE(head_end, std::string::npos) << raw;
  std::string head = lower(raw.substr(0, head_end));
  EXPECT_EQ(head.rfind("http/1.1 200", 0), 0u) << head;
  EXPECT_NE(head.find("transfer-encoding: chunked"), std::string::npos) << head;
  EXPECT_NE(head.find("content-type: text/event-stream"), std::string::npos) << head;
  EXPECT_NE(head.find("cache-control: no-cache"), std::string::npos) << head;
  EXPECT_NE(head.find("x-request-id: "), std::string::npos) << head;
  // Each write is its own chunk: size line, event, CRLF.
  std::string body = raw.substr(head_end + 4);
  EXPECT_EQ(body, "9\r\ndata: 0\n\n\r\n9\r\ndata: 1\n\n\r\n9\r\ndata: 2\n\n\r\n"
                  "e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n");
  // The connection stays usable after a stream.
  EXPECT_EQ(c.request("GET", "/version").status, 200);
}

TEST_F(ServerTest, Http10ClientGetsAStreamEndedByClose) {
  start();
  Client c(port_);
  c.send_raw("GET /fake/fake-api/stream?n=2 HTTP/1.0\r\n\r\n");
  std::string raw = c.read_all();
  EXPECT_EQ(raw.find("chunked"), std::string::npos) << raw;
  EXPECT_NE(raw.find("\r\n\r\ndata: 0\n\ndata: 1\n\ndata: [DONE]\n\n"), std::string::npos) << raw;
}

TEST(Responder, DetectsAClosedPeerWithoutBlockingAndCancelsWrites) {
  namespace net = boost::asio;
  using tcp = net::ip::tcp;
  net::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
  tcp::socket client(io), server_side(io);
  client.connect(acceptor.local_endpoint());
  acceptor.accept(server_side);

  std::atomic<bool> stopping{false}, force{false};
  server::TimedStream stream(server_side, stopping, force, {});
  server::ResponseContext ctx;
  ctx.request_id = "r1";
  ctx.stopping = &stopping;
  server::Responder responder(stream, ctx);
  const aph_http_responder* r = responder.table();
  ASSERT_EQ(r->stream_begin(r->conn, 200, "text/event-stream"), APH_OK);
  EXPECT_EQ(r->client_gone(r->conn), 0);
  EXPECT_EQ(r->stream_write(r->conn, "data: a\n\n", 9), APH_OK);

  client.close();
  bool gone = false;
  auto t0 = std::chrono::steady_clock::now();
  while (!gone && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2)) {
    gone = r->client_gone(r->conn) != 0;  // must return at once each time
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(gone);
  EXPECT_EQ(r->stream_write(r->conn, "data: b\n\n", 9), APH_ERR_CANCELLED);
  EXPECT_EQ(r->send(r->conn, 200, "text/plain", "x", 1), APH_ERR_UNSUPPORTED);  // answered once
}

TEST(Responder, ServerStopMakesStreamsSeeTheClientAsGone) {
  namespace net = boost::asio;
  using tcp = net::ip::tcp;
  net::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
  tcp::socket client(io), server_side(io);
  client.connect(acceptor.local_endpoint());
  acceptor.accept(server_side);
  std::atomic<bool> stopping{false}, force{false};
  server::TimedStream stream(server_side, stopping, force, {});
  server::ResponseContext ctx;
  ctx.stopping = &stopping;
  server::Responder responder(stream, ctx);
  const aph_http_responder* r = responder.table();
  ASSERT_EQ(r->stream_begin(r->conn, 200, "text/event-stream"), APH_OK);
  stopping = true;
  EXPECT_EQ(r->client_gone(r->conn), 1);
  EXPECT_EQ(r->stream_write(r->conn, "x", 1), APH_ERR_CANCELLED);
  EXPECT_EQ(r->stream_end(r->conn), APH_OK);  // the stream still ends cleanly
}

TEST(Responder, RejectsHeaderInjection) {
  namespace net = boost::asio;
  using tcp = net::ip::tcp;
  net::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
  tcp::socket client(io), server_side(io);
  client.connect(acceptor.local_endpoint());
  acceptor.accept(server_side);
  std::atomic<bool> stopping{false}, force{false};
  server::TimedStream stream(server_side, stopping, force, {});
  server::Responder responder(stream, {});
  const aph_http_responder* r = responder.table();
  EXPECT_EQ(r->add_header(r->conn, "X-A", "ok\r\nSet-Cookie: evil"), APH_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(r->add_header(r->conn, "Bad Name", "v"), APH_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(r->add_header(r->conn, "X-Good", "v"), APH_OK);
  EXPECT_EQ(r->send(r->conn, 700, "text/plain", "", 0), APH_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace aph::test
