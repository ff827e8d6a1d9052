// The rows of a batch a stage works on, as CPU code sees them, and the host
// round trip for stages that have no kernel for the batch's device.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "aphrodite/sampler.h"

namespace aph::samplers {

template <typename P>
struct CpuRow {
  P* params;                   // never null here: rows without params are skipped
  float* logits;               // vocab entries, in place
  int64_t vocab;
  const aph_sampler_row* row;  // history, seed, step
  int32_t* chosen;             // -1 until a selection stage decides
};

// Throws naming the stage when the batch's tensors are not F32 [n, vocab] /
// I32 [n] with unit inner stride.
void check_batch(const aph_sampler_batch& batch, const char* stage);

template <typename P>
std::vector<CpuRow<P>> cpu_rows(const aph_sampler_batch& b) {
  std::vector<CpuRow<P>> rows;
  const int64_t vocab = b.logits.shape[1];
  const int64_t stride = b.logits.strides[0];
  for (uint32_t i = 0; i < b.n_rows; ++i) {
    if (b.rows[i].params == nullptr) continue;
    rows.push_back({static_cast<P*>(b.rows[i].params), static_cast<float*>(b.logits.data) + i * stride, vocab,
                    &b.rows[i], static_cast<int32_t*>(b.chosen.data) + i});
  }
  return rows;
}

// Copies the rows that have params to host memory, runs `body` on a host
// batch of just those rows, and copies logits and chosen back. Synchronizes
// `stream`. Only for device batches (CUDA builds).
void run_on_host_copy(const aph_sampler_batch& batch, aph_stream stream,
                      const std::function<void(const aph_sampler_batch&)>& body);

}  // namespace aph::samplers
