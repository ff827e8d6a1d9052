// Host side of the stages that walk sorted rows (tail-free, skew, mirostat):
// the active rows go in chunks whose scratch fits a bounded buffer; per chunk,
// their live logits are compacted, the stage's compact kernel does the rows
// with at most kCompactCap live tokens, and the rows it marks full are sorted
// whole for the stage's full kernel. Only compiled with CUDA.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "plugins/samplers/cuda/device_params.hpp"

namespace aph::samplers {

// The stage's kernels on active rows [first, first + count): slot r of the
// chunk is active row first + r.
struct SortedLaunch {
  std::function<std::string(int32_t first, int32_t count, const cuda::CompactRows& rows)> compact;
  std::function<std::string(int32_t first, int32_t count, const cuda::SortedRows& sorted)> full;
};

// rows: the batch row of each active row. Everything goes on `stream`;
// nothing waits for it (unless the scratch has to grow). Throws naming
// `stage` when a sort or a launch fails.
void for_sorted_chunks(PluginState& st, const char* stage, const aph_sampler_batch& b,
                       const std::vector<int32_t>& rows, aph_stream stream, const SortedLaunch& launch);

// A stage with one value per row (value(params)) and the two launchers of
// kernels.hpp's tail-free / skew shape, over the rows that use it.
template <typename P, typename V, typename Value, typename Compact, typename Full>
void for_sorted_rows(PluginState& st, const char* stage, const aph_sampler_batch& b, aph_stream stream, Value value,
                     Compact compact, Full full) {
  std::vector<int32_t> rows;
  std::vector<cuda::Indexed<V>> values;
  for (uint32_t i = 0; i < b.n_rows; ++i) {
    if (auto* p = static_cast<P*>(b.rows[i].params)) {
      rows.push_back(static_cast<int32_t>(i));
      values.push_back({static_cast<int32_t>(i), value(*p)});
    }
  }
  if (rows.empty()) return;
  const auto table = row_table(st, std::string(stage) + ".rows", values, b, stream);
  const auto n = static_cast<int32_t>(rows.size());
  const cuda::LogitsView logits = logits_view(b);
  for_sorted_chunks(st, stage, b, rows, stream,
                    {[&](int32_t first, int32_t count, const cuda::CompactRows& c) {
                       return compact(logits, count, cuda::rows_from(table, first, n), c, stream);
                     },
                     [&](int32_t first, int32_t count, const cuda::SortedRows& sorted) {
                       return full(logits, count, cuda::rows_from(table, first, n), sorted, stream);
                     }});
}

}  // namespace aph::samplers
