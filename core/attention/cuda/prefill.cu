// Prefill attention (flash-attention 2 style) for sequences with q_len > 1.
//
// One CTA = (64 query rows, KV head, sequence), where the rows are the
// (token, head) pairs of the KV head's query group flattened token-major, so
// every K/V tile is read once for the whole GQA group. Each of the 4 warps
// owns 16 rows; QK^T and PV run on tensor cores (mma.sync m16n8k16, fp32
// accumulate), with the softmax state and the output kept in registers in the
// mma accumulator layout. K/V are gathered through the block table and
// converted to the activation dtype on their way to shared memory (fp8 too).
// Sequences with q_len == 1 are left to the decode kernel.
#include <cmath>

#include "core/attention/cuda/attention_kernels.h"
#include "core/attention/cuda/call_params.cuh"
#include "core/attention/cuda/kv_types.cuh"
#include "core/common/cuda_mma.cuh"

namespace aph::attention::cuda {
namespace {

using cuda_mma::mma16816;

constexpr int kThreads = 128;
constexpr int kRows = 64;
using PrefillParams = AttentionCallParams;

template <int HD>
struct PrefillShape {
  static constexpr int kCols = HD > 128 ? 32 : 64;  // KV tokens per tile
  // 8 elements of padding: the fragment loads of 8 rows x 4 columns hit 32 banks.
  static constexpr int kStride = HD + 8;
  static constexpr int kSmemBytes = (kRows + 2 * kCols) * kStride * 2;
};

__device__ __forceinline__ uint32_t ld32(const uint16_t* p) { return *reinterpret_cast<const uint32_t*>(p); }

template <int HD, typename ActT, typename KvT>
__global__ void __launch_bounds__(kThreads) prefill_kernel(PrefillParams p) {
  using S = PrefillShape<HD>;
  constexpr int kCols = S::kCols;
  constexpr int kStride = S::kStride;
  constexpr int kB = KvTraits<KvT>::kBytes;
  extern __shared__ __align__(16) uint16_t smem16[];
  uint16_t* q_s = smem16;
  uint16_t* k_s = q_s + kRows * kStride;
  uint16_t* v_s = k_s + kCols * kStride;

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int gid = lane / 4, tig = lane % 4;  // mma fragment coordinates
  const int seq = blockIdx.z, kvh = blockIdx.y;
  const int r0 = blockIdx.x * kRows;
  const int q_start = p.query_start[seq];
  const int q_len = p.query_start[seq + 1] - q_start;
  const int G = p.group;
  const int n_rows = q_len * G;
  if (q_len <= 1 || r0 >= n_rows) return;
  const int ctx = p.context_lens[seq];
  const int prefix = ctx - q_len;

  const ActT* q = static_cast<const ActT*>(p.q);
  for (int i = tid; i < kRows * (HD / 8); i += kThreads) {
    const int r = i / (HD / 8), c = i % (HD / 8);
    const int f = r0 + r;
    uint4 val = make_uint4(0, 0, 0, 0);
    if (f < n_rows) {
      const int qi = f / G, g = f % G;
      val = *reinterpret_cast<const uint4*>(
          q + (static_cast<size_t>(q_start + qi) * p.num_heads + kvh * G + g) * HD + c * 8);
    }
    *reinterpret_cast<uint4*>(q_s + r * kStride + c * 8) = val;
  }

  const int last_row = min(r0 + kRows, n_rows) - 1;
  const int kv_end = prefix + last_row / G + 1;  // causal horizon of this CTA's last row
  const int row_a = r0 + warp * 16 + gid, row_b = row_a + 8;
  const int pos_a = row_a < n_rows ? prefix + row_a / G : -1;
  const int pos_b = row_b < n_rows ? prefix + row_b / G : -1;

  float o[HD / 8][4];
#pragma unroll
  for (int n = 0; n < HD / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float m_a = -INFINITY, m_b = -INFINITY, l_a = 0.0f, l_b = 0.0f;

  const int32_t* table = p.block_tables + static_cast<size_t>(seq) * p.max_blocks_per_seq;
  const size_t slot_stride = static_cast<size_t>(p.num_kv_heads) * HD * kB;
  const uint16_t* qw = q_s + (warp * 16) * kStride;

  for (int j0 = 0; j0 < kv_end; j0 += kCols) {
    __syncthreads();  // everyone is done with the previous tile
    for (int i = tid; i < kCols * (HD / 8); i += kThreads) {
      const int t = i / (HD / 8), c = i % (HD / 8);
      const int tok = j0 + t;
      uint4 kw = make_uint4(0, 0, 0, 0), vw = kw;
      if (tok < kv_end) {
        const int64_t blk = table[tok / p.block_size];
        const size_t off = (static_cast<size_t>(blk) * p.block_size + tok % p.block_size) * slot_stride +
                           static_cast<size_t>(kvh) * HD * kB + c * 8 * kB;
        float f[8];
        kv8_to_float<KvT>(p.k_cache + off, f);
        kw = make_uint4(pack2<ActT>(f[0], f[1]), pack2<ActT>(f[2], f[3]), pack2<ActT>(f[4], f[5]),
                        pack2<ActT>(f[6], f[7]));
        kv8_to_float<KvT>(p.v_cache + off, f);
        vw = make_uint4(pack2<ActT>(f[0], f[1]), pack2<ActT>(f[2], f[3]), pack2<ActT>(f[4], f[5]),
                        pack2<ActT>(f[6], f[7]));
      }
      *reinterpret_cast<uint4*>(k_s + t * kStride + c * 8) = kw;
      *reinterpret_cast<uint4*>(v_s + t * kStride + c * 8) = vw;
    }
    __syncthreads();

    // S = Q K^T for this warp's 16 rows x kCols tokens.
    float s[kCols / 8][4];
#pragma unroll
    for (int n = 0; n < kCols / 8; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < HD / 16; ++kk) {
      uint32_t a[4];
      a[0] = ld32(qw + gid * kStride + kk * 16 + 2 * tig);
      a[1] = ld32(qw + (gid + 8) * kStride + kk * 16 + 2 * tig);
      a[2] = ld32(qw + gid * kStride + kk * 16 + 2 * tig + 8);
      a[3] = ld32(qw + (gid + 8) * kStride + kk * 16 + 2 * tig + 8);
#pragma unroll
      for (int n = 0; n < kCols / 8; ++n) {
        const uint16_t* kr = k_s + (n * 8 + gid) * kStride + kk * 16 + 2 * tig;
        mma16816<ActT>(s[n], a, ld32(kr), ld32(kr + 8));
      }
    }

    // Causal mask, scale, online softmax (rows a = gid, b = gid + 8 of the warp).
    float mx_a = -INFINITY, mx_b = -INFINITY;
#pragma unroll
    for (int n = 0; n < kCols / 8; ++n) {
      const int col = j0 + n * 8 + 2 * tig;
      s[n][0] = col <= pos_a ? s[n][0] * p.qk_scale : -INFINITY;
      s[n][1] = col + 1 <= pos_a ? s[n][1] * p.qk_scale : -INFINITY;
      s[n][2] = col <= pos_b ? s[n][2] * p.qk_scale : -INFINITY;
      s[n][3] = col + 1 <= pos_b ? s[n][3] * p.qk_scale : -INFINITY;
      mx_a = fmaxf(mx_a, fmaxf(s[n][0], s[n][1]));
      mx_b = fmaxf(mx_b, fmaxf(s[n][2], s[n][3]));
    }
    // The four lanes of a quad share a row.
    mx_a = fmaxf(mx_a, __shfl_xor_sync(0xffffffffu, mx_a, 1));
    mx_a = fmaxf(mx_a, __shfl_xor_sync(0xffffffffu, mx_a, 2));
    mx_b = fmaxf(mx_b, __shfl_xor_sync(0xffffffffu, mx_b, 1));
    mx_b = fmaxf(mx_b, __shfl_xor_sync(0xffffffffu, mx_b, 2));
    const float mn_a = fmaxf(m_a, mx_a), mn_b = fmaxf(m_b, mx_b);
    const float use_a = mn_a == -INFINITY ? 0.0f : mn_a;
    const float use_b = mn_b == -INFINITY ? 0.0f : mn_b;
    const float alpha_a = exp2f(m_a - use_a), alpha_b = exp2f(m_b - use_b);
    m_a = mn_a;
    m_b = mn_b;
    float sum_a = 0.0f, sum_b = 0.0f;
#pragma unroll
    for (int n = 0; n < kCols / 8; ++n) {
      s[n][0] = exp2f(s[n][0] - use_a);
      s[n][1] = exp2f(s[n][1] - use_a);
      s[n][2] = exp2f(s[n][2] - use_b);
      s[n][3] = exp2f(s[n][3] - use_b);
      sum_a += s[n][0] + s[n][1];
      sum_b += s[n][2] + s[n][3];
    }
    l_a = l_a * alpha_a + sum_a;  // per-lane partial; the quad is summed at the end
    l_b = l_b * alpha_b + sum_b;
#pragma unroll
    for (int n = 0; n < HD / 8; ++n) {
      o[n][0] *= alpha_a;
      o[n][1] *= alpha_a;
      o[n][2] *= alpha_b;
      o[n][3] *= alpha_b;
    }

    // O += P V: the S accumulators of two n-tiles form one A fragment.
#pragma unroll
    for (int kk = 0; kk < kCols / 16; ++kk) {
      uint32_t a[4];
      a[0] = pack2<ActT>(s[2 * kk][0], s[2 * kk][1]);
      a[1] = pack2<ActT>(s[2 * kk][2], s[2 * kk][3]);
      a[2] = pack2<ActT>(s[2 * kk + 1][0], s[2 * kk + 1][1]);
      a[3] = pack2<ActT>(s[2 * kk + 1][2], s[2 * kk + 1][3]);
      const uint16_t* v0 = v_s + (kk * 16 + 2 * tig) * kStride + gid;
#pragma unroll
      for (int n = 0; n < HD / 8; ++n) {
        const uint16_t* vp = v0 + n * 8;
        const uint32_t b0 = vp[0] | (static_cast<uint32_t>(vp[kStride]) << 16);
        const uint32_t b1 = vp[8 * kStride] | (static_cast<uint32_t>(vp[9 * kStride]) << 16);
        mma16816<ActT>(o[n], a, b0, b1);
      }
    }
  }

  l_a += __shfl_xor_sync(0xffffffffu, l_a, 1);
  l_a += __shfl_xor_sync(0xffffffffu, l_a, 2);
  l_b += __shfl_xor_sync(0xffffffffu, l_b, 1);
  l_b += __shfl_xor_sync(0xffffffffu, l_b, 2);
  ActT* out = static_cast<ActT*>(p.out);
  const float inv_a = l_a > 0.0f ? p.v_scale / l_a : 0.0f;
  const float inv_b = l_b > 0.0f ? p.v_scale / l_b : 0.0f;
  if (pos_a >= 0) {
    uint32_t* dst = reinterpret_cast<uint32_t*>(
        out + (static_cast<size_t>(q_start + row_a / G) * p.num_heads + kvh * G + row_a % G) * HD + 2 * tig);
#pragma unroll
    for (int n = 0; n < HD / 8; ++n) dst[n * 4] = pack2<ActT>(o[n][0] * inv_a, o[n][1] * inv_a);
  }
  if (pos_b >= 0) {
    uint32_t* dst = reinterpret_cast<uint32_t*>(
        out + (static_cast<size_t>(q_start + row_b / G) * p.num_heads + kvh * G + row_b % G) * HD + 2 * tig);
#pragma unroll
    for (int n = 0; n < HD / 8; ++n) dst[n * 4] = pack2<ActT>(o[n][2] * inv_b, o[n][3] * inv_b);
  }
}

template <int HD, typename ActT, typename KvT>
cudaError_t launch_typed(const PagedAttentionArgs& a, cudaStream_t stream) {
  const PrefillParams p = make_call_params(a, kIsFp8<KvT>);
  constexpr int smem = PrefillShape<HD>::kSmemBytes;
  auto kernel = prefill_kernel<HD, ActT, KvT>;
  cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (e != cudaSuccess) return e;
  const int64_t rows = static_cast<int64_t>(a.max_query_len) * p.group;
  dim3 grid(static_cast<unsigned>((rows + kRows - 1) / kRows), p.num_kv_heads, a.n_seqs);
  kernel<<<grid, kThreads, smem, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_prefill(const PagedAttentionArgs& a, cudaStream_t stream) {
  if (a.n_seqs == 0 || a.max_query_len <= 1) return cudaSuccess;
  return dispatch_attention_types(a, [&](auto hd, auto act, auto kv) {
    return launch_typed<decltype(hd)::value, decltype(act), decltype(kv)>(a, stream);
  });
}

}  // namespace aph::attention::cuda
