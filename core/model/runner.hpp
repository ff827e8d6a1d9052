// The ModelRunner implementation: owns the weights (through the architecture
// object), the KV cache, the step workspaces and, on CUDA, the stream,
// cuBLAS handle and captured decode graphs.
#pragma once

#include <memory>

#include "core/model/decoder.hpp"
#include "core/model/device_context.hpp"
#include "core/model/model_runner.hpp"
#include "core/model/model_source.hpp"

namespace aph::model {

class Runner final : public ModelRunner {
 public:
  Runner(const LoadOptions& options, const PluginRegistry& plugins);
  ~Runner() override;

  const ModelInfo& info() const override { return info_; }
  const text::Tokenizer& tokenizer() const override;
  int32_t device() const override { return device_; }
  int64_t kv_bytes_per_block(int block_size, KvDtype dtype) const override;
  void allocate_kv_cache(int num_blocks, int block_size, KvDtype dtype) override;
  int64_t profile_peak_bytes(int max_num_batched_tokens) override;
  void capture_decode_graphs(const std::vector<int>& batch_sizes, int max_blocks_per_seq) override;
  Tensor forward(const StepBatch& batch) override;
  Tensor forward_fed(const StepBatch& batch, const int32_t* ids) override;
  void* stream() const override { return device_ctx_ ? device_ctx_->stream() : nullptr; }

 private:
  struct Meta {  // device views of one step's metadata
    Tensor ids, positions, query_start, context_lens, block_tables, slots, logits_idx;
  };
  void validate(const StepBatch& b) const;
  void reserve(int64_t tokens, int64_t seqs, int64_t max_blocks);
  Meta stage(const StepBatch& b, int64_t padded_seqs, int32_t table_width);
  // rows_in_order: the logits rows are the step's tokens, in order (decode),
  // so the final norm needs no gather. short_contexts: every context is at
  // most attention::kDecodeClusterContext (PagedAttentionArgs says why).
  Tensor run(const Meta& meta, int64_t n_tokens, int64_t n_seqs, int32_t table_width, int32_t max_query_len,
             int32_t max_context_len, bool short_contexts, int64_t n_logits, bool rows_in_order);
  // A decode batch size whose attention can merge through clusters (one
  // sequence) has two graphs: for short contexts and for the rest.
  static int graph_key(int batch_size, bool short_contexts) { return short_contexts ? -batch_size : batch_size; }
  // Whether a decode batch's attention merges through clusters (this model's head size decides too).
  bool uses_clusters(int batch_size, bool short_contexts) const;
  // Logits [n_logits, vocab] F32 from the model's final hidden states.
  Tensor head(const ops::Exec& exec, const FinalHidden& fh, const Tensor& idx, int64_t n_tokens, int64_t n_logits,
              bool rows_in_order);
  StepBatch padding_batch(int seqs, int32_t table_width) const;
  ops::Exec exec() const;

  int32_t device_;
  // forward_fed's token ids on the device: stage() copies them over the
  // staged ids (set only for the duration of that call).
  const int32_t* fed_ids_ = nullptr;
  int64_t baseline_bytes_ = 0;
  std::unique_ptr<DeviceContext> device_ctx_;
  std::unique_ptr<ops::ThreadPool> own_pool_;  // only when cpu_threads is set
  ops::ThreadPool* pool_ = nullptr;
  ResolvedModel resolved_;  // holds the weight source: destroyed after model_
  std::unique_ptr<text::Tokenizer> tokenizer_;
  std::unique_ptr<DecoderModel> model_;
  ModelSetup setup_;
  ModelInfo info_;

  std::vector<LayerKv> kv_;
  attention::KvLayout kv_layout_;
  int32_t pad_block_ = -1;  // an extra cache block that padded graph rows write into

  int64_t cap_tokens_ = 0, cap_seqs_ = 0, cap_blocks_ = 0;
  Tensor meta_dev_;  // packed metadata on the device (CUDA)
  size_t off_[7] = {};
  Tensor attn_workspace_;
  // The decode's split counters (PagedAttentionArgs::split_counters): zeroed
  // once here, kept zero by every decode.
  Tensor split_counters_;
  Tensor normed_logits_, lm_out_, logits_;
  int32_t graph_table_width_ = 0;
  std::vector<int> graph_sizes_;
};

}  // namespace aph::model
