// Statistics of a row's live logits in one reduction each.
//
// On a dense row every reduction is two cluster barriers and a distributed
// shared memory round trip, and dynatemp, top-nsigma and eta each took three
// of them (max, then sums relative to it, then entropy or squared deviation,
// each its own pass). Both statistics below combine exactly (up to rounding)
// from per-thread partials in any grouping, so one pass and one reduction
// give what those three did:
//
// - SoftStats: max m, z = sum exp(x - m), s = sum exp(x - m) (x - m) and the
//   live count. A thread's partial is relative to its own max; combining
//   rescales the partial with the smaller max by exp(m_old - m_new). The
//   entropy of softmax(x) is then log z - s / z, since log p = (x - m) -
//   log z; one double exp a token where the separate passes took two and a
//   log.
// - NormStats: max, count, mean and M2 (the sum of squared deviations),
//   combined by Chan et al.'s pairwise update, so no sum of squares of large
//   logits cancels.
//
// A thread reads its own tokens twice (a max or a sum first); the second
// read hits its L1, and each pass is far cheaper than the double arithmetic
// a single pass needed to keep a running max or mean.
//
// Removed tokens (-inf) add nothing to either.
#pragma once

#include <cmath>

#include "plugins/samplers/cuda/row_view.cuh"

namespace aph::samplers::cuda {

struct SoftStats {
  double m, z, s, n;
};
__device__ inline SoftStats shfl_xor(SoftStats v, int lane_mask) {
  return {shfl_xor(v.m, lane_mask), shfl_xor(v.z, lane_mask), shfl_xor(v.s, lane_mask), shfl_xor(v.n, lane_mask)};
}
struct SoftCombine {
  __device__ SoftStats operator()(SoftStats a, SoftStats b) const {
    if (b.n == 0) return a;
    if (a.n == 0) return b;
    // One side holds the max: its factor is exp(0) = 1 and its shift 0, so
    // only the other side's exp is taken (the same sums, up to how the
    // compiler fuses a multiply-add). A reduction is a chain of these, one
    // level after another, so each exp saved is latency saved.
    const bool a_max = a.m >= b.m;
    const SoftStats& hi = a_max ? a : b;
    const SoftStats& lo = a_max ? b : a;
    const double d = lo.m - hi.m, e = exp(d);
    return {hi.m, hi.z + lo.z * e, hi.s + e * (lo.s + d * lo.z), a.n + b.n};
  }
};
__device__ inline SoftStats no_soft_stats() { return {-INFINITY, 0, 0, 0}; }

// This thread's largest live logit, -inf when it has none.
__device__ inline float thread_max(const RowView& row) {
  // Four loads in flight: on a dense row each is an L2 round trip.
  const int64_t step = row.step(), size = row.size();
  float m0 = -INFINITY, m1 = -INFINITY, m2 = -INFINITY, m3 = -INFINITY;
  int64_t j = row.first();
  for (; j + 3 * step < size; j += 4 * step) {
    const float a = row.value(j), b = row.value(j + step), c = row.value(j + 2 * step), d = row.value(j + 3 * step);
    m0 = fmaxf(m0, a);
    m1 = fmaxf(m1, b);
    m2 = fmaxf(m2, c);
    m3 = fmaxf(m3, d);
  }
  for (; j < size; j += step) m0 = fmaxf(m0, row.value(j));
  return fmaxf(fmaxf(m0, m1), fmaxf(m2, m3));
}

// A sparse view (block 0 alone, a token or two a thread): the max first,
// then plain sums relative to it. Block barriers are cheap here, and a
// SoftStats reduction is ten levels of combines, each waiting on a double
// exp; two reductions of plain compares and adds wait on none.
__device__ inline SoftStats sparse_soft_stats(const RowView& row) {
  if (row.size() == 0) return no_soft_stats();  // the same in every thread
  const double m = row.max();
  Sum3 t{0, 0, 0};  // z, s, n
  for (int64_t j = row.first(); j < row.size(); j += row.step()) {
    const float v = row.value(j);
    if (v == -INFINITY) continue;
    const double d = static_cast<double>(v) - m, e = exp(d);
    t.a += e;
    t.b += e * d;
    t.c += 1;
  }
  t = block_reduce(t, SumOp{}, Sum3{0, 0, 0});
  return {m, t.a, t.b, t.c};
}

// Over every thread of the view; all get the same result.
//
// Each thread first finds its own max (float compares), then sums relative
// to it: one double exp a token. A running max rescaled at each new maximum
// took a second exp for those tokens, and as most warps have a lane that
// meets a new maximum in most of its first iterations, a warp ran both
// branches: on a dense 128k row the pass was bound by the FP64 rate (H200
// profile, stop 19).
__device__ inline SoftStats soft_stats(const RowView& row) {
  if (row.sparse()) return sparse_soft_stats(row);
  SoftStats t = no_soft_stats();
  const float mine = thread_max(row);
  if (mine != -INFINITY) {
    t = {mine, 0, 0, 0};
    for (int64_t j = row.first(); j < row.size(); j += row.step()) {
      const float v = row.value(j);
      if (v == -INFINITY) continue;
      const double d = static_cast<double>(v) - t.m, e = exp(d);
      t.z += e;
      t.s += e * d;
      t.n += 1;
    }
  }
  return row.reduce(t, SoftCombine{}, no_soft_stats());
}

// -sum p log p of softmax over the live tokens (0 when none). Both terms are
// >= 0 in exact arithmetic; the clamp keeps a one-token row's rounding
// (z = 1 - ulp) from going negative, where pow(entropy, e) would be NaN.
__device__ inline double entropy_of(const SoftStats& st) {
  return st.z > 0 ? fmax(0.0, log(st.z) - st.s / st.z) : 0.0;
}

struct NormStats {
  double m, n, mean, m2;
};
__device__ inline NormStats shfl_xor(NormStats v, int lane_mask) {
  return {shfl_xor(v.m, lane_mask), shfl_xor(v.n, lane_mask), shfl_xor(v.mean, lane_mask), shfl_xor(v.m2, lane_mask)};
}
struct NormCombine {
  __device__ NormStats operator()(NormStats a, NormStats b) const {
    if (b.n == 0) return a;
    if (a.n == 0) return b;
    const double n = a.n + b.n, delta = b.mean - a.mean;
    return {fmax(a.m, b.m), n, a.mean + delta * (b.n / n), a.m2 + b.m2 + delta * delta * (a.n * b.n / n)};
  }
};
__device__ inline NormStats no_norm_stats() { return {-INFINITY, 0, 0, 0}; }

// Each thread's partial in two passes over its own tokens (the sum, so the
// mean, then the squared deviations from it): one double division a thread,
// where Welford's update took one a token.
__device__ inline NormStats norm_stats(const RowView& row) {
  NormStats t = no_norm_stats();
  double sum = 0;
  for (int64_t j = row.first(); j < row.size(); j += row.step()) {
    const float v = row.value(j);
    if (v == -INFINITY) continue;
    t.m = fmax(t.m, static_cast<double>(v));
    t.n += 1;
    sum += v;
  }
  if (t.n > 0) {
    t.mean = sum / t.n;
    for (int64_t j = row.first(); j < row.size(); j += row.step()) {
      const float v = row.value(j);
      if (v == -INFINITY) continue;
      const double d = v - t.mean;
      t.m2 += d * d;
    }
  }
  return row.reduce(t, NormCombine{}, no_norm_stats());
}

}  // namespace aph::samplers::cuda
