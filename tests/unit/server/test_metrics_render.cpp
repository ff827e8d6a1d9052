#include <gtest/gtest.h>

#include "server/http/metrics.hpp"

namespace aph::server {
namespace {

TEST(Metrics, HistogramBucketsAreCumulativeWithInfAndLabelsEscaped) {
  engine::EngineStats s;
  s.running = 3;
  s.waiting = 2;
  s.kv_usage = 0.25;
  s.prompt_tokens = 100;
  s.time_to_first_token.upper_bounds = {0.1, 0.5};
  s.time_to_first_token.bucket_counts = {2, 3, 1};  // the last is the overflow bucket
  s.time_to_first_token.count = 6;
  s.time_to_first_token.sum = 4.5;
  HttpCounters counters;
  counters.record("GET", 200, 10);
  counters.record("GET", 200, 5);
  std::string text = render_metrics(&s, "my \"model\"", counters.snapshot());
  const std::string label = "model_name=\"my \\\"model\\\"\"";
  EXPECT_NE(text.find("aphrodite:num_requests_running{" + label + "} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("aphrodite:kv_cache_usage_perc{" + label + "} 0.25\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE aphrodite:prompt_tokens counter\n"), std::string::npos);
  EXPECT_NE(text.find("aphrodite:prompt_tokens_total{" + label + "} 100\n"), std::string::npos);
  EXPECT_NE(text.find("aphrodite:time_to_first_token_seconds_bucket{" + label + ",le=\"0.10000000000000001\"} 2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("aphrodite:time_to_first_token_seconds_bucket{" + label + ",le=\"0.5\"} 5\n"),
            std::string::npos);
  EXPECT_NE(text.find("aphrodite:time_to_first_token_seconds_bucket{" + label + ",le=\"+Inf\"} 6\n"),
            std::string::npos);
  EXPECT_NE(text.find("aphrodite:time_to_first_token_seconds_sum{" + label + "} 4.5\n"), std::string::npos);
  EXPECT_NE(text.find("aphrodite:time_to_first_token_seconds_count{" + label + "} 6\n"), std::string::npos);
  EXPECT_NE(text.find("aphrodite:http_requests_total{method=\"GET\",status=\"200\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("aphrodite:http_response_bytes_total 15\n"), std::string::npos);
  EXPECT_NE(text.find("aphrodite:model_ready{" + label + "} 1\n"), std::string::npos);
}

TEST(Metrics, WithoutAnEngineEverySeriesReadsZero) {
  std::string text = render_metrics(nullptr, "m", HttpCounters{}.snapshot());
  EXPECT_NE(text.find("aphrodite:model_ready{model_name=\"m\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("aphrodite:e2e_request_latency_seconds_count{model_name=\"m\"} 0\n"),
            std::string::npos);
}

}  // namespace
}  // namespace aph::server
