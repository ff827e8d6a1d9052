// Mirostat v1 / v2 on sorted rows (block 0 of the row's cluster), with
// MirostatStage::apply_cpu's steps: keep a prefix of the sorted order (v1:
// mirostat_v1_keep from the top 100; v2: up to the first token whose surprise
// exceeds mu), draw among the kept tokens with the CPU's Gumbel noise keyed
// by (seed, step, kRngMirostat), then move mu by the chosen token's surprise
// under the truncated distribution (mirostat_next_mu). mu lives in device
// memory, one float per request and seed, so it never visits the host.
#include "plugins/samplers/cuda/sorted_row.cuh"
#include "plugins/samplers/cuda/sorted_scan.cuh"
#include "plugins/samplers/rng.hpp"
#include "plugins/samplers/sorted_math.hpp"

namespace aph::samplers::cuda {
namespace {

// One row's truncation, draw and update; returns the new mu in thread 0 (the
// others return mu). Every thread runs it; its early returns are uniform.
// (sx, sid) are the row's `live` live tokens sorted; vocab is the row's
// length, which Zipf's estimate takes as the vocabulary size.
__device__ float mirostat_row(const MirostatRow& p, float mu, float* x, const float* sx, const int32_t* sid,
                              int64_t live, int64_t vocab, int32_t* chosen) {
  __shared__ double top[kMirostatZipfTop];
  __shared__ long long s_keep;
  if (live == 0) return mu;  // nothing to draw: the CPU leaves the row (and mu) alone
  const SortedProbs prob{sx, sx[0], sorted_partition(sx, live)};

  if (p.mode == 1) {
    const int64_t m = live < kMirostatZipfTop ? live : kMirostatZipfTop;
    for (int64_t j = threadIdx.x; j < m; j += blockDim.x) top[j] = prob(j);
    __syncthreads();
    if (threadIdx.x == 0) s_keep = mirostat_v1_keep(top, m, vocab, live, mu);
  } else {
    // The first sorted position whose surprise is not <= mu (the CPU's loop
    // condition, NaN included); positions only grow per thread.
    long long first = LLONG_MAX;
    for (int64_t j = threadIdx.x; j < live; j += blockDim.x) {
      if (!(-log2(prob(j)) <= static_cast<double>(mu))) {
        first = j;
        break;
      }
    }
    first = block_reduce(first, MinOp{}, LLONG_MAX);
    if (threadIdx.x == 0) s_keep = first < 1 ? 1 : (first > live ? live : first);
  }
  __syncthreads();
  const int64_t keep = s_keep;

  for (int64_t j = keep + threadIdx.x; j < live; j += blockDim.x) x[sid[j]] = -INFINITY;
  // The CPU draws over the truncated row, whose live tokens are exactly the
  // kept prefix; scores and ties (lowest id wins) as in gumbel_argmax.
  const uint64_t key = rng_key(p.seed, p.step, kRngMirostat);
  ArgMax best{0.0, -1};
  double kept_mass = 0;
  for (int64_t j = threadIdx.x; j < keep; j += blockDim.x) {
    const int32_t t = sid[j];
    const double score = static_cast<double>(sx[j]) - log(-log(rng_uniform(key, static_cast<uint64_t>(t))));
    best = better(best, ArgMax{score, t});
    kept_mass += prob(j);
  }
  best = block_argmax(best);
  kept_mass = block_sum(kept_mass);
  if (threadIdx.x != 0) return mu;
  const int32_t t = best.index;  // keep >= 1, so a kept token won
  chosen[p.row] = t;
  // x[t] is kept, so still the logit the probabilities came from.
  const double observed = -log2(exp(static_cast<double>(x[t]) - prob.m) / prob.z / kept_mass);
  return mirostat_next_mu(mu, p.eta, p.tau, observed);
}

struct RowStart {
  float mu;
  bool decided;
};

// mu as the row starts (2 tau when fresh), and whether an earlier stage
// already chose its token. Every thread gets both.
__device__ RowStart row_start(const MirostatRow& p, const int32_t* chosen) {
  __shared__ float s_mu;
  __shared__ int s_decided;
  if (threadIdx.x == 0) {
    s_mu = p.fresh ? 2.0f * p.tau : *p.mu;
    s_decided = chosen[p.row] >= 0;
  }
  __syncthreads();
  return {s_mu, s_decided != 0};
}

// Decided rows are not sorted; their mu is still written, so a fresh slot
// holds 2 tau from now on (the CPU creates no state then, which starts at the
// same 2 tau later). A row per cluster, blockIdx.y its slot.
__global__ void __launch_bounds__(kThreads) mirostat_kernel(LogitsView logits, const __grid_constant__ Rows<MirostatRow> rows,
                                                            FullSortScratch full, int32_t* chosen) {
  dependent_start();
  __shared__ SortedRowSmem s;
  const MirostatRow p = rows[blockIdx.y];
  const RowStart start = row_start(p, chosen);  // the same in every block of the cluster
  if (start.decided) {
    if (blockIdx.x == 0 && threadIdx.x == 0) *p.mu = start.mu;
    return;
  }
  float* x = logits.data + static_cast<int64_t>(p.row) * logits.stride;
  sort_row_then(logits, p.row, blockIdx.y, full, s, [&](const float* sx, const int32_t* sid, int64_t live) {
    const float mu = mirostat_row(p, start.mu, x, sx, sid, live, logits.vocab, chosen);
    if (threadIdx.x == 0) *p.mu = mu;
  });
}

}  // namespace

std::string launch_mirostat(LogitsView logits, int32_t n, const Rows<MirostatRow>& rows, FullSortScratch full,
                            int32_t* chosen, void* stream) {
  return launch_split(mirostat_kernel, n, stream, "mirostat_kernel", logits, rows, full, chosen);
}

}  // namespace aph::samplers::cuda
