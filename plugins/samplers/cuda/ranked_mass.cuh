// Top-p and typical-p on a row of at most kRankedMassMax live tokens (what
// follows top-k): block 0 ranks the tokens by the stage's key, one token a
// thread, and cuts at a prefix sum of their weights in that order.
//
// The radix select the dense rows take needs a pass for each 8 bits of the
// key, each with its block barriers: four passes for top-p's 32-bit key,
// eight for typical's 64-bit deviation. On the H200 that made these the
// slowest of the stages that read a listed row (about 17 and 15 us under
// ncu, stop 18). Here it is one rank (each thread compares its key with
// every other, a shared memory broadcast each), one block scan and one
// minimum.
//
// The kept set is the CPU's (keep_by_ranked_mass): tokens whose key equals
// form a group, groups go in key order, and a group stays while the weight
// of the groups strictly ahead of it is below p times the row's total
// weight; the first group always stays. Only the rounding of the sums can
// differ from the CPU's.
#pragma once

#include "plugins/samplers/cuda/row_view.cuh"
#include "plugins/samplers/cuda/sorted_scan.cuh"

namespace aph::samplers::cuda {

constexpr int32_t kRankedMassMax = 256;
static_assert(kRankedMassMax <= kThreads, "one token a thread");

// Whether keep_ranked_mass takes the row: a sparse view (block 0 alone,
// every token live) short enough for one token a thread.
__device__ inline bool ranked_mass_fits(const RowView& row) {
  return row.sparse() && row.size() <= kRankedMassMax;
}

// On a row that ranked_mass_fits: key_of(j) orders token j (smaller goes
// first), weight_of(j) is its unnormalized probability; removes the tokens
// of the groups cut off at mass p. Every thread of the block calls it.
//
// Shared memory is one index a token: the kernels that call it already hold
// the radix select's histograms and a sparse row, near the 48 KiB a block
// may declare statically, so keys and weights are computed again where
// they are needed rather than stored.
template <typename Key, typename KeyOf, typename WeightOf>
__device__ void keep_ranked_mass(const RowView& row, KeyOf key_of, WeightOf weight_of, double p) {
  __shared__ int16_t at_rank[kRankedMassMax];  // the token at each sorted position
  const int32_t n = static_cast<int32_t>(row.size()), t = threadIdx.x;
  int32_t rank = 0;  // keys are ranked by (key, position): every rank is taken once
  if (t < n) {
    const Key mine = key_of(t);
    for (int32_t i = 0; i < n; ++i) {
      const Key k = key_of(i);
      rank += (k < mine || (k == mine && i < t)) ? 1 : 0;
    }
    at_rank[rank] = static_cast<int16_t>(t);
  }
  __syncthreads();
  // Thread r now takes sorted position r.
  const int32_t j = t < n ? at_rank[t] : 0;
  double total = 0;
  const double before = block_exclusive_sum(t < n ? weight_of(j) : 0.0, &total);
  const bool cut_here = t > 0 && t < n && key_of(j) != key_of(at_rank[t - 1]) && before >= p * total;
  const int32_t cut = block_reduce(cut_here ? t : n, MinOp{}, n);
  if (t < n && rank >= cut) row.remove(t);
}

}  // namespace aph::samplers::cuda
