#include "plugins/samplers/cuda/sorted_launch.hpp"

#include <algorithm>

namespace aph::samplers {

namespace {
// The full sort takes 16 bytes a logit (32-bit keys and ids, twice for the
// radix passes) besides 32 KiB a row of compacted keys; a batch past this
// many bytes goes in several chunks.
constexpr size_t kSortScratchCap = size_t{96} << 20;
constexpr const char* kCounts = "sorted_rows.counts";
}  // namespace

void for_sorted_chunks(PluginState& st, const char* stage, const aph_sampler_batch& b,
                       const std::vector<int32_t>& rows, aph_stream stream, const SortedLaunch& launch) {
  const auto n = static_cast<int32_t>(rows.size());
  if (n <= 0) return;
  const cuda::RowIndex row_index = row_table(st, "sorted_rows.index", rows, b, stream);
  const int64_t vocab = b.logits.shape[1];
  const size_t row_bytes = cuda::sort_rows_scratch(1, vocab);
  // At most 65535 rows a chunk: the compaction puts the rows on the grid's y.
  const int32_t chunk = static_cast<int32_t>(std::clamp<int64_t>(
      static_cast<int64_t>(kSortScratchCap / std::max<size_t>(row_bytes, 1)), 1, std::min<int64_t>(n, 65535)));
  const size_t bytes = cuda::sort_rows_scratch(chunk, vocab);
  // One buffer for every sorted stage: they run one after another on the stream.
  void* scratch = st.scratch("sorted_rows", b.logits.device, bytes, stream);
  // Zero between stages: each compact kernel clears the counts it read.
  auto* counts = static_cast<int32_t*>(
      st.filled_scratch(kCounts, b.logits.device, cuda::compact_rows_counts_bytes(chunk), 0x00, stream));
  const cuda::LogitsView logits = logits_view(b);
  const cuda::LogitsView live = live_logits_view(st, b, stream);  // the compaction reads listed rows' lists
  auto check = [&](const std::string& error) {
    if (!error.empty()) st.drop_scratch(kCounts);  // may be left nonzero
    check_launch(error, stage);
  };
  for (int32_t first = 0; first < n; first += chunk) {
    const int32_t count = std::min(chunk, n - first);
    const cuda::RowIndex chunk_rows = cuda::rows_from(row_index, first, n);
    cuda::CompactRows compact{};
    check(cuda::compact_rows(live, count, chunk_rows, scratch, bytes, counts, &compact, stream));
    check(launch.compact(first, count, compact));
    if (!cuda::full_sort_possible(vocab)) continue;
    cuda::SortedRows sorted{};
    check(cuda::sort_full_rows(logits, count, chunk_rows, scratch, bytes, compact, &sorted, stream));
    check(launch.full(first, count, sorted));
  }
}

}  // namespace aph::samplers
