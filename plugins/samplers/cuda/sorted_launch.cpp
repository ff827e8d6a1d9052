#include "plugins/samplers/cuda/sorted_launch.hpp"

#include <algorithm>

namespace aph::samplers {

namespace {
// Sorted copies take 24 bytes a logit (64-bit keys and ids, twice for the
// radix passes); a batch past this many bytes sorts in several chunks.
constexpr size_t kSortScratchCap = size_t{96} << 20;
}  // namespace

void for_sorted_chunks(PluginState& st, const char* stage, const aph_sampler_batch& b, const int32_t* row_index,
                       int32_t n, aph_stream stream, const SortedLaunch& launch) {
  if (n <= 0) return;
  const int64_t vocab = b.logits.shape[1];
  const size_t row_bytes = cuda::sort_rows_scratch(1, vocab);
  // At most 65535 rows a chunk: sort_rows puts the rows on the grid's y.
  const int32_t chunk = static_cast<int32_t>(std::clamp<int64_t>(
      static_cast<int64_t>(kSortScratchCap / std::max<size_t>(row_bytes, 1)), 1, std::min<int64_t>(n, 65535)));
  const size_t bytes = cuda::sort_rows_scratch(chunk, vocab);
  // One buffer for every sorted stage: they run one after another on the stream.
  void* scratch = st.scratch("sorted_rows", b.logits.device, bytes, stream);
  for (int32_t first = 0; first < n; first += chunk) {
    const int32_t count = std::min(chunk, n - first);
    cuda::SortedRows sorted{};
    check_launch(cuda::sort_rows(logits_view(b), count, row_index + first, scratch, bytes, &sorted, stream), stage);
    check_launch(launch(first, count, sorted), stage);
  }
}

}  // namespace aph::samplers
