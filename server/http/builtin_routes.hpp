// The host's own routes: GET /health (503 until the model is ready), GET
// /version and GET /metrics. Registered through the same aph_route table as
// the plugins' routes.
#pragma once

#include <atomic>
#include <string>

#include "core/engine/engine.hpp"
#include "server/http/metrics.hpp"
#include "server/http/route_table.hpp"

namespace aph::server {

enum class ModelPhase { Loading = 0, Ready = 1, NoModel = 2, Failed = 3, Stopping = 4 };

struct HostStatus {
  std::atomic<int> phase{static_cast<int>(ModelPhase::Loading)};
  // Set once the engine runs; read by /metrics. Cleared before it is destroyed.
  std::atomic<const engine::Engine*> engine{nullptr};
  std::string model_name;
  const HttpCounters* counters = nullptr;

  void set_phase(ModelPhase p) { phase.store(static_cast<int>(p)); }
  ModelPhase get_phase() const { return static_cast<ModelPhase>(phase.load()); }
};

// `status` must outlive the table's use.
void register_builtin_routes(RouteTable& routes, HostStatus& status);

// The JSON error body the host writes: {"error":{"message","type","code"}}.
std::string host_error_json(int32_t status, const std::string& message);

}  // namespace aph::server
