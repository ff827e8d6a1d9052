#include "core/model/sequence.hpp"

#include "core/common/error.hpp"

namespace aph::model {

SingleSequence::SingleSequence(ModelRunner& runner, int64_t max_tokens, int block_size)
    : runner_(runner), max_tokens_(max_tokens), block_size_(block_size) {
  if (max_tokens <= 0) throw invalid_argument("sequence length must be positive");
  if (max_tokens > runner.info().max_model_len) {
    throw invalid_argument("sequence of " + std::to_string(max_tokens) + " tokens exceeds the model's context of " +
                           std::to_string(runner.info().max_model_len));
  }
  blocks_ = static_cast<int32_t>((max_tokens + block_size - 1) / block_size);
  KvDtype kv = KvDtype::F32;
  if (runner.device() != APH_DEVICE_CPU) kv = runner.info().act_dtype == APH_DTYPE_F16 ? KvDtype::F16 : KvDtype::BF16;
  runner.allocate_kv_cache(blocks_, block_size, kv);
}

std::vector<float> SingleSequence::append(const std::vector<int32_t>& tokens, bool all_logits) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n == 0) throw invalid_argument("nothing to append");
  if (length_ + n > max_tokens_) {
    throw invalid_argument("sequence would grow to " + std::to_string(length_ + n) + " tokens, beyond " +
                           std::to_string(max_tokens_));
  }
  StepBatch b;
  b.token_ids = tokens;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t pos = length_ + i;
    b.positions.push_back(static_cast<int32_t>(pos));
    b.slot_mapping.push_back(pos);  // block i holds positions [i*bs, (i+1)*bs): slot == position
    if (all_logits || i == n - 1) b.logits_indices.push_back(static_cast<int32_t>(i));
  }
  b.query_start = {0, static_cast<int32_t>(n)};
  b.context_lens = {static_cast<int32_t>(length_ + n)};
  b.max_blocks_per_seq = blocks_;
  for (int32_t i = 0; i < blocks_; ++i) b.block_tables.push_back(i);
  Tensor logits = runner_.forward(b);
  length_ += n;
  std::vector<float> host(static_cast<size_t>(logits.numel()));
  copy_bytes(host.data(), APH_DEVICE_CPU, logits.data(), logits.device(), logits.nbytes());
  return host;
}

int32_t argmax(const float* values, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (values[i] > values[best]) best = i;
  return static_cast<int32_t>(best);
}

}  // namespace aph::model
