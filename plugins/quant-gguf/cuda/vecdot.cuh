// Per-type pieces of the fast matvec (matvec_fast.cu): kLanes lanes share a
// 256-element block and each lane reads its share as whole 16-byte loads;
// kMinCtas is the batch-1 kernel's occupancy bound, kWideCtas its wide
// form's (two steps of weights in flight; 0: no wide form). For every type:
//   load_w(row, nb, blk, part, W&)  weights of lane `part` of block blk of a
//                                   row of nb blocks (loads only)
//   unpack(W, part, C&)             int8 codes four per int and the float
//                                   factors of the lane's 64 elements
//   load_x(xq, xd, xs, blk, part, X&)  the matching activation codes, their
//                                   scales (per 32) and scaled sums (per 16),
//                                   from global or shared memory
//   dot(C, X)                       the lane's share of row · x
// unpack is separate so that a batch of m activation rows reuses one unpack.
// Bit layouts: FORMATS.md §2.2; device layouts: device_layout.hpp.
#pragma once

#include <cuda_fp16.h>
#include <stdint.h>

#include "plugins/quant-gguf/cuda/device_math.cuh"

namespace aph::gguf::cuda {

__device__ __forceinline__ int dot16(const int* q, const int4& x, int acc) {
  acc = __dp4a(q[0], x.x, acc);
  acc = __dp4a(q[1], x.y, acc);
  acc = __dp4a(q[2], x.z, acc);
  return __dp4a(q[3], x.w, acc);
}

// 64 consecutive activation codes (elements 64*part .. +63 of block blk),
// their 2 scales and 4 scaled half-sums.
struct X64 {
  int4 q[4];
  float2 d;
  float4 s;
};
__device__ __forceinline__ void load_x64(const int8_t* xq, const float* xd, const float* xs,
                                         int64_t blk, int part, X64& x) {
  const int4* q = reinterpret_cast<const int4*>(xq + 256 * blk + 64 * part);
#pragma unroll
  for (int i = 0; i < 4; ++i) x.q[i] = q[i];
  x.d = *reinterpret_cast<const float2*>(xd + 8 * blk + 2 * part);
  x.s = *reinterpret_cast<const float4*>(xs + 16 * blk + 4 * part);
}

// Q4_K / Q5_K lane: sub-blocks 2*part (codes a) and 2*part+1 (codes b),
// w = d*sc*q - dmin*m with unsigned codes.
struct CodesK4 {
  int a[8], b[8];
  float da, db, ma, mb;  // d*sc and dmin*m of each sub-block
};

// The factors of sub-blocks 2*part and 2*part+1 (device_math.cuh).
__device__ __forceinline__ void k4_factors(const int4& head, int part, CodesK4& c) {
  const K4Factors f = k4_pair_factors(head, part);
  c.da = f.da;
  c.db = f.db;
  c.ma = f.ma;
  c.mb = f.mb;
}

__device__ __forceinline__ float dot_k4(const CodesK4& c, const X64& x) {
  const int sa = dot16(c.a + 4, x.q[1], dot16(c.a, x.q[0], 0));
  const int sb = dot16(c.b + 4, x.q[3], dot16(c.b, x.q[2], 0));
  return c.da * x.d.x * static_cast<float>(sa) + c.db * x.d.y * static_cast<float>(sb) -
         (c.ma * (x.s.x + x.s.y) + c.mb * (x.s.z + x.s.w));
}

// Q4_K, 144-byte blocks (9 x 16): header (d, dmin, 12 scale bytes), then
// qs[128]. Lane `part` reads the header and qs[32*part .. +31]: the low
// nibbles are sub-block 2*part, the high nibbles sub-block 2*part+1.
struct VecQ4K {
  static constexpr int kLanes = 4;
  static constexpr int kMinCtas = 7;  // <= 73 registers: measured 5% faster than 74
  static constexpr int kWideCtas = 4;  // <= 128 registers (113 used; at 5 an SM, 96 and 60 bytes spilled)
  __host__ __device__ static constexpr int64_t row_bytes(int64_t nb) { return 144 * nb; }
  struct W {
    int4 head, q0, q1;
  };
  using C = CodesK4;
  using X = X64;
  __device__ static void load_w(const uint8_t* row, int64_t, int64_t blk, int part, W& w) {
    const uint8_t* b = row + 144 * blk;
    w.head = ld_weights(b);
    w.q0 = ld_weights(b + 16 + 32 * part);
    w.q1 = ld_weights(b + 32 + 32 * part);
  }
  __device__ static void unpack(const W& w, int part, C& c) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int q0 = int4_at(w.q0, i), q1 = int4_at(w.q1, i);
      c.a[i] = q0 & 0x0F0F0F0F;
      c.a[i + 4] = q1 & 0x0F0F0F0F;
      c.b[i] = (q0 >> 4) & 0x0F0F0F0F;
      c.b[i + 4] = (q1 >> 4) & 0x0F0F0F0F;
    }
    k4_factors(w.head, part, c);
  }
  __device__ static void load_x(const int8_t* xq, const float* xd, const float* xs, int64_t blk,
                                int part, X& x) {
    load_x64(xq, xd, xs, blk, part, x);
  }
  __device__ static float dot(const C& c, const X& x) { return dot_k4(c, x); }
};

// Q5_K, 176-byte blocks (11 x 16): header, qh[32], qs[128]. As Q4_K, plus
// the 5th bit of element 32*j+l at bit j of qh[l]; every lane reads all 32
// qh bytes (two loads that L1/L2 serve to the block's other lanes).
struct VecQ5K {
  static constexpr int kLanes = 4;
  static constexpr int kMinCtas = 5;  // <= 102 registers (about what it needs)
  static constexpr int kWideCtas = 0;  // spilled at 128 registers
  __host__ __device__ static constexpr int64_t row_bytes(int64_t nb) { return 176 * nb; }
  struct W {
    int4 head, h0, h1, q0, q1;
  };
  using C = CodesK4;
  using X = X64;
  __device__ static void load_w(const uint8_t* row, int64_t, int64_t blk, int part, W& w) {
    const uint8_t* b = row + 176 * blk;
    w.head = ld_weights(b);
    w.h0 = ld_weights(b + 16);
    w.h1 = ld_weights(b + 32);
    w.q0 = ld_weights(b + 48 + 32 * part);
    w.q1 = ld_weights(b + 64 + 32 * part);
  }
  __device__ static void unpack(const W& w, int part, C& c) {
    const int ja = 2 * part, jb = 2 * part + 1;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int q0 = int4_at(w.q0, i), q1 = int4_at(w.q1, i);
      const int h0 = int4_at(w.h0, i), h1 = int4_at(w.h1, i);
      c.a[i] = (q0 & 0x0F0F0F0F) | (((h0 >> ja) & 0x01010101) << 4);
      c.a[i + 4] = (q1 & 0x0F0F0F0F) | (((h1 >> ja) & 0x01010101) << 4);
      c.b[i] = ((q0 >> 4) & 0x0F0F0F0F) | (((h0 >> jb) & 0x01010101) << 4);
      c.b[i + 4] = ((q1 >> 4) & 0x0F0F0F0F) | (((h1 >> jb) & 0x01010101) << 4);
    }
    k4_factors(w.head, part, c);
  }
  __device__ static void load_x(const int8_t* xq, const float* xd, const float* xs, int64_t blk,
                                int part, X& x) {
    load_x64(xq, xd, xs, blk, part, x);
  }
  __device__ static float dot(const C& c, const X& x) { return dot_k4(c, x); }
};

// Per byte v - 32 for bytes v in [0, 63] (no borrow crosses a byte: each
// byte is 128 + v before the subtraction).
__device__ __forceinline__ int sub32_bytes(int v) {
  return static_cast<int>(((static_cast<unsigned>(v) | 0x80808080u) - 0x20202020u) ^ 0x80808080u);
}

// Q6_K, split rows: ql[128] qh[64] per block @192*blk, scales[16] @192*nb +
// 16*blk, d @208*nb + 2*blk. Element 128h+32u+l: low 4 bits in
// ql[64h+32(u&1)+l] (low nibble for u < 2), high 2 in qh[32h+l] >> 2u,
// scale scales[8h+2u+l/16]. Lane part = 2h+w reads l = 16w..16w+15 of
// half h for all four u: two ql pieces, one qh piece, 8 scale bytes.
struct VecQ6K {
  static constexpr int kLanes = 4;
  static constexpr int kMinCtas = 5;  // <= 102 registers; a cap of 72 measured 10% slower
  static constexpr int kWideCtas = 4;  // <= 128 registers (121 used)
  __host__ __device__ static constexpr int64_t row_bytes(int64_t nb) {
    return (210 * nb + 15) / 16 * 16;
  }
  struct W {
    int4 la, lb, qh;
    int2 sc;
    float d;
  };
  struct C {
    int q[4][4];  // [u][]: 16 codes - 32
    float s[4];   // d * scale
  };
  struct X {
    int4 q[4];
    float4 d;
  };
  __device__ static void load_w(const uint8_t* row, int64_t nb, int64_t blk, int part, W& w) {
    const int h = part >> 1, lw = part & 1;
    const uint8_t* b = row + 192 * blk;
    w.la = ld_weights(b + 64 * h + 16 * lw);
    w.lb = ld_weights(b + 64 * h + 32 + 16 * lw);
    w.qh = ld_weights(b + 128 + 32 * h + 16 * lw);
    w.sc = __ldg(reinterpret_cast<const int2*>(row + 192 * nb + 16 * blk + 8 * h));
    w.d = __half2float(__ldg(reinterpret_cast<const __half*>(row + 208 * nb + 2 * blk)));
  }
  __device__ static void unpack(const W& w, int part, C& c) {
    const int lw = part & 1;
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int4& l = (u & 1) ? w.lb : w.la;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int lo = (int4_at(l, i) >> (4 * (u >> 1))) & 0x0F0F0F0F;
        const int hi = ((int4_at(w.qh, i) >> (2 * u)) & 0x03030303) << 4;
        c.q[u][i] = sub32_bytes(lo | hi);
      }
      const int word = (u >> 1) ? w.sc.y : w.sc.x;
      c.s[u] = w.d * static_cast<float>(static_cast<int8_t>(word >> (8 * (2 * (u & 1) + lw))));
    }
  }
  __device__ static void load_x(const int8_t* xq, const float* xd, const float*, int64_t blk,
                                int part, X& x) {
    const int h = part >> 1, lw = part & 1;
    const int8_t* q = xq + 256 * blk + 128 * h + 16 * lw;
#pragma unroll
    for (int u = 0; u < 4; ++u) x.q[u] = *reinterpret_cast<const int4*>(q + 32 * u);
    x.d = *reinterpret_cast<const float4*>(xd + 8 * blk + 4 * h);
  }
  __device__ static float dot(const C& c, const X& x) {
    return c.s[0] * x.d.x * static_cast<float>(dot16(c.q[0], x.q[0], 0)) +
           c.s[1] * x.d.y * static_cast<float>(dot16(c.q[1], x.q[1], 0)) +
           c.s[2] * x.d.z * static_cast<float>(dot16(c.q[2], x.q[2], 0)) +
           c.s[3] * x.d.w * static_cast<float>(dot16(c.q[3], x.q[3], 0));
  }
};

}  // namespace aph::gguf::cuda
