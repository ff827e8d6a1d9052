// The serving engine: model, paged KV cache, scheduler, sampler chain, and the
// aph_engine_api that API plugins call.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "aphrodite/api.h"
#include "core/plugins/registry.hpp"

namespace aph::model {
class ModelRunner;
}

namespace aph::engine {

struct EngineConfig {
  std::string model_path;
  std::string served_model_name;        // "" = derived from the path
  std::string dtype = "auto";           // auto | float32 | float16 | bfloat16
  std::string quantization;             // "" = highest probe score
  std::string kv_cache_dtype = "auto";  // auto | fp16 | bf16 | fp8 | fp8_e4m3 | fp8_e5m2
  std::string chat_template;            // "" = the model's; else a file path or inline Jinja
  std::string device = "auto";          // cpu | cuda | auto
  int64_t max_model_len = 0;            // 0 = the model's
  double gpu_memory_utilization = 0.9;
  int64_t kv_cache_memory = 0;  // bytes; overrides gpu_memory_utilization when > 0
  int64_t cpu_kv_cache_bytes = 256ll << 20;
  int max_num_seqs = 64;
  int max_num_batched_tokens = 2048;
  int block_size = 16;
  int max_waiting = 1024;  // queue bound: beyond it submit() answers APH_ERR_BUSY
  bool enforce_eager = false;
  // Queue a decode step before the previous step's tokens reach the host
  // (the sampler feeds them on the device), so the GPU does not idle while
  // the host reads tokens and schedules. Only for steps of decodes alone
  // with nothing waiting.
  bool overlap_decode = false;
  bool enable_prefix_caching = true;
  std::vector<std::string> sampler_order;  // empty = each stage's default position
  int cpu_threads = 0;                     // 0 = all cores
};

struct Histogram {
  std::vector<double> upper_bounds;     // seconds, ascending; +Inf implied
  std::vector<uint64_t> bucket_counts;  // cumulative is computed by the renderer
  double sum = 0;
  uint64_t count = 0;
};

struct EngineStats {
  int64_t running = 0;
  int64_t waiting = 0;
  double kv_usage = 0;  // fraction of KV blocks in use
  uint64_t prompt_tokens = 0;
  uint64_t generation_tokens = 0;
  uint64_t prefix_cache_queries = 0;  // blocks looked up
  uint64_t prefix_cache_hits = 0;
  uint64_t preemptions = 0;
  uint64_t overlapped_steps = 0;  // steps queued before the previous step's tokens were read
  uint64_t requests_finished = 0;
  int64_t num_kv_blocks = 0;
  Histogram time_to_first_token;
  Histogram inter_token_latency;
  Histogram e2e_latency;
};

class Engine {
 public:
  virtual ~Engine() = default;
  // Loads the model and starts the engine thread. Slow (seconds); throws
  // aph::Error naming the file, tensor or setting at fault.
  static std::unique_ptr<Engine> create(const EngineConfig& config, const PluginRegistry& plugins);
  // The same around a runner that is already loaded (tests, benchmarks).
  static std::unique_ptr<Engine> create_with_runner(const EngineConfig& config,
                                                    std::unique_ptr<model::ModelRunner> runner,
                                                    const PluginRegistry& plugins);

  // Valid for the engine's lifetime; every function is thread-safe.
  virtual const aph_engine_api* api() const = 0;
  virtual EngineStats stats() const = 0;
  // Finishes or aborts in-flight requests and joins the engine thread.
  virtual void shutdown() = 0;
};

}  // namespace aph::engine
