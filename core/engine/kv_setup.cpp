#include "core/engine/kv_setup.hpp"

#include <algorithm>

#include "core/common/error.hpp"

namespace aph::engine {

model::KvDtype parse_kv_dtype(const std::string& name, aph_dtype activation_dtype) {
  using model::KvDtype;
  if (name == "auto" || name.empty()) {
    switch (activation_dtype) {
      case APH_DTYPE_F16:
        return KvDtype::F16;
      case APH_DTYPE_BF16:
        return KvDtype::BF16;
      default:
        return KvDtype::F32;
    }
  }
  if (name == "fp16" || name == "float16" || name == "half") return KvDtype::F16;
  if (name == "bf16" || name == "bfloat16") return KvDtype::BF16;
  if (name == "fp32" || name == "float32") return KvDtype::F32;
  if (name == "fp8" || name == "fp8_e4m3") return KvDtype::F8_E4M3;
  if (name == "fp8_e5m2") return KvDtype::F8_E5M2;
  throw invalid_argument("kv_cache_dtype: unknown value \"" + name +
                         "\" (auto, fp16, bf16, fp8, fp8_e4m3, fp8_e5m2)");
}

const char* kv_dtype_name(model::KvDtype dtype) {
  switch (dtype) {
    case model::KvDtype::F32:
      return "fp32";
    case model::KvDtype::F16:
      return "fp16";
    case model::KvDtype::BF16:
      return "bf16";
    case model::KvDtype::F8_E4M3:
      return "fp8_e4m3";
    case model::KvDtype::F8_E5M2:
      return "fp8_e5m2";
  }
  return "?";
}

int64_t kv_pool_blocks(const PoolInputs& in) {
  if (in.bytes_per_block <= 0) throw Error(APH_ERR_INTERNAL, "KV bytes per block must be positive");
  int64_t budget;
  std::string setting;
  if (!in.cuda) {
    budget = in.cpu_kv_cache_bytes;
    setting = "cpu_kv_cache_bytes";
  } else if (in.kv_cache_memory > 0) {
    budget = in.kv_cache_memory;
    setting = "kv_cache_memory";
  } else {
    if (in.gpu_memory_utilization <= 0 || in.gpu_memory_utilization > 1)
      throw invalid_argument("gpu_memory_utilization: must be in (0, 1]");
    budget = static_cast<int64_t>(in.gpu_memory_utilization *
                                  static_cast<double>(in.total_device_bytes)) -
             in.peak_bytes;
    setting = "gpu_memory_utilization";
  }
  const int64_t blocks = budget / in.bytes_per_block;
  if (blocks <= 0)
    throw invalid_argument(setting + ": leaves no memory for the KV cache (budget " +
                           std::to_string(budget) + " bytes, one block needs " +
                           std::to_string(in.bytes_per_block) + ")");
  return blocks;
}

std::vector<int> decode_graph_batch_sizes(int max_num_seqs) {
  std::vector<int> sizes;
  for (int b : {1, 2, 4}) {
    if (b <= max_num_seqs) sizes.push_back(b);
  }
  for (int b = 8; b <= max_num_seqs; b += 8) sizes.push_back(b);
  if (sizes.empty() || sizes.back() != max_num_seqs) sizes.push_back(max_num_seqs);
  return sizes;
}

}  // namespace aph::engine
