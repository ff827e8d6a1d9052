#include "plugins/samplers/cuda/sorted_launch.hpp"

#include <algorithm>

namespace aph::samplers {

namespace cuda {
namespace {
size_t align_up(size_t bytes) { return (bytes + 255) & ~size_t{255}; }
// Bytes of one of the four arrays for n rows.
size_t array_bytes(int32_t n, int64_t vocab) {
  return align_up(static_cast<size_t>(n) * static_cast<size_t>(vocab) * sizeof(uint32_t));
}
}  // namespace

size_t full_sort_scratch_bytes(int32_t n, int64_t vocab) {
  return full_sort_possible(vocab) && n > 0 ? 4 * array_bytes(n, vocab) : 0;
}

FullSortScratch carve_full_sort(void* base, int32_t n, int64_t vocab) {
  FullSortScratch f{};
  if (base == nullptr || full_sort_scratch_bytes(n, vocab) == 0) return f;
  auto* p = static_cast<char*>(base);
  const size_t step = array_bytes(n, vocab);
  for (int b = 0; b < 2; ++b) {
    f.keys[b] = reinterpret_cast<uint32_t*>(p + (2 * b) * step);
    f.ids[b] = reinterpret_cast<int32_t*>(p + (2 * b + 1) * step);
  }
  return f;
}
}  // namespace cuda

namespace {
// The full sort takes 16 bytes a logit (32-bit keys and ids, twice for the
// radix passes); a batch past this many bytes goes in several chunks.
constexpr size_t kSortScratchCap = size_t{96} << 20;
// The kernel puts a chunk's rows on the grid's y.
constexpr int32_t kMaxChunkRows = 65535;
}  // namespace

void for_sorted_chunks(PluginState& st, const char* stage, const aph_sampler_batch& b, int32_t n, aph_stream stream,
                       const SortedLaunch& launch) {
  if (n <= 0) return;
  const int64_t vocab = b.logits.shape[1];
  const size_t row_bytes = cuda::full_sort_scratch_bytes(1, vocab);
  const int32_t chunk = static_cast<int32_t>(std::clamp<int64_t>(
      row_bytes == 0 ? n : static_cast<int64_t>(kSortScratchCap / row_bytes), 1, std::min(n, kMaxChunkRows)));
  const size_t bytes = cuda::full_sort_scratch_bytes(chunk, vocab);
  // One buffer for every sorted stage: they run one after another on the stream.
  void* scratch = bytes == 0 ? nullptr : st.scratch("sorted_rows", b.logits.device, bytes, stream);
  const cuda::FullSortScratch full = cuda::carve_full_sort(scratch, chunk, vocab);
  for (int32_t first = 0; first < n; first += chunk) {
    check_launch(launch(first, std::min(chunk, n - first), full), stage);
  }
}

}  // namespace aph::samplers
