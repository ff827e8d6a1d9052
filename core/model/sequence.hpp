// Runs one sequence through a ModelRunner without the engine: a contiguous
// block table over a KV cache sized for the sequence. For `aphrodited
// generate`, the oracle tests and benchmarks.
#pragma once

#include <vector>

#include "core/model/model_runner.hpp"

namespace aph::model {

class SingleSequence {
 public:
  // Allocates the runner's KV cache for max_tokens tokens. The KV dtype is
  // F32 on the CPU and the activation dtype on CUDA.
  SingleSequence(ModelRunner& runner, int64_t max_tokens, int block_size = 16);

  // Appends `tokens` and returns F32 logits on the host: one row per token
  // when all_logits, else only the last token's row.
  std::vector<float> append(const std::vector<int32_t>& tokens, bool all_logits = false);
  int64_t length() const { return length_; }
  int64_t capacity() const { return max_tokens_; }
  void reset() { length_ = 0; }

 private:
  ModelRunner& runner_;
  int64_t max_tokens_;
  int block_size_;
  int32_t blocks_;
  int64_t length_ = 0;
};

// Index of the largest value (first on ties).
int32_t argmax(const float* values, int64_t n);

}  // namespace aph::model
