#include "server/http/metrics.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace aph::server {

void HttpCounters::record(const std::string& method, int status, uint64_t response_bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++data_.requests[{method, status}];
  data_.response_bytes += response_bytes;
}

void HttpCounters::connection_opened() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++data_.open_connections;
}

void HttpCounters::connection_closed() {
  std::lock_guard<std::mutex> lock(mutex_);
  --data_.open_connections;
}

HttpCounters::Snapshot HttpCounters::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return data_;
}

namespace {

// Label values escape backslash, quote and newline (exposition format).
std::string escape_label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

class Writer {
 public:
  explicit Writer(std::string model_label) : model_(std::move(model_label)) {}

  void header(const std::string& name, const char* type, const char* help) {
    out_ << "# HELP aphrodite:" << name << " " << help << "\n# TYPE aphrodite:" << name << " "
         << type << "\n";
  }
  void sample(const std::string& name, double value, const std::string& extra_labels = "") {
    out_ << "aphrodite:" << name << "{model_name=\"" << model_ << "\"" << extra_labels << "} "
         << number(value) << "\n";
  }
  void gauge(const std::string& name, const char* help, double value) {
    header(name, "gauge", help);
    sample(name, value);
  }
  void counter(const std::string& name, const char* help, double value) {
    header(name, "counter", help);
    sample(name + "_total", value);
  }
  void histogram(const std::string& name, const char* help, const engine::Histogram& h) {
    header(name, "histogram", help);
    uint64_t cumulative = 0;
    for (size_t i = 0; i < h.upper_bounds.size(); ++i) {
      if (i < h.bucket_counts.size()) cumulative += h.bucket_counts[i];
      sample(name + "_bucket", double(cumulative), ",le=\"" + number(h.upper_bounds[i]) + "\"");
    }
    // +Inf holds every observation, whether or not the engine kept an overflow bucket.
    sample(name + "_bucket", double(std::max<uint64_t>(h.count, cumulative)), ",le=\"+Inf\"");
    sample(name + "_sum", h.sum);
    sample(name + "_count", double(std::max<uint64_t>(h.count, cumulative)));
  }
  std::ostringstream& raw() { return out_; }
  std::string str() const { return out_.str(); }

 private:
  std::string model_;
  std::ostringstream out_;
};

}  // namespace

std::string render_metrics(const engine::EngineStats* stats, const std::string& model_name,
                           const HttpCounters::Snapshot& http) {
  engine::EngineStats zero;
  const engine::EngineStats& s = stats ? *stats : zero;
  Writer w(escape_label(model_name));
  w.gauge("model_ready", "1 once the model is loaded and the engine runs", stats ? 1 : 0);
  w.gauge("num_requests_running", "requests in the running batch", double(s.running));
  w.gauge("num_requests_waiting", "requests waiting to be scheduled", double(s.waiting));
  w.gauge("kv_cache_usage_perc", "fraction of KV-cache blocks in use (0..1)", s.kv_usage);
  w.counter("prompt_tokens", "prefill tokens processed", double(s.prompt_tokens));
  w.counter("generation_tokens", "tokens generated", double(s.generation_tokens));
  w.counter("prefix_cache_queries", "KV blocks looked up in the prefix cache",
            double(s.prefix_cache_queries));
  w.counter("prefix_cache_hits", "KV blocks found in the prefix cache", double(s.prefix_cache_hits));
  w.counter("num_preemptions", "sequences preempted for lack of KV blocks", double(s.preemptions));
  w.counter("request_success", "requests finished", double(s.requests_finished));
  w.histogram("time_to_first_token_seconds", "time from arrival to the first token",
              s.time_to_first_token);
  w.histogram("inter_token_latency_seconds", "time between consecutive output tokens",
              s.inter_token_latency);
  w.histogram("e2e_request_latency_seconds", "time from arrival to the last token", s.e2e_latency);

  auto& out = w.raw();
  out << "# HELP aphrodite:http_requests_total HTTP requests answered, by method and status\n"
         "# TYPE aphrodite:http_requests_total counter\n";
  for (const auto& [key, count] : http.requests) {
    out << "aphrodite:http_requests_total{method=\"" << escape_label(key.first) << "\",status=\""
        << key.second << "\"} " << count << "\n";
  }
  out << "# HELP aphrodite:http_response_bytes_total body bytes sent\n"
         "# TYPE aphrodite:http_response_bytes_total counter\n"
         "aphrodite:http_response_bytes_total "
      << http.response_bytes
      << "\n# HELP aphrodite:http_open_connections client connections open now\n"
         "# TYPE aphrodite:http_open_connections gauge\n"
         "aphrodite:http_open_connections "
      << http.open_connections << "\n";
  return w.str();
}

}  // namespace aph::server
