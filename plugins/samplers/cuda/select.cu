// Kept sets that need a rank (top-k, top-p), XTC, and the final selection.
// Ranks come from a radix select over an order-preserving key, so ties at
// the boundary are kept together, as on the CPU.
#include "plugins/samplers/cuda/block_reduce.cuh"
#include "plugins/samplers/cuda/kernels.hpp"
#include "plugins/samplers/cuda/row_split.cuh"
#include "plugins/samplers/rng.hpp"

namespace aph::samplers::cuda {
namespace {

__device__ uint32_t order_key(float f) {
  const uint32_t u = __float_as_uint(f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}


// Radix select over the order keys, 8 bits a pass from the top: returns the
// key K of the boundary, the largest K with weight(key >= K) >= target, where
// weight(i) is what token i adds (1 for top-k; exp(x - m) for top-p). Four
// passes over the row instead of one per bit. Scanning each pass's 256-bin
// histogram from the top, the bin where the running weight first reaches the
// target holds K; the next pass looks only inside it.
//
// Logits crowd into a handful of top digits, so shared-memory atomics on one
// histogram would serialize (and double atomics there are CAS loops). Instead
// each warp keeps its own histogram and pools the lanes that share a bin: one
// warp sum and one plain store per distinct bin per 32 tokens.
constexpr int kRadixWarps = kThreads / 32;

template <typename Weight>
__device__ uint32_t radix_boundary(const float* x, int64_t vocab, Weight weight, double target) {
  __shared__ double hist[kRadixWarps][256];
  __shared__ uint32_t s_prefix;
  __shared__ double s_above;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  uint32_t prefix = 0;
  double above = 0;  // weight of the keys above the current prefix's range
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int i = threadIdx.x; i < kRadixWarps * 256; i += blockDim.x) (&hist[0][0])[i] = 0;
    __syncthreads();
    const uint32_t high = shift == 24 ? 0u : (0xFFFFFFFFu << (shift + 8));
    // Every lane of a warp runs the same iterations, so the warp can vote.
    for (int64_t base = static_cast<int64_t>(warp) * 32; base < vocab; base += blockDim.x) {
      const int64_t i = base + lane;
      bool pending = false;
      int bin = 0;
      double w = 0;
      if (i < vocab) {
        const uint32_t key = order_key(x[i]);
        if ((key & high) == prefix) {
          pending = true;
          bin = static_cast<int>((key >> shift) & 0xFFu);
          w = weight(i);
        }
      }
      for (unsigned mask = __ballot_sync(0xffffffffu, pending); mask != 0;
           mask = __ballot_sync(0xffffffffu, pending)) {
        const int leader = __ffs(mask) - 1;
        const int b = __shfl_sync(0xffffffffu, bin, leader);
        const bool mine = pending && bin == b;
        const double sum = warp_reduce(mine ? w : 0.0, SumOp{});
        if (lane == leader) hist[warp][b] += sum;
        pending = pending && !mine;
      }
    }
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x) {
      double t = 0;
      for (int w = 0; w < kRadixWarps; ++w) t += hist[w][b];
      hist[0][b] = t;  // each thread writes only the column it read
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      double cum = above;
      int b = 255;
      for (; b > 0; --b) {
        if (cum + hist[0][b] >= target) break;
        cum += hist[0][b];
      }
      s_prefix = prefix | (static_cast<uint32_t>(b) << shift);
      s_above = cum;
    }
    __syncthreads();
    prefix = s_prefix;
    above = s_above;
  }
  return prefix;
}

__global__ void top_k_kernel(LogitsView logits, const int32_t* row_index, const int32_t* ks) {
  float* x = logits.data + static_cast<int64_t>(row_index[blockIdx.x]) * logits.stride;
  const int64_t k = ks[blockIdx.x];
  if (k >= logits.vocab) return;
  // The largest key with count(key >= K) >= k: ties at the boundary all stay.
  const uint32_t boundary =
      radix_boundary(x, logits.vocab, [](int64_t) { return 1.0; }, static_cast<double>(k));
  for (int64_t i = threadIdx.x; i < logits.vocab; i += blockDim.x) {
    if (order_key(x[i]) < boundary) x[i] = -INFINITY;
  }
}

__global__ void top_p_kernel(LogitsView logits, const int32_t* row_index, const float* ps) {
  float* x = logits.data + static_cast<int64_t>(row_index[blockIdx.x]) * logits.stride;
  const double p = ps[blockIdx.x];
  const float m = row_max(x, logits.vocab);
  const double z = row_partition(x, logits.vocab, m);
  // Smallest key K with mass(key > K) < p, which is the largest K with
  // mass(key >= K) >= p (masses unnormalized: times z). Tokens with key >= K stay.
  const uint32_t boundary = radix_boundary(
      x, logits.vocab, [&](int64_t i) { return exp(static_cast<double>(x[i]) - m); }, p * z);
  for (int64_t i = threadIdx.x; i < logits.vocab; i += blockDim.x) {
    if (x[i] != -INFINITY && order_key(x[i]) < boundary) x[i] = -INFINITY;
  }
}

__global__ void typical_kernel(LogitsView logits, const int32_t* row_index, const float* ps) {
  float* x = logits.data + static_cast<int64_t>(row_index[blockIdx.y]) * logits.stride;
  const double p = ps[blockIdx.y];
  const float m = split_max(x, logits.vocab);
  const double z = split_partition(x, logits.vocab, m);
  const double log_z = log(z) + m;
  double ent = 0;
  for (int64_t i = split_first(); i < logits.vocab; i += split_step()) {
    const double pr = exp(static_cast<double>(x[i]) - m) / z;
    if (pr > 0) ent -= pr * log(pr);
  }
  ent = split_sum(ent);
  // Deviations are >= 0, so their bit patterns order like the values.
  auto key = [&](int64_t i) {
    return static_cast<unsigned long long>(__double_as_longlong(fabs(log_z - static_cast<double>(x[i]) - ent)));
  };
  unsigned long long lo = 0;
  if (p <= 0) {  // only the most typical group stays
    unsigned long long k = ~0ull;
    for (int64_t i = split_first(); i < logits.vocab; i += split_step()) {
      if (x[i] != -INFINITY) k = min(k, key(i));
    }
    lo = split_reduce(k, MinOp{}, ~0ull);
  } else {
    // Largest K with mass(key < K) < p; tokens with key <= K stay.
    unsigned long long hi = ~0ull;
    while (lo < hi) {
      const unsigned long long mid = lo + (hi - lo) / 2 + 1;
      double mass = 0;
      for (int64_t i = split_first(); i < logits.vocab; i += split_step()) {
        if (x[i] != -INFINITY && key(i) < mid) mass += exp(static_cast<double>(x[i]) - m);
      }
      mass = split_sum(mass) / z;
      if (mass < p) lo = mid;
      else hi = mid - 1;
    }
  }
  for (int64_t i = split_first(); i < logits.vocab; i += split_step()) {
    if (x[i] != -INFINITY && key(i) > lo) x[i] = -INFINITY;
  }
}

__global__ void xtc_kernel(LogitsView logits, const int32_t* row_index, const float* thresholds) {
  float* x = logits.data + static_cast<int64_t>(row_index[blockIdx.y]) * logits.stride;
  const double thr = thresholds[blockIdx.y];
  const float m = split_max(x, logits.vocab);
  const double z = split_partition(x, logits.vocab, m);
  // p = exp(x - m) / z >= thr  <=>  x - m >= log(thr * z): one exp-free
  // comparison per token instead of an exp in each of the two passes below.
  const double cut = log(thr * z);
  auto above_cut = [&](float v) { return static_cast<double>(v) - m >= cut; };
  int64_t above = 0;
  float lowest = FLT_MAX;
  for (int64_t i = split_first(); i < logits.vocab; i += split_step()) {
    if (above_cut(x[i])) {
      ++above;
      lowest = fminf(lowest, x[i]);
    }
  }
  const int64_t total = split_reduce(above, SumOp{}, int64_t{0});
  lowest = split_reduce(lowest, MinOp{}, FLT_MAX);
  if (total < 2) return;
  for (int64_t i = split_first(); i < logits.vocab; i += split_step()) {
    if (above_cut(x[i]) && x[i] > lowest) x[i] = -INFINITY;
  }
}

__global__ void sample_kernel(LogitsView logits, const SampleRow* rows, int32_t* chosen) {
  const SampleRow p = rows[blockIdx.y];
  if (chosen[p.row] >= 0) return;
  const float* x = logits.data + static_cast<int64_t>(p.row) * logits.stride;
  const uint64_t key = rng_key(p.seed, p.step, kRngSample);
  ArgMax best{0.0, -1};
  for (int64_t i = split_first(); i < logits.vocab; i += split_step()) {
    if (x[i] == -INFINITY) continue;
    double score = x[i];
    if (!p.greedy) score -= log(-log(rng_uniform(key, static_cast<uint64_t>(i))));
    best = better(best, ArgMax{score, static_cast<int32_t>(i)});
  }
  best = split_argmax(best);
  if (blockIdx.x == 0 && threadIdx.x == 0) chosen[p.row] = best.index >= 0 ? best.index : 0;
}

}  // namespace

std::string launch_top_k(LogitsView logits, int32_t n, const int32_t* row_index, const int32_t* k, void* stream) {
  if (n == 0) return "";
  top_k_kernel<<<n, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(logits, row_index, k);
  return launch_error("top_k_kernel");
}

std::string launch_top_p(LogitsView logits, int32_t n, const int32_t* row_index, const float* p, void* stream) {
  if (n == 0) return "";
  top_p_kernel<<<n, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(logits, row_index, p);
  return launch_error("top_p_kernel");
}

std::string launch_typical(LogitsView logits, int32_t n, const int32_t* row_index, const float* p, void* stream) {
  // 64 bisection passes over the row: spread over a cluster (one block on
  // one SM cost 5.8 ms a step at 1 x 128k on the H200).
  return launch_split(typical_kernel, n, stream, "typical_kernel", logits, row_index, p);
}

std::string launch_xtc(LogitsView logits, int32_t n, const int32_t* row_index, const float* threshold,
                       void* stream) {
  return launch_split(xtc_kernel, n, stream, "xtc_kernel", logits, row_index, threshold);
}

std::string launch_sample(LogitsView logits, int32_t n, const SampleRow* rows, int32_t* chosen, void* stream) {
  return launch_split(sample_kernel, n, stream, "sample_kernel", logits, rows, chosen);
}

}  // namespace aph::samplers::cuda
