// Penalties on the GPU: a per-row table over the vocabulary (seen-in-window
// flag + output count, and the newest window position for Kobold's slope),
// filled by atomics over the history, then one pass over the logits doing
// exactly the CPU stage's float operations.
#include "plugins/samplers/cuda/block_reduce.cuh"
#include "plugins/samplers/cuda/kernels.hpp"
#include "plugins/samplers/penalty_math.hpp"

namespace aph::samplers::cuda {
namespace {

// table[v] = output_count * 2 + seen_in_window; newest[v] = newest window position or -1.
__global__ void penalty_count_kernel(int64_t vocab, const PenaltyRow* rows, int32_t* table,
                                     int32_t* newest) {
  const PenaltyRow p = rows[blockIdx.y];
  int32_t* t = table + static_cast<int64_t>(blockIdx.y) * vocab;
  int32_t* nw = newest + static_cast<int64_t>(blockIdx.y) * vocab;
  const int32_t* h = p.history;
  const int32_t start = p.range > 0 && p.n_tokens > p.range ? p.n_tokens - p.range : 0;
  const bool rep = p.repetition != 1.0f;
  const bool out = p.frequency != 0.0f || p.presence != 0.0f;
  for (int32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < p.n_tokens; i += gridDim.x * blockDim.x) {
    const int32_t tok = h[i];
    if (tok < 0 || tok >= vocab) continue;
    if (rep && i >= start) {
      if ((t[tok] & 1) == 0) atomicOr(&t[tok], 1);
      if (p.slope != 0.0f) atomicMax(&nw[tok], i - start);
    }
    if (out && i >= p.n_prompt) atomicAdd(&t[tok], 2);
  }
}

__global__ void penalty_apply_kernel(LogitsView logits, const PenaltyRow* rows, const int32_t* table,
                                     const int32_t* newest) {
  const PenaltyRow p = rows[blockIdx.y];
  float* x = logits.data + static_cast<int64_t>(p.row) * logits.stride;
  const int32_t* t = table + static_cast<int64_t>(blockIdx.y) * logits.vocab;
  const int32_t* nw = newest + static_cast<int64_t>(blockIdx.y) * logits.vocab;
  const int32_t start = p.range > 0 && p.n_tokens > p.range ? p.n_tokens - p.range : 0;
  const int32_t window = p.n_tokens - start;
  for (int64_t v = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; v < logits.vocab;
       v += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int32_t e = t[v];
    if (e == 0) continue;
    float value = x[v];
    if (e & 1) {
      const float pen = p.slope != 0.0f ? rep_pen_at(p.repetition, p.slope, nw[v], window) : p.repetition;
      value = value > 0.0f ? __fdiv_rn(value, pen) : __fmul_rn(value, pen);
    }
    const int32_t count = e >> 1;
    if (count > 0) value = __fsub_rn(value, __fadd_rn(__fmul_rn(p.frequency, static_cast<float>(count)), p.presence));
    x[v] = value;
  }
}

}  // namespace

std::string launch_penalties(LogitsView logits, int32_t n, const PenaltyRow* rows, int32_t* scratch,
                             bool any_slope, void* stream) {
  if (n == 0) return "";
  auto s = static_cast<cudaStream_t>(stream);
  const size_t table_bytes = static_cast<size_t>(n) * logits.vocab * sizeof(int32_t);
  int32_t* table = scratch;
  int32_t* newest = scratch + static_cast<size_t>(n) * logits.vocab;
  if (cudaMemsetAsync(table, 0, table_bytes, s) != cudaSuccess) return launch_error("penalty table memset");
  // Only Kobold's slope reads the newest positions.
  if (any_slope && cudaMemsetAsync(newest, 0xFF, table_bytes, s) != cudaSuccess) {
    return launch_error("penalty newest memset");
  }
  penalty_count_kernel<<<dim3(8, n), 256, 0, s>>>(logits.vocab, rows, table, newest);
  std::string err = launch_error("penalty_count_kernel");
  if (!err.empty()) return err;
  const int blocks = static_cast<int>((logits.vocab + 4095) / 4096);
  penalty_apply_kernel<<<dim3(blocks, n), 256, 0, s>>>(logits, rows, table, newest);
  return launch_error("penalty_apply_kernel");
}

}  // namespace aph::samplers::cuda
