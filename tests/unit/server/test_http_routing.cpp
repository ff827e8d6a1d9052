// Routing, built-in routes, error shapes, request ids and the engine facade,
// against a real listening server.
#include <boost/json.hpp>
#include <chrono>
#include <thread>

#include "tests/unit/server/server_fixture.hpp"

namespace aph::test {
namespace {

boost::json::object json_of(const Reply& r) { return boost::json::parse(r.body).as_object(); }

TEST_F(ServerTest, HealthIs503UntilTheModelIsReady) {
  start();
  EXPECT_EQ(fetch(port_, "GET", "/health").status, 503);
  status_.set_phase(server::ModelPhase::Ready);
  Reply r = fetch(port_, "GET", "/health");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(json_of(r)["status"].as_string(), "ready");
}

TEST_F(ServerTest, VersionAnswersJson) {
  start();
  Reply r = fetch(port_, "GET", "/version");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(json_of(r)["version"].as_string(), APH_VERSION);
  EXPECT_EQ(r.header("content-type"), "application/json");
}

TEST_F(ServerTest, PluginRouteGetsTheRequestAndItsConfigSection) {
  start();
  Reply r = fetch(port_, "POST", "/fake/fake-api?x=1", {{"Content-Type", "application/json"}},
                  R"({"a":1})");
  ASSERT_EQ(r.status, 200) << r.body;
  auto j = json_of(r);
  EXPECT_EQ(j["path"].as_string(), "/fake/fake-api");
  EXPECT_EQ(j["query"].as_string(), "x=1");
  EXPECT_EQ(j["body_len"].as_int64(), 7);
  EXPECT_EQ(j["config"].as_object()["greeting"].as_string(), "hi");
  EXPECT_EQ(j["remote"].as_string(), "127.0.0.1");
  EXPECT_EQ(r.header("x-fake"), "yes");
}

TEST_F(ServerTest, UnknownPathIs404InTheHostShape) {
  start();
  Reply r = fetch(port_, "GET", "/nowhere");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(json_of(r)["error"].as_object()["code"].as_int64(), 404);
}

TEST_F(ServerTest, WrongMethodIs405InTheRoutesShapeWithAllow) {
  start();
  Reply r = fetch(port_, "GET", "/fake/fake-api");
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.header("allow"), "POST");
  EXPECT_EQ(json_of(r)["status"].as_int64(), 405);  // the fake dialect's error shape
  EXPECT_TRUE(json_of(r).contains("fake_error"));
}

TEST_F(ServerTest, PrefixRouteMatchesLongerPaths) {
  start();
  Reply r = fetch(port_, "GET", "/fake/fake-api/items/42/detail");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(json_of(r)["path"].as_string(), "/fake/fake-api/items/42/detail");
}

TEST_F(ServerTest, HandlerErrorWithoutAnAnswerBecomes500ViaSendError) {
  start();
  Reply r = fetch(port_, "GET", "/fake/fake-api/fail");
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(json_of(r)["fake_error"].as_string(), "fake handler failure");
}

TEST_F(ServerTest, RequestIdIsEchoedOrGenerated) {
  start();
  Reply mine = fetch(port_, "GET", "/version", {{"X-Request-Id", "abc-123"}});
  EXPECT_EQ(mine.header("x-request-id"), "abc-123");
  Reply generated = fetch(port_, "GET", "/version", {{"X-Request-Id", "bad id\twith spaces"}});
  EXPECT_EQ(generated.header("x-request-id").size(), 32u);
  Reply other = fetch(port_, "GET", "/nowhere");
  EXPECT_EQ(other.header("x-request-id").size(), 32u);
  EXPECT_NE(other.header("x-request-id"), generated.header("x-request-id"));
  // The plugin sees the same id.
  Reply echo = fetch(port_, "POST", "/fake/fake-api", {{"X-Request-Id", "req-7"}}, "");
  EXPECT_EQ(json_of(echo)["request_id"].as_string(), "req-7");
}

TEST_F(ServerTest, EngineFacadeAnswersBusyWhileTheModelLoads) {
  start();
  Reply r = fetch(port_, "GET", "/fake/fake-api/engine");
  ASSERT_EQ(r.status, 200);
  auto j = json_of(r);
  EXPECT_EQ(j["submit_status"].as_int64(), APH_ERR_BUSY);
  EXPECT_EQ(j["message"].as_string(), "model is loading");
  EXPECT_EQ(j["ready"].as_int64(), 0);
  EXPECT_EQ(j["model"].as_string(), "test-model");
}

TEST_F(ServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  start();
  Client c(port_);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(c.request("GET", "/version").status, 200);
  EXPECT_EQ(c.request("POST", "/fake/fake-api", {}, "x").status, 200);
}

TEST_F(ServerTest, MetricsRenderEngineAndHttpSeries) {
  start();
  fetch(port_, "GET", "/version");
  // A request is counted after its response is sent, so the client can ask
  // for /metrics before the count lands: wait for it (2 s at most).
  Reply r;
  for (int attempt = 0; attempt < 100; ++attempt) {
    r = fetch(port_, "GET", "/metrics");
    if (r.body.find("aphrodite:http_requests_total{method=\"GET\",status=\"200\"}") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.header("content-type").rfind("text/plain; version=0.0.4", 0), 0u);
  for (const char* name :
       {"aphrodite:num_requests_running{", "aphrodite:num_requests_waiting{",
        "aphrodite:kv_cache_usage_perc{", "aphrodite:prompt_tokens_total{",
        "aphrodite:generation_tokens_total{", "aphrodite:prefix_cache_queries_total{",
        "aphrodite:prefix_cache_hits_total{", "aphrodite:num_preemptions_total{",
        "aphrodite:time_to_first_token_seconds_bucket{", "aphrodite:inter_token_latency_seconds_count{",
        "aphrodite:e2e_request_latency_seconds_sum{",
        "aphrodite:http_requests_total{method=\"GET\",status=\"200\"}"}) {
    EXPECT_NE(r.body.find(name), std::string::npos) << name;
  }
}

TEST_F(ServerTest, HundredsOfConcurrentConnections) {
  start();
  constexpr int kClients = 200;
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < kClients; ++i) clients.push_back(std::make_unique<Client>(port_));
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      try {
        if (clients[i]->request("GET", "/version").status == 200) ++ok;
      } catch (...) {
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), kClients);
  EXPECT_GE(server_->open_connections(), 1u);
}

TEST_F(ServerTest, ConnectionsBeyondTheLimitGet503) {
  server::HttpConfig c;
  c.max_connections = 2;
  start(c);
  Client a(port_), b(port_);
  EXPECT_EQ(a.request("GET", "/version").status, 200);
  EXPECT_EQ(b.request("GET", "/version").status, 200);
  Client third(port_);
  std::string reply = third.read_all();
  EXPECT_EQ(reply.rfind("HTTP/1.1 503", 0), 0u) << reply;
  EXPECT_NE(reply.find("X-Request-Id: "), std::string::npos) << reply;
  EXPECT_EQ(a.request("GET", "/version").status, 200);  // the others are unaffected
}

TEST_F(ServerTest, StopClosesIdleKeepAliveConnectionsPromptly) {
  start();
  Client idle(port_);
  EXPECT_EQ(idle.request("GET", "/version").status, 200);
  auto t0 = std::chrono::steady_clock::now();
  server_->stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
  EXPECT_EQ(idle.read_all(), "");  // closed without another byte
  EXPECT_EQ(server_->open_connections(), 0u);
}

}  // namespace
}  // namespace aph::test
