// Host side of the stages that walk sorted rows (tail-free, skew, mirostat):
// the active rows go in chunks whose scratch fits a bounded buffer; per chunk,
// their live logits are compacted, the stage's compact kernel does the rows
// with at most kCompactCap live tokens, and the rows it marks full are sorted
// whole for the stage's full kernel. Only compiled with CUDA.
#pragma once

#include <functional>
#include <string>

#include "plugins/samplers/cuda/device_params.hpp"

namespace aph::samplers {

// The stage's kernels on active rows [first, first + count): slot r of the
// chunk is active row first + r.
struct SortedLaunch {
  std::function<std::string(int32_t first, int32_t count, const cuda::CompactRows& rows)> compact;
  std::function<std::string(int32_t first, int32_t count, const cuda::SortedRows& sorted)> full;
};

// row_index: device, the batch row of each of the n active rows. Everything
// goes on `stream`; nothing waits for it (unless the scratch has to grow).
// Throws naming `stage` when a sort or a launch fails.
void for_sorted_chunks(PluginState& st, const char* stage, const aph_sampler_batch& b, const int32_t* row_index,
                       int32_t n, aph_stream stream, const SortedLaunch& launch);

}  // namespace aph::samplers
