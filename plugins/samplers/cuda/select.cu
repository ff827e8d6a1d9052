// Kept sets that need a rank (top-k, top-p), XTC, and the final selection.
// Ranks use a bisection over the bits of an order-preserving key, so ties at
// the boundary are kept together, as on the CPU.
#include "plugins/samplers/cuda/block_reduce.cuh"
#include "plugins/samplers/cuda/kernels.hpp"
#include "plugins/samplers/rng.hpp"

namespace aph::samplers::cuda {
namespace {

__device__ uint32_t order_key(float f) {
  const uint32_t u = __float_as_uint(f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

__device__ double block_sum_i(int64_t v) { return block_sum(static_cast<double>(v)); }

__global__ void top_k_kernel(LogitsView logits, const int32_t* row_index, const int32_t* ks) {
  float* x = logits.data + static_cast<int64_t>(row_index[blockIdx.x]) * logits.stride;
  const int64_t k = ks[blockIdx.x];
  if (k >= logits.vocab) return;
  uint32_t prefix = 0;  // the largest key with count(key >= prefix) >= k
  for (int bit = 31; bit >= 0; --bit) {
    const uint32_t candidate = prefix | (1u << bit);
    int64_t c = 0;
    for (int64_t i = threadIdx.x; i < logits.vocab; i += blockDim.x) c += order_key(x[i]) >= candidate;
    if (block_sum_i(c) >= static_cast<double>(k)) prefix = candidate;
  }
  for (int64_t i = threadIdx.x; i < logits.vocab; i += blockDim.x) {
    if (order_key(x[i]) < prefix) x[i] = -INFINITY;
  }
}

__global__ void top_p_kernel(LogitsView logits, const int32_t* row_index, const float* ps) {
  float* x = logits.data + static_cast<int64_t>(row_index[blockIdx.x]) * logits.stride;
  const double p = ps[blockIdx.x];
  float m = -FLT_MAX;
  for (int64_t i = threadIdx.x; i < logits.vocab; i += blockDim.x) m = fmaxf(m, x[i]);
  m = block_max(m);
  double z = 0;
  for (int64_t i = threadIdx.x; i < logits.vocab; i += blockDim.x) z += exp(static_cast<double>(x[i]) - m);
  z = block_sum(z);
  // Smallest key K with mass(key > K) < p: tokens with key >= K stay.
  uint32_t lo = 0, hi = 0xFFFFFFFFu;
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    double mass = 0;
    for (int64_t i = threadIdx.x; i < logits.vocab; i += blockDim.x) {
      if (order_key(x[i]) > mid) mass += exp(static_cast<double>(x[i]) - m);
    }
    mass = block_sum(mass) / z;
    if (mass < p) hi = mid;
    else lo = mid + 1;
  }
  for (int64_t i = threadIdx.x; i < logits.vocab; i += blockDim.x) {
    if (x[i] != -INFINITY && order_key(x[i]) < lo) x[i] = -INFINITY;
  }
}

__global__ void typical_kernel(LogitsView logits, const int32_t* row_index, const float* ps) {
  float* x = logits.data + static_cast<int64_t>(row_index[blockIdx.x]) * logits.stride;
  const double p = ps[blockIdx.x];
  float m = -FLT_MAX;
  for (int64_t i = threadIdx.x; i < logits.vocab; i += blockDim.x) m = fmaxf(m, x[i]);
  m = block_max(m);
  double z = 0;
  for (int64_t i = threadIdx.x; i < logits.vocab; i += blockDim.x) z += exp(static_cast<double>(x[i]) - m);
  z = block_sum(z);
  const double log_z = log(z) + m;
  double ent = 0;
  for (int64_t i = threadIdx.x; i < logits.vocab; i += blockDim.x) {
    const double pr = exp(static_cast<double>(x[i]) - m) / z;
    if (pr > 0) ent -= pr * log(pr);
  }
  ent = block_sum(ent);
  // Deviations are >= 0, so their bit patterns order like the values.
  auto key = [&](int64_t i) {
    return static_cast<unsigned long long>(__double_as_longlong(fabs(log_z - static_cast<double>(x[i]) - ent)));
  };
  unsigned long long lo = 0;
  if (p <= 0) {  // only the most typical group stays
    unsigned long long k = ~0ull;
    for (int64_t i = threadIdx.x; i < logits.vocab; i += blockDim.x) {
      if (x[i] != -INFINITY) k = min(k, key(i));
    }
    lo = block_reduce(k, MinOp{}, ~0ull);
  } else {
    // Largest K with mass(key < K) < p; tokens with key <= K stay.
    unsigned long long hi = ~0ull;
    while (lo < hi) {
      const unsigned long long mid = lo + (hi - lo) / 2 + 1;
      double mass = 0;
      for (int64_t i = threadIdx.x; i < logits.vocab; i += blockDim.x) {
        if (x[i] != -INFINITY && key(i) < mid) mass += exp(static_cast<double>(x[i]) - m);
      }
      mass = block_sum(mass) / z;
      if (mass < p) lo = mid;
      else hi = mid - 1;
    }
  }
  for (int64_t i = threadIdx.x; i < logits.vocab; i += blockDim.x) {
    if (x[i] != -INFINITY && key(i) > lo) x[i] = -INFINITY;
  }
}

__global__ void xtc_kernel(LogitsView logits, const int32_t* row_index, const float* thresholds) {
  float* x = logits.data + static_cast<int64_t>(row_index[blockIdx.x]) * logits.stride;
  const double thr = thresholds[blockIdx.x];
  float m = -FLT_MAX;
  for (int64_t i = threadIdx.x; i < logits.vocab; i += blockDim.x) m = fmaxf(m, x[i]);
  m = block_max(m);
  double z = 0;
  for (int64_t i = threadIdx.x; i < logits.vocab; i += blockDim.x) z += exp(static_cast<double>(x[i]) - m);
  z = block_sum(z);
  int64_t above = 0;
  float lowest = FLT_MAX;
  for (int64_t i = threadIdx.x; i < logits.vocab; i += blockDim.x) {
    if (exp(static_cast<double>(x[i]) - m) / z >= thr) {
      ++above;
      lowest = fminf(lowest, x[i]);
    }
  }
  const double total = block_sum_i(above);
  lowest = block_reduce(lowest, MinOp{}, FLT_MAX);
  if (total < 2) return;
  for (int64_t i = threadIdx.x; i < logits.vocab; i += blockDim.x) {
    if (exp(static_cast<double>(x[i]) - m) / z >= thr && x[i] > lowest) x[i] = -INFINITY;
  }
}

__global__ void sample_kernel(LogitsView logits, const SampleRow* rows, int32_t* chosen) {
  const SampleRow p = rows[blockIdx.x];
  if (chosen[p.row] >= 0) return;
  const float* x = logits.data + static_cast<int64_t>(p.row) * logits.stride;
  const uint64_t key = rng_key(p.seed, p.step, kRngSample);
  ArgMax best{0.0, -1};
  for (int64_t i = threadIdx.x; i < logits.vocab; i += blockDim.x) {
    if (x[i] == -INFINITY) continue;
    double score = x[i];
    if (!p.greedy) score -= log(-log(rng_uniform(key, static_cast<uint64_t>(i))));
    best = better(best, ArgMax{score, static_cast<int32_t>(i)});
  }
  best = block_argmax(best);
  if (threadIdx.x == 0) chosen[p.row] = best.index >= 0 ? best.index : 0;
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
  if (n == 0) return "";
  typical_kernel<<<n, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(logits, row_index, p);
  return launch_error("typical_kernel");
}

std::string launch_xtc(LogitsView logits, int32_t n, const int32_t* row_index, const float* threshold,
                       void* stream) {
  if (n == 0) return "";
  xtc_kernel<<<n, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(logits, row_index, threshold);
  return launch_error("xtc_kernel");
}

std::string launch_sample(LogitsView logits, int32_t n, const SampleRow* rows, int32_t* chosen, void* stream) {
  if (n == 0) return "";
  sample_kernel<<<n, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(logits, rows, chosen);
  return launch_error("sample_kernel");
}

}  // namespace aph::samplers::cuda
