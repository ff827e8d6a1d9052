// The small copies between two decode steps done by a kernel instead of the
// copy engine: the sampler's chosen ids to page-locked host memory, and the
// next step's metadata from page-locked staging to the device with the fed
// ids laid over it. Each copy-engine operation between two kernels is a
// hand-over the stream waits through; one kernel reads or writes the host
// memory directly over the bus (unified addressing maps page-locked memory).
#include <cuda_runtime.h>

#include "core/common/env_flag.hpp"
#include "core/ops/kernels.hpp"

namespace aph::ops::kernels {
namespace {

// Words a thread loads before it stores any: reads of host memory take a
// bus round trip each, so they go out together.
constexpr int kWordsPerThread = 4;
constexpr int kThreads = 256;

__global__ void copy_words_kernel(uint32_t* dst, const uint32_t* src, WordSpans spans, const uint32_t* patch,
                                  int64_t patch_at, int64_t patch_words) {
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kThreads * kWordsPerThread + threadIdx.x;
  int64_t at[kWordsPerThread];
  uint32_t v[kWordsPerThread];
#pragma unroll
  for (int u = 0; u < kWordsPerThread; ++u) {
    // The u-th word this thread moves, counted over the spans laid end to end.
    int64_t i = first + static_cast<int64_t>(u) * kThreads;
    at[u] = -1;
    for (int r = 0; r < spans.count; ++r) {
      if (i < spans.words[r]) {
        at[u] = spans.first[r] + i;
        break;
      }
      i -= spans.words[r];
    }
    if (at[u] < 0) continue;
    // Each word comes from one source, so no word is written twice.
    const bool patched = patch != nullptr && at[u] >= patch_at && at[u] < patch_at + patch_words;
    v[u] = patched ? patch[at[u] - patch_at] : src[at[u]];
  }
#pragma unroll
  for (int u = 0; u < kWordsPerThread; ++u)
    if (at[u] >= 0) dst[at[u]] = v[u];
}

}  // namespace

bool kernel_copies_enabled() {
  static const bool on = env_flag("APH_KERNEL_COPIES", true);
  return on;
}

void* pinned_on_device(void* host) {
  void* dev = nullptr;
  if (cudaHostGetDevicePointer(&dev, host, 0) == cudaSuccess) return dev;
  (void)cudaGetLastError();  // not mapped: the caller keeps to the copy engine
  return nullptr;
}

int copy_word_spans(uint32_t* dst, const uint32_t* src, const WordSpans& spans, const uint32_t* patch,
                    int64_t patch_at, int64_t patch_words, void* stream) {
  if (spans.count < 0 || spans.count > WordSpans::kMax) return static_cast<int>(cudaErrorInvalidValue);
  int64_t words = 0;
  for (int r = 0; r < spans.count; ++r) words += spans.words[r];
  if (words <= 0) return 0;
  const int64_t per_block = static_cast<int64_t>(kThreads) * kWordsPerThread;
  const auto blocks = static_cast<unsigned>((words + per_block - 1) / per_block);
  copy_words_kernel<<<blocks, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(dst, src, spans, patch, patch_at,
                                                                                patch_words);
  return static_cast<int>(cudaGetLastError());
}

int copy_words(uint32_t* dst, const uint32_t* src, int64_t words, const uint32_t* patch, int64_t patch_at,
               int64_t patch_words, void* stream) {
  WordSpans whole;
  whole.count = 1;
  whole.first[0] = 0;
  whole.words[0] = words;
  return copy_word_spans(dst, src, whole, patch, patch_at, patch_words, stream);
}

}  // namespace aph::ops::kernels
