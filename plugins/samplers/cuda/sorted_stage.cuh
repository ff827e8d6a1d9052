// The two kernels of a stage that walks sorted rows (tail-free, skew), one
// block per row: the compact one takes the rows whose live tokens fit the
// compacted keys (sorted here, in shared memory), the full one the rows the
// compaction marked full (sorted whole by sort_full_rows). Stage::row(x, sx,
// sid, live, value) does the stage's work on a row: x its logits, (sx, sid)
// its `live` live tokens sorted, value its parameter.
#pragma once

#include "plugins/samplers/cuda/compact_row.cuh"
#include "plugins/samplers/cuda/sorted_scan.cuh"

namespace aph::samplers::cuda {

template <typename Stage, typename V>
__global__ void __launch_bounds__(kThreads) sorted_compact_kernel(LogitsView logits, const __grid_constant__ Rows<Indexed<V>> params,
                                      CompactRows rows) {
  dependent_start();
  __shared__ CompactSmem s;
  const int64_t live = take_compact_row(rows, blockIdx.x, true, s);
  if (live < 0) return;  // the full kernel's
  const Indexed<V> p = params[blockIdx.x];
  Stage::row(logits.data + static_cast<int64_t>(p.row) * logits.stride, s.row.x, s.row.id, live, p.value);
}

template <typename Stage, typename V>
__global__ void __launch_bounds__(kThreads) sorted_full_kernel(LogitsView logits, const __grid_constant__ Rows<Indexed<V>> params,
                                   SortedRows sorted) {
  dependent_start();
  if (!sorted.full[blockIdx.x]) return;  // done by the compact kernel
  const int64_t vocab = logits.vocab;
  const float* sx = sorted.logits + static_cast<int64_t>(blockIdx.x) * vocab;
  const Indexed<V> p = params[blockIdx.x];
  Stage::row(logits.data + static_cast<int64_t>(p.row) * logits.stride, sx,
             sorted.ids + static_cast<int64_t>(blockIdx.x) * vocab, sorted_live(sx, vocab), p.value);
}

template <typename Stage, typename V>
std::string launch_sorted_compact(LogitsView logits, int32_t n, const Rows<Indexed<V>>& params, CompactRows rows,
                                  void* stream, const char* name) {
  if (n == 0) return "";
  return launch_chained(name, sorted_compact_kernel<Stage, V>, dim3(n), dim3(kThreads), stream, logits, params, rows);
}

template <typename Stage, typename V>
std::string launch_sorted_full(LogitsView logits, int32_t n, const Rows<Indexed<V>>& params, SortedRows sorted,
                               void* stream, const char* name) {
  if (n == 0) return "";
  return launch_chained(name, sorted_full_kernel<Stage, V>, dim3(n), dim3(kThreads), stream, logits, params, sorted);
}

}  // namespace aph::samplers::cuda
