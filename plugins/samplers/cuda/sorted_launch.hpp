// Host side of the stages that walk sorted rows (tail-free, skew, mirostat):
// the active rows are sorted in chunks whose sorted copies fit a bounded
// scratch buffer, and the stage's kernel runs on each chunk. Only compiled
// with CUDA.
#pragma once

#include <functional>
#include <string>

#include "plugins/samplers/cuda/device_params.hpp"

namespace aph::samplers {

// The stage's kernel on active rows [first, first + count): row r of
// `sorted` is active row first + r.
using SortedLaunch = std::function<std::string(int32_t first, int32_t count, const cuda::SortedRows& sorted)>;

// row_index: device, the batch row of each of the n active rows. Everything
// goes on `stream`; nothing waits for it (unless the scratch has to grow).
// Throws naming `stage` when a sort or a launch fails.
void for_sorted_chunks(PluginState& st, const char* stage, const aph_sampler_batch& b, const int32_t* row_index,
                       int32_t n, aph_stream stream, const SortedLaunch& launch);

}  // namespace aph::samplers
