// The kernel of a stage that walks sorted rows with one value per row
// (tail-free, skew): a row per cluster (blockIdx.y = its slot), sorted by
// sort_row_then (sorted_row.cuh); Stage::row(x, sx, sid, live, value) then
// does the stage's work in block 0: x the row's logits, (sx, sid) its `live`
// live tokens sorted, value its parameter.
#pragma once

#include "plugins/samplers/cuda/sorted_row.cuh"
#include "plugins/samplers/cuda/sorted_scan.cuh"

namespace aph::samplers::cuda {

template <typename Stage, typename V>
__global__ void __launch_bounds__(kThreads)
    sorted_stage_kernel(LogitsView logits, const __grid_constant__ Rows<Indexed<V>> params, FullSortScratch full) {
  dependent_start();
  __shared__ SortedRowSmem s;
  const Indexed<V> p = params[blockIdx.y];
  float* x = logits.data + static_cast<int64_t>(p.row) * logits.stride;
  sort_row_then(logits, p.row, blockIdx.y, full, s, [&](const float* sx, const int32_t* sid, int64_t live) {
    Stage::row(x, sx, sid, live, p.value);
  });
}

template <typename Stage, typename V>
std::string launch_sorted_stage(LogitsView logits, int32_t n, const Rows<Indexed<V>>& params, FullSortScratch full,
                                void* stream, const char* name) {
  return launch_split(sorted_stage_kernel<Stage, V>, n, stream, name, logits, params, full);
}

}  // namespace aph::samplers::cuda
