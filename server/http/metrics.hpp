// GET /metrics: Prometheus text exposition of the engine's statistics and the
// server's own counters, every name prefixed "aphrodite:".
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "core/engine/engine.hpp"

namespace aph::server {

// Thread-safe; one per server.
class HttpCounters {
 public:
  void record(const std::string& method, int status, uint64_t response_bytes);
  void connection_opened();
  void connection_closed();

  struct Snapshot {
    std::map<std::pair<std::string, int>, uint64_t> requests;  // (method, status) -> count
    uint64_t response_bytes = 0;
    int64_t open_connections = 0;
  };
  Snapshot snapshot() const;

 private:
  mutable std::mutex mutex_;
  Snapshot data_;
};

// `stats` null: the engine is not running yet; its series read zero.
std::string render_metrics(const engine::EngineStats* stats, const std::string& model_name,
                           const HttpCounters::Snapshot& http);

}  // namespace aph::server
