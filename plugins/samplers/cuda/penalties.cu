// Penalties on the GPU: a per-row table over the vocabulary (seen-in-window
// flag + output count, and the newest window position for Kobold's slope),
// filled by atomics over the history; then a second pass over the history
// where the first thread to claim a token's entry (atomicExch back to zero)
// applies exactly the CPU stage's float operations to it. Both passes cost
// the history's length, not the vocabulary's: the tables stay all zero (and
// all -1) between steps instead of being cleared, which for 64 rows of a 128k
// vocabulary was 32 MB of memset plus a 32 MB read per step.
#include "plugins/samplers/cuda/kernels.hpp"
#include "plugins/samplers/cuda/row_split.cuh"
#include "plugins/samplers/penalty_math.hpp"

namespace aph::samplers::cuda {
namespace {

// One kernel, a row per cluster (row_split.cuh), in two phases over the
// history: the counts, then (after a cluster barrier, which also orders the
// table's atomics) the claims. They were two kernels: one launch and one
// wait for the previous kernel fewer in every step.
// table[v] = output_count * 2 + seen_in_window; newest[v] = newest window position or -1.
__global__ void __launch_bounds__(kThreads) penalty_kernel(LogitsView logits, const __grid_constant__ Rows<PenaltyRow> rows,
                                                           int32_t* table, int32_t* newest) {
  dependent_start();
  const PenaltyRow p = rows[blockIdx.y];
  const int64_t vocab = logits.vocab;
  float* x = logits.data + static_cast<int64_t>(p.row) * logits.stride;
  int32_t* t = table + static_cast<int64_t>(blockIdx.y) * vocab;
  int32_t* nw = newest + static_cast<int64_t>(blockIdx.y) * vocab;
  const int32_t* h = p.history;
  const int32_t start = p.range > 0 && p.n_tokens > p.range ? p.n_tokens - p.range : 0;
  const int32_t window = p.n_tokens - start;
  const bool rep = p.repetition != 1.0f;
  const bool out = p.frequency != 0.0f || p.presence != 0.0f;
  for (int64_t i = split_first(); i < p.n_tokens; i += split_step()) {
    const int32_t tok = h[i];
    if (tok < 0 || tok >= vocab) continue;
    if (rep && i >= start) {
      if ((t[tok] & 1) == 0) atomicOr(&t[tok], 1);
      if (p.slope != 0.0f) atomicMax(&nw[tok], static_cast<int32_t>(i) - start);
    }
    if (out && i >= p.n_prompt) atomicAdd(&t[tok], 2);
  }
  cluster_sync();  // every position's count is in the table
  for (int64_t i = split_first(); i < p.n_tokens; i += split_step()) {
    const int32_t v = h[i];
    if (v < 0 || v >= vocab) continue;
    const int32_t e = atomicExch(&t[v], 0);
    if (e == 0) continue;  // no penalty, or another position of the token claimed it
    float value = x[v];
    if (e & 1) {
      float pen = p.repetition;
      if (p.slope != 0.0f) {
        pen = rep_pen_at(p.repetition, p.slope, nw[v], window);
        nw[v] = -1;
      }
      value = value > 0.0f ? __fdiv_rn(value, pen) : __fmul_rn(value, pen);
    }
    const int32_t count = e >> 1;
    if (count > 0) value = __fsub_rn(value, __fadd_rn(__fmul_rn(p.frequency, static_cast<float>(count)), p.presence));
    x[v] = value;
  }
}

}  // namespace

std::string launch_penalties(LogitsView logits, int32_t n, const Rows<PenaltyRow>& rows, int32_t* table,
                             int32_t* newest, void* stream) {
  return launch_split(penalty_kernel, n, stream, "penalty_kernel", logits, rows, table, newest);
}

}  // namespace aph::samplers::cuda
