// Kept sets that need a rank (top-k, top-p, typical-p), XTC, and the final
// selection, each row on a cluster (row_split.cuh). Ranks come from a radix
// select over an order-preserving key, so ties at the boundary are kept
// together, as on the CPU.
#include "plugins/samplers/cuda/block_reduce.cuh"
#include "plugins/samplers/cuda/kernels.hpp"
#include "plugins/samplers/cuda/radix_select.cuh"
#include "plugins/samplers/cuda/ranked_mass.cuh"
#include "plugins/samplers/cuda/row_stats.cuh"
#include "plugins/samplers/cuda/row_split.cuh"
#include "plugins/samplers/cuda/row_view.cuh"
#include "plugins/samplers/cuda/top_k_blocks.cuh"
#include "plugins/samplers/rng.hpp"

namespace aph::samplers::cuda {
namespace {

__device__ uint32_t order_key(float f) {
  const uint32_t u = __float_as_uint(f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}


// The kernels below open their row with open_row (row_view.cuh): a row
// with few live tokens is done by block 0 alone, on those tokens.

__global__ void __launch_bounds__(kThreads) top_k_kernel(LogitsView logits, const __grid_constant__ Rows<Indexed<int32_t>> ks) {
  dependent_start();
  if (ks[blockIdx.y].value >= logits.vocab) return;
  {
    const Indexed<int32_t> p = ks[blockIdx.y];
    __shared__ TopKSmem s;
    if (gridDim.x > 1 && p.value <= kBlockTopKMax && listed_row(logits, p.row) == nullptr &&
        top_k_by_blocks(logits, p.row, p.value, order_key, s)) {
      return;
    }
  }
  int32_t k = 0;
  bool leave = false;
  const RowView row = open_indexed_row(logits, ks, &k, &leave);
  if (leave) return;
  // The largest key with count(key >= K) >= k: ties at the boundary all
  // stay. Removed tokens count here as on the CPU; a sparse row leaves them
  // out, which changes nothing: they rank below every live token, so the
  // boundary is a live key, or (k past the live ones) every live token stays.
  const uint32_t boundary = radix_boundary<uint32_t>(
      row,
      [&](int64_t j, uint32_t* key) {
        *key = order_key(row.value(j));
        return true;
      },
      UnitWeight{}, static_cast<double>(k));
  for (int64_t j = row.first(); j < row.size(); j += row.step()) {
    if (order_key(row.value(j)) < boundary) row.remove(j);
  }
}

__global__ void __launch_bounds__(kThreads) top_p_kernel(LogitsView logits, const __grid_constant__ Rows<Indexed<float>> ps) {
  dependent_start();
  float p = 0;
  bool leave = false;
  const RowView row = open_indexed_row(logits, ps, &p, &leave);
  if (leave) return;
  if (ranked_mass_fits(row)) {  // after top-k: rank the few tokens, no radix passes
    const float m = row.max();
    keep_ranked_mass<uint32_t>(
        row, [&](int64_t j) { return ~order_key(row.value(j)); },
        [&](int64_t j) { return exp(static_cast<double>(row.value(j)) - m); }, p);
    return;
  }
  const SoftStats st = soft_stats(row);  // max and partition in one reduction
  const float m = static_cast<float>(st.m);
  const double z = st.z;
  // Smallest key K with mass(key > K) < p, which is the largest K with
  // mass(key >= K) >= p (masses unnormalized: times z). Tokens with key >= K
  // stay. Removed tokens weigh nothing and sit below every live key.
  const uint32_t boundary = radix_boundary<uint32_t>(
      row,
      [&](int64_t j, uint32_t* key) {
        const float v = row.value(j);
        *key = order_key(v);
        return v != -INFINITY;
      },
      [&](int64_t j) { return exp(static_cast<double>(row.value(j)) - m); }, static_cast<double>(p) * z);
  for (int64_t j = row.first(); j < row.size(); j += row.step()) {
    const float v = row.value(j);
    if (v != -INFINITY && order_key(v) < boundary) row.remove(j);
  }
}

__global__ void __launch_bounds__(kThreads) typical_kernel(LogitsView logits, const __grid_constant__ Rows<Indexed<float>> ps) {
  dependent_start();
  float p = 0;
  bool leave = false;
  const RowView row = open_indexed_row(logits, ps, &p, &leave);
  if (leave) return;
  const SoftStats st = soft_stats(row);  // max, partition and entropy in one reduction
  const float m = static_cast<float>(st.m);
  const double z = st.z;
  const double log_z = log(z) + m;
  const double ent = entropy_of(st);
  // Deviations are >= 0, so their bit patterns order like the values.
  auto deviation = [&](int64_t j) {
    return static_cast<unsigned long long>(
        __double_as_longlong(fabs(log_z - static_cast<double>(row.value(j)) - ent)));
  };
  auto weight = [&](int64_t j) { return exp(static_cast<double>(row.value(j)) - m); };
  if (ranked_mass_fits(row)) {  // after top-k: rank the few tokens, no radix passes
    keep_ranked_mass<unsigned long long>(row, deviation, weight, p);
    return;
  }
  // Tokens stay while the mass strictly more typical than theirs is < p:
  // those with deviation <= B, B the smallest deviation with
  // mass(dev <= B) >= p. On complemented keys that is the top-p boundary:
  // the largest ~B with mass(~dev >= ~B) >= p.
  unsigned long long lo = 0;
  if (p <= 0) {  // only the most typical group stays
    unsigned long long k = ~0ull;
    for (int64_t j = row.first(); j < row.size(); j += row.step()) {
      if (row.value(j) != -INFINITY) k = min(k, deviation(j));
    }
    lo = row.reduce(k, MinOp{}, ~0ull);
  } else {
    lo = ~radix_boundary<unsigned long long>(
        row,
        [&](int64_t j, unsigned long long* key) {
          *key = ~deviation(j);
          return row.value(j) != -INFINITY;
        },
        weight, static_cast<double>(p) * z);
  }
  for (int64_t j = row.first(); j < row.size(); j += row.step()) {
    if (row.value(j) != -INFINITY && deviation(j) > lo) row.remove(j);
  }
}

__global__ void __launch_bounds__(kThreads) xtc_kernel(LogitsView logits, const __grid_constant__ Rows<Indexed<float>> thresholds) {
  dependent_start();
  float threshold = 0;
  bool leave = false;
  const RowView row = open_indexed_row(logits, thresholds, &threshold, &leave);
  if (leave) return;
  const double thr = threshold;
  const SoftStats st = soft_stats(row);  // max and partition in one reduction
  const float m = static_cast<float>(st.m);
  const double z = st.z;
  // p = exp(x - m) / z >= thr  <=>  x - m >= log(thr * z): one exp-free
  // comparison per token instead of an exp in each of the two passes below.
  const double cut = log(thr * z);
  auto above_cut = [&](float v) { return static_cast<double>(v) - m >= cut; };
  int64_t above = 0;
  float lowest = FLT_MAX;
  for (int64_t j = row.first(); j < row.size(); j += row.step()) {
    const float v = row.value(j);
    if (above_cut(v)) {
      ++above;
      lowest = fminf(lowest, v);
    }
  }
  const int64_t total = row.reduce(above, SumOp{}, int64_t{0});
  lowest = row.reduce(lowest, MinOp{}, FLT_MAX);
  if (total < 2) return;
  for (int64_t j = row.first(); j < row.size(); j += row.step()) {
    const float v = row.value(j);
    if (above_cut(v) && v > lowest) row.remove(j);
  }
}

__global__ void __launch_bounds__(kThreads) sample_kernel(LogitsView logits, const __grid_constant__ Rows<SampleRow> rows, int32_t* chosen) {
  dependent_start();
  const SampleRow p = rows[blockIdx.y];
  if (chosen[p.row] >= 0) return;
  const float* x = logits.data + static_cast<int64_t>(p.row) * logits.stride;
  const uint64_t key = rng_key(p.seed, p.step, kRngSample);
  auto score = [&](float v, int64_t i) {
    double sc = v;
    if (!p.greedy) sc -= log(-log(rng_uniform(key, static_cast<uint64_t>(i))));
    return sc;
  };
  ArgMax best{0.0, -1};
  if (const LiveList* list = listed_row(logits, p.row)) {
    // Block 0 alone on the listed tokens; the same token, since ties go to
    // the lowest id in any order.
    if (blockIdx.x != 0) return;
    const int32_t n = min(list->n, kSparseCap);
    for (int32_t j = threadIdx.x; j < n; j += blockDim.x) {
      const int32_t i = list->ids[j];
      const float v = x[i];
      if (v != -INFINITY) best = better(best, ArgMax{score(v, i), i});
    }
    best = block_argmax(best);
    if (threadIdx.x == 0) chosen[p.row] = best.index >= 0 ? best.index : 0;
    return;
  }
  // kLoads logits a thread are loaded before any is compared: one load per
  // iteration left the loop a chain of dependent L2 round trips, 15 us for a
  // 128k row on 16 blocks (H200).
  constexpr int kLoads = 8;
  const int64_t step = split_step();
  for (int64_t base = split_first(); base < logits.vocab; base += kLoads * step) {
    float v[kLoads];
#pragma unroll
    for (int u = 0; u < kLoads; ++u) {
      const int64_t i = base + u * step;
      v[u] = i < logits.vocab ? x[i] : -INFINITY;
    }
#pragma unroll
    for (int u = 0; u < kLoads; ++u) {
      if (v[u] == -INFINITY) continue;
      const int64_t i = base + u * step;
      best = better(best, ArgMax{score(v[u], i), static_cast<int32_t>(i)});
    }
  }
  best = split_argmax(best);
  if (blockIdx.x == 0 && threadIdx.x == 0) chosen[p.row] = best.index >= 0 ? best.index : 0;
}

}  // namespace

std::string launch_top_k(LogitsView logits, int32_t n, const Rows<Indexed<int32_t>>& k, void* stream) {
  // One block per row held a batch-1 step 0.8 ms on the H200: a cluster per row.
  return launch_split(top_k_kernel, n, stream, "top_k_kernel", logits, k);
}

std::string launch_top_p(LogitsView logits, int32_t n, const Rows<Indexed<float>>& p, void* stream) {
  return launch_split(top_p_kernel, n, stream, "top_p_kernel", logits, p);
}

std::string launch_typical(LogitsView logits, int32_t n, const Rows<Indexed<float>>& p, void* stream) {
  // Eight radix passes over the 64-bit deviation keys (64 bisection passes
  // cost a cluster about as much as the rest of the chain).
  return launch_split(typical_kernel, n, stream, "typical_kernel", logits, p);
}

std::string launch_xtc(LogitsView logits, int32_t n, const Rows<Indexed<float>>& threshold, void* stream) {
  return launch_split(xtc_kernel, n, stream, "xtc_kernel", logits, threshold);
}

std::string launch_sample(LogitsView logits, int32_t n, const Rows<SampleRow>& rows, int32_t* chosen, void* stream) {
  return launch_split(sample_kernel, n, stream, "sample_kernel", logits, rows, chosen);
}

}  // namespace aph::samplers::cuda
