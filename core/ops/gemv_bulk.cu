// The bulk form of the batch-1 GEMV (APH_GEMV_BULK=1, sm_90; opt-in until
// measured on the H200, written in stop 25 without a GPU).
//
// Why: the split GEMV (gemv.cu) reaches the copy's speed on the big 8B
// matrices (gate_up 100 %, the LM head 106 %) but not on the small ones
// (qkv 77 %, o 72 %, down 88 %: stop 23's aph_bench_decode_ops). Its CTAs
// each take a few rows and leave; only the first wave has its loads issued
// before the producer wait, later waves start as earlier CTAs end, and the
// last wave is partial. Here a grid of resident CTAs streams all rows: each
// CTA keeps a ring of whole rows in shared memory, each row one
// cp.async.bulk (core/common/cuda_bulk_ring.cuh) issued `stages` rows ahead,
// the first ones before the wait. The grid is as large as fits the GPU, cut
// to an equal number of rows a CTA (n = 4096 on 132 SMs at 3 CTAs each: 373
// CTAs of 11 rows), so that no CTA has a row more than the others.
//
// Per row, the CTA's 128 threads each take 16-byte vectors of it (x's from
// L1), reduce by warps and then through shared memory; thread 0 writes y and
// refills the row's slot.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <utility>

#include "core/common/cuda_bulk_ring.cuh"
#include "core/common/cuda_pdl.cuh"
#include "core/ops/cuda_math.cuh"
#include "core/ops/gemv_bulk.hpp"

namespace aph::ops::kernels {

namespace {

constexpr int kBulkWarps = 4;
constexpr int kBulkThreads = kBulkWarps * 32;
constexpr int kBulkMaxStages = 8;
constexpr int64_t kBulkCtaBytes = 96 << 10;  // a CTA's ring: rows of up to this many bytes in all

template <typename T>
constexpr int kVec = 16 / sizeof(T);  // elements in a 16-byte vector

// Rows a CTA's ring holds, or 0 when two rows do not fit.
int bulk_stages(int64_t row_bytes) {
  const int64_t s = kBulkCtaBytes / row_bytes;
  return s < 2 ? 0 : static_cast<int>(std::min<int64_t>(s, kBulkMaxStages));
}

template <typename T, typename Ty>
__global__ void __launch_bounds__(kBulkThreads)
    gemv_bulk_kernel(const T* __restrict__ x, const T* __restrict__ w, const float* __restrict__ bias,
                     Ty* __restrict__ y, int64_t n, int64_t k, int stages) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  // The copy engine and transaction-counting mbarriers are sm_90's:
  // gemv_bulk launches this form only on such a GPU.
#else
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ uint64_t arrived[kBulkMaxStages];
  __shared__ float warp_sums[2][kBulkWarps];  // by row parity: thread 0 reads row i's while warps write row i+1's
  cuda_pdl::allow_dependents();
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int64_t row_bytes = k * static_cast<int64_t>(sizeof(T));
  // One ring for the CTA, thread 0 its filler.
  const cuda_bulk::WarpRing ring{smem, arrived, stages, row_bytes};
  ring.init(tid);
  __syncthreads();
  const int64_t first = blockIdx.x, step = gridDim.x;
  auto fill = [&](int64_t i) {
    const int64_t row = first + i * step;
    if (row < n) ring.fill(i, w + row * k, static_cast<uint32_t>(row_bytes));
  };
  if (tid == 0)
    for (int i = 0; i < stages; ++i) fill(i);  // the weights do not wait for the producer
  cuda_pdl::wait_for_producer();              // x comes from the kernel before
  const int vecs = static_cast<int>(k / kVec<T>);
  const uint4* xv = reinterpret_cast<const uint4*>(x);
  for (int64_t i = 0; first + i * step < n; ++i) {
    const uint4* wr = reinterpret_cast<const uint4*>(ring.wait(i));
    float acc = 0.0f;
    for (int v = tid; v < vecs; v += kBulkThreads) {
      const uint4 wq = wr[v], xq = __ldg(xv + v);
      const T* we = reinterpret_cast<const T*>(&wq);
      const T* xe = reinterpret_cast<const T*>(&xq);
#pragma unroll
      for (int e = 0; e < kVec<T>; ++e) acc = fmaf(to_f(we[e]), to_f(xe[e]), acc);
    }
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (lane == 0) warp_sums[i & 1][warp] = acc;
    __syncthreads();  // the row's sums are in, and every thread is done with its slot
    if (tid == 0) {
      const int64_t row = first + i * step;
      float s = bias ? bias[row] : 0.0f;
#pragma unroll
      for (int q = 0; q < kBulkWarps; ++q) s += warp_sums[i & 1][q];
      y[row] = from_f<Ty>(s);
      fill(i + stages);
    }
  }
#endif
}

// CTAs of `kernel` that fit the GPU at once with `smem` bytes each (cached).
int resident_ctas(const void* kernel, size_t smem) {
  static std::mutex mu;
  static std::pair<const void*, size_t> last_key{nullptr, 0};
  static int last = 0;
  std::lock_guard<std::mutex> lock(mu);
  if (last_key.first == kernel && last_key.second == smem) return last;
  int device = 0, sms = 1, per_sm = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kBulkThreads, smem) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  last_key = {kernel, smem};
  last = per_sm * sms;
  return last;
}

template <typename T, typename Ty>
int launch(const T* x, const T* w, const float* bias, Ty* y, int64_t n, int64_t k, cudaStream_t s) {
  const int64_t row_bytes = k * static_cast<int64_t>(sizeof(T));
  const int stages = bulk_stages(row_bytes);
  if (stages == 0) return static_cast<int>(cudaErrorNotSupported);
  const size_t smem = static_cast<size_t>(stages * row_bytes);
  auto kernel = gemv_bulk_kernel<T, Ty>;
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)) !=
      cudaSuccess) {
    cudaGetLastError();
    return static_cast<int>(cudaErrorNotSupported);
  }
  const int resident = resident_ctas(reinterpret_cast<const void*>(kernel), smem);
  if (resident < 1) return static_cast<int>(cudaErrorNotSupported);
  // The fewest CTAs that still give none more rows than it must take.
  const int64_t rows_each = (n + resident - 1) / resident;
  const unsigned grid = static_cast<unsigned>((n + rows_each - 1) / rows_each);
  return static_cast<int>(
      cuda_pdl::launch_dependent(kernel, dim3(grid), dim3(kBulkThreads), smem, s, x, w, bias, y, n, k, stages));
}

}  // namespace

bool gemv_bulk_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("APH_GEMV_BULK");
    return v != nullptr && v[0] == '1';
  }();
  return on;
}

int gemv_bulk(const void* x, const void* w, const float* bias, void* y, int64_t n, int64_t k, int dtype,
              int y_dtype, void* stream) {
  if (n < 1 || k < 1 || !cuda_bulk::available()) return static_cast<int>(cudaErrorNotSupported);
  if (reinterpret_cast<uintptr_t>(x) % 16 != 0 || reinterpret_cast<uintptr_t>(w) % 16 != 0)
    return static_cast<int>(cudaErrorNotSupported);
  auto s = static_cast<cudaStream_t>(stream);
  // Not taken (NotSupported) unless both dtypes are known and k is whole
  // vectors; then the launch's own status (dispatch's cudaGetLastError
  // calls have already read it).
  int rc = static_cast<int>(cudaErrorNotSupported);
  dispatch(dtype, [&](auto t) {
    using T = decltype(t);
    if (k % kVec<T> != 0) return;
    dispatch(y_dtype, [&](auto ty) {
      using Ty = decltype(ty);
      rc = launch(static_cast<const T*>(x), static_cast<const T*>(w), bias, static_cast<Ty*>(y), n, k, s);
    });
  });
  return rc;
}

}  // namespace aph::ops::kernels
