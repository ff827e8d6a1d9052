// GGUF CUDA kernels: activation quantization, the generic small-batch matvec
// (integer dot products on int8 codes, like llama.cpp's MMVQ: weights are
// read once and x costs one byte per element; Q4_K/Q5_K/Q6_K have a faster
// one in matvec_fast.cu), dequantization to F16/BF16 for the prefill GEMM and
// for get_rows, and small helpers.
#include <algorithm>
#include <cstdlib>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "core/common/cuda_pdl.cuh"
#include "core/common/env_flag.hpp"
#include "plugins/quant-gguf/cuda/decode.cuh"
#include "plugins/quant-gguf/cuda/device_math.cuh"
#include "plugins/quant-gguf/cuda/kernels.hpp"
#include "plugins/quant-gguf/cuda/matvec_fast.hpp"
#include "plugins/quant-gguf/cuda/matvec_targets.cuh"
#include "plugins/quant-gguf/cuda/quantize_x.cuh"
#include "plugins/quant-gguf/cuda/row_sink.cuh"

namespace aph::gguf::cuda {

namespace {

// Launched as a dependent (core/common/cuda_pdl.cuh); lets the matvec after
// it start loading weights at once.
template <typename T>
__global__ void quantize_act_kernel(const T* x, const T* up, int64_t nblocks, int8_t* xq, float* xd, float* xs) {
  cuda_pdl::allow_dependents();
  cuda_pdl::wait_for_producer();
  const int64_t blk = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (blk >= nblocks) return;
  quantize_block32(x + 32 * blk, up ? up + 32 * blk : nullptr, xq + 32 * blk, xd + blk, xs + 2 * blk);
}

// A thread per 8 elements (quantize_slot8, the codes of quantize_block32):
// four times as many threads as quantize_act_kernel's, so a 4096-wide row is
// one short round of 4 CTAs instead of a thread's 32 values in turn. Rows of
// k (a multiple of 32) contiguous, x and up 16-byte aligned; with up, x =
// silu(x) * up. Whole warps reach quantize_slot8 (its shuffles): the 4 lanes
// of a 32-block hold one row's slots 4i..4i+3 since a row has a multiple of
// 4 slots.
template <typename T>
__global__ void quantize_act_slots_kernel(const T* x, const T* up, int64_t k, int64_t m, int8_t* xq, float* xd,
                                          float* xs) {
  cuda_pdl::allow_dependents();
  cuda_pdl::wait_for_producer();
  const int64_t slots = k / 8;
  const int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t row = g / slots, s = g % slots;
  const bool live = row < m;
  float v[8] = {};
  if (live) {
    load8(x + row * k + 8 * s, v);
    if (up != nullptr) {
      float u[8];
      load8(up + row * k + 8 * s, u);
#pragma unroll
      for (int j = 0; j < 8; ++j) v[j] = silu_mul_rounded<T>(v[j], u[j]);
    }
  }
  quantize_slot8(v, live, s, SmemX{xq + row * k, xd + row * (k / 32), xs + row * (k / 16)});
}

// One CTA per row: the norm needs the row's sum of squares before any block
// is quantized. Replaces the host's add_rms_norm launch and the plain
// quantization launch with one.
template <typename T>
__global__ void rms_norm_quantize_act_kernel(const T* residual, const T* delta, const float* w, float eps,
                                             T* residual_out, int64_t k, int8_t* xq, float* xd, float* xs) {
  cuda_pdl::allow_dependents();
  const FirstNormW first_w = first_norm_w(w, k);
  cuda_pdl::wait_for_producer();
  const int64_t row = blockIdx.x;
  const SmemX dst{xq + row * k, xd + row * (k / 32), xs + row * (k / 16)};
  quantize_normed_row(residual + row * k, delta ? delta + row * k : nullptr, w, eps,
                      residual_out ? residual_out + row * k : nullptr, k, dst, first_w);
}

constexpr int kWarpsPerBlock = 4;
// Chunks each lane decodes before it does any math: at batch 1 the kernel is
// bound by how many weight bytes are in flight, and a 4096-wide Q4_K row is
// only 4 chunks per lane, so the whole row is requested at once.
constexpr int kMatvecDepth = 4;

// One decoded weight chunk (chunk c of a row) against chunk c of a
// quantized x row: codes xq, scales xd per 32, scaled sums xs per 16.
__device__ __forceinline__ float chunk_dot(const Chunk& ch, const int8_t* xq, const float* xd, const float* xs,
                                           int64_t c) {
  const int4* xv = reinterpret_cast<const int4*>(xq + c * 32);
  const int4 x0 = xv[0], x1 = xv[1];  // global or shared: no __ldg
  int s0 = __dp4a(ch.q[0], x0.x, 0);
  s0 = __dp4a(ch.q[1], x0.y, s0);
  s0 = __dp4a(ch.q[2], x0.z, s0);
  s0 = __dp4a(ch.q[3], x0.w, s0);
  int s1 = __dp4a(ch.q[4], x1.x, 0);
  s1 = __dp4a(ch.q[5], x1.y, s1);
  s1 = __dp4a(ch.q[6], x1.z, s1);
  s1 = __dp4a(ch.q[7], x1.w, s1);
  const float2 sx = *reinterpret_cast<const float2*>(xs + 2 * c);
  return xd[c] * (ch.a[0] * static_cast<float>(s0) + ch.a[1] * static_cast<float>(s1)) + ch.b[0] * sx.x +
         ch.b[1] * sx.y;
}

// Row `row` of target t by one warp (all lanes call: warp shuffles).
template <int TYPE, int MT, typename T>
__device__ __forceinline__ void matvec_row(const MatvecTarget& t, const RopeKv& kv, int64_t row, int64_t k,
                                           const int8_t* xq, const float* xd, const float* xs, int m) {
  using D = Decoder<TYPE>;
  const int lane = threadIdx.x % 32;
  constexpr int kChunksPerBlock = D::kBlock / 32;
  const int64_t chunks = k / 32;
  const int64_t nb = k / D::kBlock;
  const uint8_t* wrow = t.w + row * row_bytes<TYPE>(nb);
  float acc[MT];
#pragma unroll
  for (int i = 0; i < MT; ++i) acc[i] = 0.0f;
  for (int64_t c0 = lane; c0 < chunks; c0 += 32 * kMatvecDepth) {
    Chunk ch[kMatvecDepth];
#pragma unroll
    for (int u = 0; u < kMatvecDepth; ++u) {
      const int64_t c = c0 + 32 * u;
      if (c < chunks)
        decode_chunk<TYPE>(wrow, nb, c / kChunksPerBlock, static_cast<int>(c % kChunksPerBlock),
                           ch[u]);
    }
#pragma unroll
    for (int u = 0; u < kMatvecDepth; ++u) {
      const int64_t c = c0 + 32 * u;
      if (c >= chunks) break;
#pragma unroll
      for (int i = 0; i < MT; ++i) {
        if (i < m) {
          acc[i] += chunk_dot(ch[u], xq + i * k, xd + i * chunks, xs + i * 2 * chunks, c);
        }
      }
    }
  }
#pragma unroll
  for (int i = 0; i < MT; ++i) {
    if (i < m) {
      const float v = warp_sum(acc[i]) + (t.bias ? t.bias[row] : 0.0f);
      if (lane == 0) sink_row<T>(t, kv, i, row, v, v);  // y or the V cache: no RoPE pair here (launch_matvec_multi)
    }
  }
}

// One work item's weights in a warp of the raw-x matvec (m == 1, k <= 2048 =
// kCtaQuantizationMaxK, which launch_matvec_multi enforces):
// rows row0 .. row0 + kRows - 1, chunks lane and lane + 32 (kSlots) of each,
// in registers. Loading is separate from the math so that a CTA's first item
// can be loaded before x's producer finishes (the weights do not depend on
// it). kRows > 1 (rows of at most 32 chunks, k <= 1024): a lane holds one
// chunk of a row, so the bytes in flight come from rows instead, all
// requested before any math (a matrix of many short rows: the LM head).
template <int TYPE, int kRows>
struct RawItem {
  static constexpr int kSlots = kRows == 1 ? 2 : 1;
  Chunk ch[kRows][kSlots];

  __device__ __forceinline__ void load(const MatvecTarget& t, int64_t row0, int64_t k) {
    using D = Decoder<TYPE>;
    constexpr int kChunksPerBlock = D::kBlock / 32;
    const int lane = threadIdx.x % 32;
    const int64_t chunks = k / 32, nb = k / D::kBlock;
    const int64_t bytes = row_bytes<TYPE>(nb);
#pragma unroll
    for (int j = 0; j < kRows; ++j) {
#pragma unroll
      for (int s = 0; s < kSlots; ++s) {
        const int64_t c = lane + 32 * s;
        if (c < chunks && row0 + j < t.n)
          decode_chunk<TYPE>(t.w + (row0 + j) * bytes, nb, c / kChunksPerBlock, static_cast<int>(c % kChunksPerBlock),
                             ch[j][s]);
      }
    }
  }

  // The rows' dot products with x (all lanes call: warp shuffles); lane j
  // stores row row0 + j. The sums run in matvec_row's order, so the outputs
  // equal those of the quantized-x form bit for bit.
  template <typename T>
  __device__ __forceinline__ void finish(const MatvecTarget& t, int64_t row0, int64_t k, const XCodes& x) const {
    const int lane = threadIdx.x % 32;
    const int64_t chunks = k / 32;
    float acc[kRows];
#pragma unroll
    for (int j = 0; j < kRows; ++j) {
      acc[j] = 0.0f;
#pragma unroll
      for (int s = 0; s < kSlots; ++s) {
        const int64_t c = lane + 32 * s;
        if (c < chunks && row0 + j < t.n) acc[j] += chunk_dot(ch[j][s], x.q, x.d, x.s, c);
      }
    }
#pragma unroll
    for (int j = 0; j < kRows; ++j) acc[j] = warp_sum(acc[j]);
    if (lane < kRows && row0 + lane < t.n) {
      float v = acc[0];
#pragma unroll
      for (int j = 1; j < kRows; ++j) v = lane == j ? acc[j] : v;
      const int64_t row = row0 + lane;
      static_cast<T*>(t.y)[row] = from_float<T>(v + (t.bias ? t.bias[row] : 0.0f));
    }
  }
};

// One warp per output row; lanes stride over the row's 32-element chunks.
// MT is the batch capacity (1 or 8); m <= MT rows of x are live. kRaw
// (m == 1): every CTA quantizes the raw x into shared memory first and loops
// over work items of kWarpsPerBlock * kRows rows (grid = resident CTAs);
// kRows > 1 (short rows, RawItem): a warp takes kRows consecutive rows at
// once.
template <int TYPE, int MT, bool kRaw, typename T, int kRows = 1>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    matvec_kernel(const MatvecTargets targets, int64_t k, const MatvecX x, int m) {
  static_assert(!kRaw || MT == 1, "raw x is one row");
  static_assert(kRows == 1 || kRaw, "several rows a warp: raw x only");
  const unsigned items = targets.first_cta[targets.count];
  // This warp's rows of work item v head for L2 (all lanes call).
  auto prefetch_item = [&](unsigned v) {
    int64_t cta = 0;
    if (v >= items) return;
    const MatvecTarget& t = target_at(targets, v, &cta);
    const int64_t row = (cta * kWarpsPerBlock + threadIdx.x / 32) * kRows;
    const int64_t bytes = row_bytes<TYPE>(k / Decoder<TYPE>::kBlock);
    if (row < t.n) prefetch_l2(t.w + row * bytes, bytes * (t.n - row < kRows ? t.n - row : kRows));
  };
  if constexpr (kRaw) {
    // Short rows, latency-bound: the first item's weights load into
    // registers (APH_GGUF_PRELOAD=0: into L2 only) while x's producer
    // finishes, so that after the wait only x's load and quantization stand
    // before the math. H200, in a CUDA graph (aph_bench_gguf_matvec): Q4_1
    // 576 x 576 2.2 -> 2.0 us, 1536 x 576 2.4 -> 2.0, 576 x 1536 2.8 -> 2.4,
    // the Q8_0 head 49152 x 576 13.0 -> 11.6; SmolLM2-135M decode after 512,
    // runs interleaved: the real Q4_1 1549.6 -> 1712.4 tok/s, a random Q4_0
    // 1538.5 -> 1705.3 (medians of 4).
    RawItem<TYPE, kRows> w;
    auto item_row = [&](unsigned v, const MatvecTarget*& t) {
      int64_t cta = 0;
      t = &target_at(targets, v, &cta);
      return (cta * kWarpsPerBlock + threadIdx.x / 32) * kRows;
    };
    const MatvecTarget* t = nullptr;
    int64_t row = item_row(blockIdx.x, t);
    const bool held = x.preload;  // the first item is in registers
    if (held) {
      if (row < t->n) w.load(*t, row, k);
      prefetch_item(blockIdx.x + gridDim.x);
    } else {
      prefetch_item(blockIdx.x);
    }
    const XCodes xc = matvec_x<true, T>(x, k);  // launched as a dependent: waits for x here
    for (unsigned v = blockIdx.x; v < items; v += gridDim.x) {
      if (!(held && v == blockIdx.x)) {
        // A resident grid loops: the next item's rows load into L2 while
        // this one's dot products wait on theirs.
        prefetch_item(v + gridDim.x);
        row = item_row(v, t);
        if (row < t->n) w.load(*t, row, k);
      }
      if (row < t->n) w.template finish<T>(*t, row, k, xc);
    }
  } else {
    if (x.release_dependents) cuda_pdl::allow_dependents();  // the attention (MatvecX)
    const XCodes xc = matvec_x<false, T>(x, k);  // launched as a dependent: waits for x here
    for (unsigned v = blockIdx.x; v < items; v += gridDim.x) {
      int64_t cta = 0;
      const MatvecTarget& t = target_at(targets, v, &cta);
      const int64_t row = cta * kWarpsPerBlock + threadIdx.x / 32;
      if (row < t.n) matvec_row<TYPE, MT, T>(t, x.kv, row, k, xc.q, xc.d, xc.s, m);
    }
  }
}

// One thread per (row, 32-element chunk). Rounds each product and sum
// separately so the values equal the CPU reference decoding exactly.
template <int TYPE, typename T>
__global__ void dequant_rows_kernel(const uint8_t* __restrict__ w, int64_t n, int64_t k,
                                    const int32_t* __restrict__ rows, int64_t m, T* __restrict__ out,
                                    int* bad_id) {
  using D = Decoder<TYPE>;
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t chunks = k / 32;
  if (idx >= m * chunks) return;
  const int64_t i = idx / chunks, c = idx % chunks;
  const int64_t r = rows ? rows[i] : i;
  T* o = out + i * k + c * 32;
  if (r < 0 || r >= n) {
    for (int e = 0; e < 32; ++e) o[e] = from_float<T>(0.0f);
    if (c == 0 && bad_id) *bad_id = 1;
    return;
  }
  constexpr int kChunksPerBlock = D::kBlock / 32;
  const int64_t nb = k / D::kBlock;
  Chunk ch;
  decode_chunk<TYPE>(w + r * row_bytes<TYPE>(nb), nb, c / kChunksPerBlock,
                     static_cast<int>(c % kChunksPerBlock), ch);
  // Each thread writes its 32 values as four 16-byte stores: element-wise
  // 2-byte stores from lanes 64 bytes apart made every store instruction touch
  // 32 sectors, and a batch-64 step spent ~90 ms here.
  uint32_t packed[16];
  pack_chunk<TYPE, T>(ch, packed);
  if (reinterpret_cast<uintptr_t>(o) % 16 == 0) {
    auto* o4 = reinterpret_cast<uint4*>(o);
#pragma unroll
    for (int v = 0; v < 4; ++v)
      o4[v] = make_uint4(packed[4 * v], packed[4 * v + 1], packed[4 * v + 2], packed[4 * v + 3]);
  } else {
    auto* o2 = reinterpret_cast<uint16_t*>(o);
#pragma unroll
    for (int e = 0; e < 32; ++e) o2[e] = static_cast<uint16_t>(packed[e / 2] >> (16 * (e % 2)));
  }
}

template <typename T>
__global__ void add_bias_kernel(T* y, int64_t m, int64_t n, const float* bias) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= m * n) return;
  y[idx] = from_float<T>(to_float(y[idx]) + bias[idx % n]);
}

template <typename T>
__global__ void convert_kernel(const uint8_t* src, uint32_t src_type, int64_t count, T* dst) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  float v;
  if (src_type == 0)
    v = reinterpret_cast<const float*>(src)[i];
  else if (src_type == 1)
    v = __half2float(reinterpret_cast<const __half*>(src)[i]);
  else
    v = __bfloat162float(reinterpret_cast<const __nv_bfloat16*>(src)[i]);
  dst[i] = from_float<T>(v);
}

__global__ void gather_rows_kernel(const uint16_t* w, int64_t n, int64_t k, const int32_t* ids,
                                   int64_t m, uint16_t* out) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= m * k) return;
  const int64_t i = idx / k, c = idx % k;
  const int64_t r = ids[i];
  out[idx] = (r >= 0 && r < n) ? w[r * k + c] : 0;
}

// Rows a warp takes at once in the raw matvec of many short rows (the LM
// head): APH_GGUF_SHORT_ROWS = 1 (a row a warp, as the layers), 4 or 8.
// H200, the SmolLM2 head (Q8_0, 49152 x 576, aph_bench_gguf_matvec in a
// CUDA graph): 20.2 us with 1, 13.5 with 4, 15.9 with 8 (116 registers: by the
// register count 4 CTAs an SM against 7); decode512 of the real SmolLM2-135M-Instruct Q4_1,
// runs interleaved on one machine: 1454.6-1461.7 tok/s with 1, 1471.7-1472.5
// with 4, 1463.7-1466.4 with 8. With the first item's weights loaded before
// the wait (RawItem): the head 16.7 / 12.7 / 14.4-14.5 us, the real model
// 1723.5-1726.0 tok/s with 4 against 1706.8-1716.6 with 8.
int short_rows_per_warp() {
  static const int rows = [] {
    const long r = env_int("APH_GGUF_SHORT_ROWS", 4);
    return r == 1 || r == 8 ? static_cast<int>(r) : 4;
  }();
  return rows;
}

unsigned grid_for(int64_t work, int threads) {
  return static_cast<unsigned>((work + threads - 1) / threads);
}

template <typename T>
int matvec_typed(uint32_t type, const MatvecTarget* targets, int count, int64_t k, const MatvecX& x,
                 int64_t m, int sm_count, cudaStream_t s) {
  cudaError_t rc = cudaSuccess;
  const MatvecTargets ts = plan_targets(targets, count, kWarpsPerBlock);
  const unsigned items = ts.first_cta[count];
  const dim3 block(kWarpsPerBlock * 32);
  bool ok = dispatch_type(type, [&](auto tag) {
    constexpr int kType = decltype(tag)::value;
    if constexpr (has_fast_matvec(kType)) {
      rc = cudaErrorInvalidValue;  // launch_matvec_multi sends these to matvec_fast.cu
    } else if (x.raw) {
      const auto kernel = matvec_kernel<kType, 1, true, T>;
      const size_t smem = static_cast<size_t>(smem_x_bytes(k));
      const unsigned resident = resident_grid(kernel, kWarpsPerBlock * 32, smem, sm_count, items);
      const int rows = short_rows_per_warp();
      if (items > resident && k <= 32 * 32 && rows > 1) {  // many short rows: the LM head
        const MatvecTargets wide = plan_targets(targets, count, kWarpsPerBlock * rows);
        const unsigned wide_items = wide.first_cta[count];
        auto launch_rows = [&](auto kernel_rows) {
          const dim3 grid(resident_grid(kernel_rows, kWarpsPerBlock * 32, smem, sm_count, wide_items));
          return cuda_pdl::launch_dependent(kernel_rows, grid, block, smem, s, wide, k, x, 1);
        };
        rc = rows == 8 ? launch_rows(matvec_kernel<kType, 1, true, T, 8>)
                       : launch_rows(matvec_kernel<kType, 1, true, T, 4>);
      } else {
        rc = cuda_pdl::launch_dependent(kernel, dim3(resident), block, smem, s, ts, k, x, 1);
      }
    } else if (m == 1) {
      rc = cuda_pdl::launch_dependent(matvec_kernel<kType, 1, false, T>, dim3(items), block, 0, s, ts, k, x, 1);
    } else {
      rc = cuda_pdl::launch_dependent(matvec_kernel<kType, 8, false, T>, dim3(items), block, 0, s, ts, k, x,
                                      static_cast<int>(m));
    }
  });
  if (!ok) return static_cast<int>(cudaErrorInvalidValue);
  return static_cast<int>(rc);
}

template <typename T>
int dequant_typed(uint32_t type, const uint8_t* w, int64_t n, int64_t k, const int32_t* rows,
                  int64_t m, T* out, int* bad_id, cudaStream_t s) {
  bool ok = dispatch_type(type, [&](auto tag) {
    constexpr int kType = decltype(tag)::value;
    dequant_rows_kernel<kType, T><<<grid_for(m * (k / 32), 256), 256, 0, s>>>(w, n, k, rows, m, out, bad_id);
  });
  if (!ok) return static_cast<int>(cudaErrorInvalidValue);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

bool has_kernels(uint32_t type) {
  return dispatch_type(type, [](auto) {});
}

int launch_quantize_act(const void* x, const void* up, bool bf16, int64_t m, int64_t k, int8_t* xq, float* xd,
                        float* xs, void* stream) {
  if (k % 32 != 0) return static_cast<int>(cudaErrorInvalidValue);
  auto s = static_cast<cudaStream_t>(stream);
  const bool aligned = reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(up) % 16 == 0;
  auto launch = [&](auto tag) {
    using T = decltype(tag);
    const T* xt = static_cast<const T*>(x);
    const T* ut = static_cast<const T*>(up);
    if (aligned) {  // a thread per 8 elements
      const int64_t threads = m * k / 8;
      return cuda_pdl::launch_dependent(quantize_act_slots_kernel<T>, dim3(grid_for(threads, 128)), dim3(128), 0, s,
                                        xt, ut, k, m, xq, xd, xs);
    }
    const int64_t nblocks = m * k / 32;  // a thread per 32-block, any alignment
    return cuda_pdl::launch_dependent(quantize_act_kernel<T>, dim3(grid_for(nblocks, 128)), dim3(128), 0, s, xt, ut,
                                      nblocks, xq, xd, xs);
  };
  return static_cast<int>(bf16 ? launch(__nv_bfloat16{}) : launch(__half{}));
}

int launch_rms_norm_quantize_act(const void* residual, const void* delta, const float* w, float eps,
                                 void* residual_out, bool bf16, int64_t m, int64_t k, int8_t* xq, float* xd,
                                 float* xs, void* stream) {
  if (m < 1 || k % 32 != 0) return static_cast<int>(cudaErrorInvalidValue);
  auto s = static_cast<cudaStream_t>(stream);
  // A thread per 8 elements up to 1024 (rows of 8192, held in registers
  // between the passes); longer rows loop. (256 threads, two slots each for
  // a 4096-wide row, read it in two rounds of L2 latency.)
  const unsigned threads = static_cast<unsigned>(std::min<int64_t>(1024, (k / 8 + 31) / 32 * 32));
  auto launch = [&](auto tag) {
    using T = decltype(tag);
    return static_cast<int>(cuda_pdl::launch_dependent(
        rms_norm_quantize_act_kernel<T>, dim3(static_cast<unsigned>(m)), dim3(threads), 0, s,
        static_cast<const T*>(residual), static_cast<const T*>(delta), w, eps, static_cast<T*>(residual_out), k, xq,
        xd, xs));
  };
  return bf16 ? launch(__nv_bfloat16{}) : launch(__half{});
}

// The raw-x form quantizes x in every CTA of 4 warps, so it pays only for
// short rows, and only in the generic matvec. H200, one matvec in a CUDA
// graph (aph_bench_gguf_matvec), quantization kernel + matvec against raw x:
// Q4_1 576x576 3.6 -> 2.4 us, 576x1536 4.3 -> 2.8 us (the 135M model's
// decode 975 -> 1121 tok/s); Q4_K rows of 4096 and 14336 were slower in
// every form tried (matvec_fast.cu).
constexpr int64_t kCtaQuantizationMaxK = 2048;
// RawItem holds kSlots chunks of 32 a lane for a row a warp.
static_assert(kCtaQuantizationMaxK <= 32 * 32 * RawItem<2, 1>::kSlots, "a raw row must fit a warp's RawItem");
bool fits_in_cta_quantization(uint32_t type, int64_t k) {
  return !has_fast_matvec(type) && k % 32 == 0 && k <= kCtaQuantizationMaxK;
}

int launch_matvec_multi(uint32_t type, const MatvecTarget* targets, int count, int64_t k, const MatvecX& x,
                        int64_t m, bool bf16, int sm_count, void* stream) {
  if (m < 1 || m > 8 || count < 1 || count > kMaxMatvecTargets) return static_cast<int>(cudaErrorInvalidValue);
  if (x.raw && (m != 1 || !fits_in_cta_quantization(type, k) || reinterpret_cast<uintptr_t>(x.raw) % 16 != 0))
    return static_cast<int>(cudaErrorInvalidValue);
  static const bool preload = env_flag("APH_GGUF_PRELOAD", true);
  if (x.up && (!x.raw || reinterpret_cast<uintptr_t>(x.up) % 16 != 0)) return static_cast<int>(cudaErrorInvalidValue);
  if (x.norm_w && (!x.raw || x.up || reinterpret_cast<uintptr_t>(x.delta) % 16 != 0 ||
                   reinterpret_cast<uintptr_t>(x.residual_out) % 16 != 0))
    return static_cast<int>(cudaErrorInvalidValue);
  for (int i = 0; i < count; ++i) {
    if (targets[i].n < 1) return static_cast<int>(cudaErrorInvalidValue);
    // A RoPE pair's rows share a warp only in the fast matvec (two rows a
    // warp); the raw-x form stores y only.
    const RowSink sink = targets[i].sink;
    if ((sink_pairs_rows(sink) && !has_fast_matvec(type)) || (sink != RowSink::kY && x.raw))
      return static_cast<int>(cudaErrorInvalidValue);
  }
  if (has_fast_matvec(type)) return launch_fast_matvec_multi(type, targets, count, k, x, m, bf16, stream);
  auto s = static_cast<cudaStream_t>(stream);
  MatvecX xp = x;
  xp.preload = preload;
  if (bf16) return matvec_typed<__nv_bfloat16>(type, targets, count, k, xp, m, sm_count, s);
  return matvec_typed<__half>(type, targets, count, k, xp, m, sm_count, s);
}

int launch_matvec(uint32_t type, const uint8_t* w, int64_t n, int64_t k, const MatvecX& x, int64_t m,
                  const float* bias, void* y, bool bf16, int sm_count, void* stream) {
  const MatvecTarget target{w, n, bias, y};
  return launch_matvec_multi(type, &target, 1, k, x, m, bf16, sm_count, stream);
}

int launch_dequant_rows(uint32_t type, const uint8_t* w, int64_t n, int64_t k, const int32_t* rows,
                        int64_t m, void* out, bool bf16, int* bad_id, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  if (bf16) return dequant_typed(type, w, n, k, rows, m, static_cast<__nv_bfloat16*>(out), bad_id, s);
  return dequant_typed(type, w, n, k, rows, m, static_cast<__half*>(out), bad_id, s);
}

int launch_gather_rows(const void* w, int64_t n, int64_t k, const int32_t* ids, int64_t m, void* out,
                       void* stream) {
  gather_rows_kernel<<<grid_for(m * k, 256), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const uint16_t*>(w), n, k, ids, m, static_cast<uint16_t*>(out));
  return static_cast<int>(cudaGetLastError());
}

int launch_add_bias(void* y, bool bf16, int64_t m, int64_t n, const float* bias, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  if (bf16)
    add_bias_kernel<<<grid_for(m * n, 256), 256, 0, s>>>(static_cast<__nv_bfloat16*>(y), m, n, bias);
  else
    add_bias_kernel<<<grid_for(m * n, 256), 256, 0, s>>>(static_cast<__half*>(y), m, n, bias);
  return static_cast<int>(cudaGetLastError());
}

int launch_convert(const void* src, uint32_t src_type, int64_t count, void* dst, bool bf16,
                   void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  auto p = static_cast<const uint8_t*>(src);
  if (bf16)
    convert_kernel<<<grid_for(count, 256), 256, 0, s>>>(p, src_type, count, static_cast<__nv_bfloat16*>(dst));
  else
    convert_kernel<<<grid_for(count, 256), 256, 0, s>>>(p, src_type, count, static_cast<__half*>(dst));
  return static_cast<int>(cudaGetLastError());
}

}  // namespace aph::gguf::cuda
