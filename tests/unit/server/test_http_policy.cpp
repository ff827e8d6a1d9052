// API keys, CORS, size limits and JSON pre-validation, against a real server.
#include <boost/json.hpp>

#include "server/http/auth.hpp"
#include "tests/unit/server/server_fixture.hpp"

namespace aph::test {
namespace {

server::HttpConfig with_keys() {
  server::HttpConfig c;
  c.api_keys = {"key-one", "key-two"};
  return c;
}

TEST_F(ServerTest, MissingKeyIs401InTheRoutesDialect) {
  start(with_keys());
  Reply r = fetch(port_, "POST", "/fake/fake-api");
  EXPECT_EQ(r.status, 401);
  auto j = boost::json::parse(r.body).as_object();
  EXPECT_EQ(j["status"].as_int64(), 401);
  EXPECT_NE(std::string(j["fake_error"].as_string()).find("missing API key"), std::string::npos);
  EXPECT_EQ(r.header("www-authenticate"), "Bearer");
}

TEST_F(ServerTest, EveryConfiguredKeyWorksThroughBearerOrXApiKey) {
  start(with_keys());
  Reply a = fetch(port_, "POST", "/fake/fake-api", {{"Authorization", "Bearer key-one"}});
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(boost::json::parse(a.body).as_object()["api_key"].as_string(), "key-one");
  EXPECT_EQ(fetch(port_, "POST", "/fake/fake-api", {{"Authorization", "bearer key-two"}}).status, 200);
  EXPECT_EQ(fetch(port_, "POST", "/fake/fake-api", {{"X-API-KEY", "key-two"}}).status, 200);
  EXPECT_EQ(fetch(port_, "POST", "/fake/fake-api", {{"Authorization", "Bearer key-on"}}).status, 401);
  EXPECT_EQ(fetch(port_, "POST", "/fake/fake-api", {{"Authorization", "Bearer key-one2"}}).status, 401);
  EXPECT_EQ(fetch(port_, "POST", "/fake/fake-api", {{"X-API-KEY", ""}}).status, 401);
}

TEST_F(ServerTest, HealthIsOpenButOtherHostRoutesNeedAKey) {
  start(with_keys());
  EXPECT_EQ(fetch(port_, "GET", "/health").status, 503);  // open, just not ready
  Reply v = fetch(port_, "GET", "/version");
  EXPECT_EQ(v.status, 401);
  EXPECT_EQ(boost::json::parse(v.body).as_object()["error"].as_object()["code"].as_int64(), 401);
  EXPECT_EQ(fetch(port_, "GET", "/metrics").status, 401);
  EXPECT_EQ(fetch(port_, "GET", "/metrics", {{"X-API-KEY", "key-one"}}).status, 200);
}

TEST_F(ServerTest, LegacyRoutesNeedAKeyUnlessKoboldRoutesAreOpen) {
  start(with_keys());
  EXPECT_EQ(fetch(port_, "GET", "/fake/fake-api/legacy").status, 401);
}

TEST_F(ServerTest, KoboldRoutesOpenLeavesOnlyLegacyRoutesOpen) {
  server::HttpConfig c = with_keys();
  c.kobold_routes_open = true;
  start(c);
  Reply r = fetch(port_, "GET", "/fake/fake-api/legacy");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "legacy ok");
  EXPECT_EQ(fetch(port_, "POST", "/fake/fake-api").status, 401);
}

TEST_F(ServerTest, CorsPreflightAnswers204WithAllowHeaders) {
  start(with_keys());
  Reply r = fetch(port_, "OPTIONS", "/fake/fake-api",
                  {{"Origin", "http://example.test"},
                   {"Access-Control-Request-Method", "POST"},
                   {"Access-Control-Request-Headers", "authorization, content-type"}});
  EXPECT_EQ(r.status, 204);
  EXPECT_EQ(r.header("access-control-allow-origin"), "*");
  EXPECT_NE(r.header("access-control-allow-methods").find("POST"), std::string::npos);
  EXPECT_EQ(r.header("access-control-allow-headers"), "authorization, content-type");
  EXPECT_FALSE(r.header("x-request-id").empty());
  Reply normal = fetch(port_, "POST", "/fake/fake-api", {{"X-API-KEY", "key-one"}});
  EXPECT_EQ(normal.header("access-control-allow-origin"), "*");
}

TEST_F(ServerTest, OversizedBodyIs413InTheRoutesDialect) {
  server::HttpConfig c;
  c.max_body_bytes = 1024;
  start(c);
  EXPECT_EQ(fetch(port_, "POST", "/fake/fake-api", {}, std::string(1024, 'a')).status, 200);
  Reply r = fetch(port_, "POST", "/fake/fake-api", {}, std::string(4096, 'a'));
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(boost::json::parse(r.body).as_object()["status"].as_int64(), 413);
}

TEST_F(ServerTest, OversizedChunkedBodyIs413) {
  server::HttpConfig c;
  c.max_body_bytes = 1024;
  start(c);
  Client client(port_);
  std::string chunk(800, 'b');
  client.send_raw("POST /fake/fake-api HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
  client.send_raw("320\r\n" + chunk + "\r\n320\r\n" + chunk + "\r\n0\r\n\r\n");
  std::string reply = client.read_all();
  EXPECT_EQ(reply.rfind("HTTP/1.1 413", 0), 0u) << reply;
}

TEST_F(ServerTest, OversizedHeadersAre431) {
  server::HttpConfig c;
  c.max_header_bytes = 2048;
  start(c);
  Client client(port_);
  client.send_raw("GET /version HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(4096, 'h') + "\r\n\r\n");
  std::string reply = client.read_all();
  EXPECT_EQ(reply.rfind("HTTP/1.1 431", 0), 0u) << reply.substr(0, 200);
}

TEST_F(ServerTest, MalformedRequestLineIs400) {
  start();
  Client client(port_);
  client.send_raw("THIS IS NOT HTTP\r\n\r\n");
  std::string reply = client.read_all();
  EXPECT_EQ(reply.rfind("HTTP/1.1 400", 0), 0u) << reply;
}

TEST_F(ServerTest, InvalidJsonBodyIs400BeforeThePluginSeesIt) {
  start();
  Reply r = fetch(port_, "POST", "/fake/fake-api", {{"Content-Type", "application/json"}}, "{\"a\":");
  EXPECT_EQ(r.status, 400);
  auto j = boost::json::parse(r.body).as_object();
  EXPECT_NE(std::string(j["fake_error"].as_string()).find("not valid JSON"), std::string::npos);
  Reply array = fetch(port_, "POST", "/fake/fake-api", {{"Content-Type", "application/json"}}, "[1]");
  EXPECT_EQ(array.status, 400);
  // Not declared JSON: passed through untouched.
  EXPECT_EQ(fetch(port_, "POST", "/fake/fake-api", {{"Content-Type", "text/plain"}}, "{").status, 200);
}

TEST(Auth, ConstantTimeCompareAndKeyExtraction) {
  using server::constant_time_equal;
  EXPECT_TRUE(constant_time_equal("abc", "abc"));
  EXPECT_FALSE(constant_time_equal("abc", "abd"));
  EXPECT_FALSE(constant_time_equal("abc", "abcd"));
  EXPECT_FALSE(constant_time_equal("", "a"));
  EXPECT_EQ(server::presented_key("Bearer  tok ", ""), "tok");
  EXPECT_EQ(server::presented_key("", " k "), "k");
  EXPECT_EQ(server::presented_key("Basic abc", "k"), "k");
  EXPECT_FALSE(server::key_accepted("", {""}));
  EXPECT_TRUE(server::key_accepted("b", {"a", "b"}));
}

}  // namespace
}  // namespace aph::test
