// Sizing the paged KV pool and choosing what to capture, from EngineConfig and
// what the model runner reports. Pure functions, so the arithmetic is tested
// without a device.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/model_runner.hpp"

namespace aph::engine {

// "auto" follows the activations (fp32 on a CPU-only fp32 model); the fp8
// names select fp8 storage with per-layer scales. Throws naming kv_cache_dtype.
model::KvDtype parse_kv_dtype(const std::string& name, aph_dtype activation_dtype);
const char* kv_dtype_name(model::KvDtype dtype);

struct PoolInputs {
  bool cuda = false;
  int64_t total_device_bytes = 0;  // CUDA: the card's memory
  int64_t peak_bytes = 0;          // CUDA: after weights + one profiling step
  double gpu_memory_utilization = 0.9;
  int64_t kv_cache_memory = 0;  // > 0 overrides the fraction
  int64_t cpu_kv_cache_bytes = 0;
  int64_t bytes_per_block = 0;
};

// Number of blocks; throws aph::Error naming the setting to change when the
// budget leaves no room.
int64_t kv_pool_blocks(const PoolInputs& in);

// 1, 2, 4, 8, then steps of 8 up to max_num_seqs (max_num_seqs included).
std::vector<int> decode_graph_batch_sizes(int max_num_seqs);

}  // namespace aph::engine
