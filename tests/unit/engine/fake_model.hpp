// A model runner and tokenizer for engine tests. The "model" keeps the token
// ids it is given in its own paged KV pool (through slot_mapping) and derives
// each logits row from the whole context read back through the block table,
// so a wrong table, slot or prefix hit changes the generated tokens; and it is
// batch-invariant by construction, so every expected output has a reference
// (reference_continuation) computed without any cache.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "core/model/model_runner.hpp"
#include "core/plugins/registry.hpp"
#include "core/text/tokenizer.hpp"

namespace aph::test {

// ids: 0 <s>, 1 </s> (both special), 2 ' ', 3..28 'a'..'z', 29..38 '0'..'9',
// 39..62 'A'..'X', 63 '!'. A prompt whose first text token is '!' makes the
// model emit </s> once the sequence reaches 12 tokens.
class FakeTokenizer : public text::Tokenizer {
 public:
  FakeTokenizer();
  std::vector<int32_t> encode(std::string_view text,
                              const text::EncodeOptions& options) const override;
  std::string token_bytes(int32_t id) const override;
  const std::string& token_text(int32_t id) const override;
  std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const override;
  bool is_special(int32_t id) const override { return id == 0 || id == 1; }
  int32_t vocab_size() const override { return 64; }
  int32_t bos_id() const override { return 0; }
  int32_t eos_id() const override { return 1; }
  std::vector<int32_t> eog_ids() const override { return {1}; }
  bool adds_bos() const override { return true; }
  bool adds_eos() const override { return false; }
  bool strips_leading_space() const override { return false; }

 private:
  std::vector<std::string> texts_;
};

// The next token the fake model picks after `context`.
int32_t fake_next_token(const std::vector<int32_t>& context);
std::vector<int32_t> reference_continuation(std::vector<int32_t> prompt, int n, bool stop_at_eos);

class FakeRunner : public model::ModelRunner {
 public:
  explicit FakeRunner(int64_t max_model_len = 256);

  const model::ModelInfo& info() const override { return info_; }
  const text::Tokenizer& tokenizer() const override { return tokenizer_; }
  int32_t device() const override { return APH_DEVICE_CPU; }
  int64_t kv_bytes_per_block(int block_size, model::KvDtype) const override {
    return block_size * 4;
  }
  void allocate_kv_cache(int num_blocks, int block_size, model::KvDtype dtype) override;
  int64_t profile_peak_bytes(int) override { return 0; }
  void capture_decode_graphs(const std::vector<int>&, int) override {}
  Tensor forward(const model::StepBatch& batch) override;
  void* stream() const override { return nullptr; }

  // Holds every forward() until opened (to fill queues deterministically).
  void close_gate();
  void open_gate();
  // forward() throws while a batch holds this token id (-1: never).
  std::atomic<int32_t> fail_on_token{-1};
  std::atomic<int> forwards{0};
  std::atomic<int> waiting_at_gate{0};
  std::atomic<int> max_batch_seqs{0};
  int num_blocks() const { return num_blocks_; }

 private:
  model::ModelInfo info_;
  FakeTokenizer tokenizer_;
  std::vector<int32_t> kv_;  // slot -> token id
  int num_blocks_ = 0;
  int block_size_ = 0;
  std::mutex gate_mu_;
  std::condition_variable gate_cv_;
  bool gate_open_ = true;
};

// One sampler "plugin" with a single greedy selection stage, in-process, so
// engine tests run the real sampler chain without loading .so files.
PluginRegistry greedy_sampler_registry();

}  // namespace aph::test
