// DRY on the GPU, one block per row: the newest max_occurrences positions of
// the last token are found chunk by chunk from the end of the history (so the
// work is bounded by the history length), each measures its repeated suffix
// (at most max_ngram compares), and each penalized token is charged once,
// for its longest match, exactly as the CPU stage does.
#include "plugins/samplers/cuda/block_reduce.cuh"
#include "plugins/samplers/cuda/kernels.hpp"
#include "plugins/samplers/penalty_math.hpp"

namespace aph::samplers::cuda {
namespace {

constexpr int kMaxOccurrences = 1024;  // the field's upper bound

// Whether t is in the sorted list breakers[first, first + n).
__device__ bool is_breaker(const DryBreakers& b, int32_t first, int32_t n, int32_t t) {
  int32_t lo = 0, hi = n;
  while (lo < hi) {
    const int32_t mid = (lo + hi) / 2;
    if (b[first + mid] < t) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && b[first + lo] == t;
}

__global__ void __launch_bounds__(kThreads) dry_kernel(LogitsView logits, const __grid_constant__ Rows<DryRow> rows,
                           const __grid_constant__ DryBreakers breakers) {
  dependent_start();
  __shared__ int32_t positions[kMaxOccurrences];
  __shared__ int32_t next_token[kMaxOccurrences];
  __shared__ int32_t match_len[kMaxOccurrences];
  __shared__ int32_t cap;
  __shared__ int32_t found;
  const DryRow p = rows[blockIdx.x];
  const int32_t start = p.range > 0 && p.n_tokens > p.range ? p.n_tokens - p.range : 0;
  const int32_t* seq = p.history + start;
  const int32_t n = p.n_tokens - start;
  if (n < 2) return;
  if (threadIdx.x == 0) {
    int32_t c = 0;
    while (c < n && c < p.max_ngram && !is_breaker(breakers, p.breaker_offset, p.n_breakers, seq[n - 1 - c])) ++c;
    cap = c;
    found = 0;
  }
  __syncthreads();
  if (cap == 0 || cap < p.allowed_length) return;
  const int32_t last = seq[n - 1];
  const int32_t want = min(p.max_occurrences, kMaxOccurrences);
  for (int32_t chunk_end = n - 2; chunk_end >= 0; chunk_end -= blockDim.x) {
    const int32_t j = chunk_end - static_cast<int32_t>(threadIdx.x);  // thread order = newest first
    const bool hit = j >= 0 && seq[j] == last;
    int total = 0;
    const int rank = block_exclusive_count(hit, &total);
    const int base = found;
    if (hit && base + rank < want) positions[base + rank] = j;
    __syncthreads();
    if (threadIdx.x == 0) found = min(want, base + total);
    __syncthreads();
    if (found >= want) break;
  }
  for (int k = threadIdx.x; k < found; k += blockDim.x) {
    const int32_t j = positions[k];
    int32_t len = 1;
    while (len < cap && j - len >= 0 && seq[j - len] == seq[n - 1 - len]) ++len;
    next_token[k] = len >= p.allowed_length ? seq[j + 1] : -1;
    match_len[k] = len;
  }
  __syncthreads();
  float* x = logits.data + static_cast<int64_t>(p.row) * logits.stride;
  for (int k = threadIdx.x; k < found; k += blockDim.x) {
    const int32_t tok = next_token[k];
    if (tok < 0 || tok >= logits.vocab) continue;
    bool owner = true;  // the longest match of this token, the newest among equals
    for (int u = 0; u < found && owner; ++u) {
      if (u == k || next_token[u] != tok) continue;
      if (match_len[u] > match_len[k] || (match_len[u] == match_len[k] && u < k)) owner = false;
    }
    if (owner) x[tok] = __fsub_rn(x[tok], dry_penalty(p.multiplier, p.base, match_len[k], p.allowed_length));
  }
}

}  // namespace

std::string launch_dry(LogitsView logits, int32_t n, const Rows<DryRow>& rows, const DryBreakers& breakers,
                       void* stream) {
  if (n == 0) return "";
  return launch_chained("dry_kernel", dry_kernel, dim3(n), dim3(256), stream, logits, rows, breakers);
}

}  // namespace aph::samplers::cuda
