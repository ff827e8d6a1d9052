// Host side of the stages that walk sorted rows (tail-free, skew, mirostat):
// the active rows go in chunks whose full-sort scratch fits a bounded buffer,
// one kernel launch a chunk (sorted_row.cuh). Only compiled with CUDA.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "plugins/samplers/cuda/device_params.hpp"

namespace aph::samplers {

// The stage's kernel on active rows [first, first + count): slot r of the
// chunk is active row first + r, and `full` its full-sort scratch.
using SortedLaunch =
    std::function<std::string(int32_t first, int32_t count, const cuda::FullSortScratch& full)>;

// n: the active rows. Everything goes on `stream`; nothing waits for it
// (unless the scratch has to grow). Throws naming `stage` when a launch fails.
void for_sorted_chunks(PluginState& st, const char* stage, const aph_sampler_batch& b, int32_t n, aph_stream stream,
                       const SortedLaunch& launch);

// A stage with one value per row (value(params)) and a launcher of
// kernels.hpp's tail-free / skew shape, over the rows that use it.
template <typename P, typename V, typename Value, typename Launch>
void for_sorted_rows(PluginState& st, const char* stage, const aph_sampler_batch& b, aph_stream stream, Value value,
                     Launch launch) {
  std::vector<cuda::Indexed<V>> values;
  for (uint32_t i = 0; i < b.n_rows; ++i) {
    if (auto* p = static_cast<P*>(b.rows[i].params)) values.push_back({static_cast<int32_t>(i), value(*p)});
  }
  if (values.empty()) return;
  const auto table = row_table(st, std::string(stage) + ".rows", values, b, stream);
  const auto n = static_cast<int32_t>(values.size());
  const cuda::LogitsView logits = live_logits_view(st, b, stream);  // listed rows are read at their lists
  for_sorted_chunks(st, stage, b, n, stream, [&](int32_t first, int32_t count, const cuda::FullSortScratch& full) {
    return launch(logits, count, cuda::rows_from(table, first, n), full, stream);
  });
}

}  // namespace aph::samplers
