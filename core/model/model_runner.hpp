// Loads a checkpoint (HF directory or a plugin's container such as GGUF) and
// runs one engine step: embedding -> layers (paged attention) -> logits.
#pragma once

#include <boost/json.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/common/error.hpp"
#include "core/common/tensor.hpp"
#include "core/plugins/registry.hpp"
#include "core/text/tokenizer.hpp"

namespace aph::model {

struct LoadOptions {
  std::string path;               // HF dir, .safetensors dir, .gguf, ...
  std::string quantization;       // "" = highest probe score
  std::string dtype = "auto";     // activations: auto | float32 | float16 | bfloat16
  int32_t device = APH_DEVICE_CPU;
  int64_t max_model_len = 0;      // 0 = the model's
  int cpu_threads = 0;            // 0 = all cores
};

enum class KvDtype { F32, F16, BF16, F8_E4M3, F8_E5M2 };

// One engine step over several sequences, all in host memory; the runner
// uploads what it needs. Tokens of a sequence are contiguous.
struct StepBatch {
  std::vector<int32_t> token_ids;     // [n_tokens]
  std::vector<int32_t> positions;     // [n_tokens]
  std::vector<int32_t> query_start;   // [n_seqs + 1] offsets into token_ids
  std::vector<int32_t> context_lens;  // [n_seqs] tokens in the KV cache after this step
  std::vector<int32_t> block_tables;  // [n_seqs * max_blocks_per_seq], unused entries 0
  int32_t max_blocks_per_seq = 0;
  std::vector<int64_t> slot_mapping;  // [n_tokens] block * block_size + offset for each new K/V
  std::vector<int32_t> logits_indices;  // token rows that need logits (usually each seq's last)
  int n_seqs() const { return static_cast<int>(query_start.size()) - 1; }
  bool decode_only() const { return static_cast<int>(token_ids.size()) == n_seqs(); }
};

struct ModelInfo {
  std::string architecture;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t max_model_len = 0;
  aph_dtype act_dtype = APH_DTYPE_F32;
  boost::json::object generation_defaults;  // generation_config.json sampling values
  std::string chat_template;                // the model's own, or ""
  std::string bos_token, eos_token;         // texts, for templates
};

class ModelRunner {
 public:
  virtual ~ModelRunner() = default;
  // Throws aph::Error naming the file, tensor or config field at fault.
  static std::unique_ptr<ModelRunner> load(const LoadOptions& options, const PluginRegistry& plugins);

  virtual const ModelInfo& info() const = 0;
  virtual const text::Tokenizer& tokenizer() const = 0;
  virtual int32_t device() const = 0;

  // KV cache: per layer K and V of [num_blocks, block_size, num_kv_heads, head_dim].
  virtual int64_t kv_bytes_per_block(int block_size, KvDtype dtype) const = 0;
  virtual void allocate_kv_cache(int num_blocks, int block_size, KvDtype dtype) = 0;
  // Bytes of device memory in use after loading weights and one profiling step
  // of max_num_batched_tokens tokens (for sizing the KV pool).
  virtual int64_t profile_peak_bytes(int max_num_batched_tokens) = 0;

  // Captures CUDA graphs for decode-only batches of these sizes (no-op on CPU).
  virtual void capture_decode_graphs(const std::vector<int>& batch_sizes, int max_blocks_per_seq) = 0;

  // Runs the step. Returns F32 logits [logits_indices.size(), vocab] on the
  // runner's device, valid until the next forward().
  virtual Tensor forward(const StepBatch& batch) = 0;
  // forward() of a decode-only batch whose token ids are not on the host
  // yet: ids[i] (on the runner's device, one per sequence) replaces
  // batch.token_ids[i] in stream order, so the step can be queued before the
  // previous step's sampling has finished. The default serves CPU runners,
  // where ids is host memory.
  virtual Tensor forward_fed(const StepBatch& batch, const int32_t* ids) {
    if (device() != APH_DEVICE_CPU)
      throw Error(APH_ERR_UNSUPPORTED, "model runner: this runner cannot take token ids from the device");
    if (!batch.decode_only()) throw invalid_argument("forward_fed: a batch of decodes only");
    StepBatch fed = batch;
    std::copy(ids, ids + fed.n_seqs(), fed.token_ids.begin());
    return forward(fed);
  }
  // The stream all of the step's work runs on (nullptr on CPU).
  virtual void* stream() const = 0;
};

}  // namespace aph::model
