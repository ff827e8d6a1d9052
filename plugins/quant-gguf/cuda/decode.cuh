// Device-side decoding of one 32-element chunk of a ggml block (in the
// padded device layout, device_layout.hpp) into int8 codes packed four per
// int plus an affine map per 16 elements: w = a[h]*q + b[h], h = half. Each
// decoder's codes lie in [kCodeMin, kCodeMax].
// kHasMin says whether b can be non-zero (the reference then adds it; for the
// other types it only multiplies, which matters for the sign of zero).
// Dequantize, get_rows and the generic matvec go through these; the fast
// matvecs of the common types (vecdot.cuh) read whole 16-byte pieces instead
// and must agree with them (the GPU tests compare both with the CPU).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "plugins/quant-gguf/cuda/device_math.cuh"

namespace aph::gguf::cuda {

struct Chunk {
  int q[8];  // q[0..3]: elements 0-15, q[4..7]: elements 16-31
  float a[2], b[2];
};

__device__ __forceinline__ float ld_f16(const uint8_t* p) {
  return __half2float(*reinterpret_cast<const __half*>(p));
}
__device__ __forceinline__ int ld32(const uint8_t* p) { return *reinterpret_cast<const int*>(p); }
__device__ __forceinline__ uint32_t ld_u16(const uint8_t* p) {
  return *reinterpret_cast<const uint16_t*>(p);
}

__device__ __forceinline__ void set_affine(Chunk& c, float a, float b) {
  c.a[0] = c.a[1] = a;
  c.b[0] = c.b[1] = b;
}

// Four nibble codes through the IQ4_NL table.
__device__ __forceinline__ int iq4_lookup(int nibbles4) {
  const int8_t table[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
  int r = 0;
#pragma unroll
  for (int k = 0; k < 4; ++k) r |= (static_cast<int>(static_cast<uint8_t>(table[(nibbles4 >> (8 * k)) & 15])) << (8 * k));
  return r;
}

// The bits qh[first..first+3] moved to bit 4 of four bytes.
__device__ __forceinline__ int spread4(uint32_t qh, int first) {
  int r = 0;
#pragma unroll
  for (int k = 0; k < 4; ++k) r |= static_cast<int>((qh >> (first + k)) & 1u) << (8 * k + 4);
  return r;
}

template <int TYPE>
struct Decoder;

template <>
struct Decoder<2> {  // Q4_0: d@2 qs@4
  static constexpr int kBlock = 32, kStride = 20;
  static constexpr bool kHasMin = false;
  static constexpr int kCodeMin = -8, kCodeMax = 7;
  __device__ static void chunk(const uint8_t* b, int, Chunk& c) {
    set_affine(c, ld_f16(b + 2), 0.0f);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      int w = ld32(b + 4 + 4 * i);
      c.q[i] = __vsub4(w & 0x0F0F0F0F, 0x08080808);
      c.q[i + 4] = __vsub4((w >> 4) & 0x0F0F0F0F, 0x08080808);
    }
  }
};

template <>
struct Decoder<3> {  // Q4_1: d@0 m@2 qs@4
  static constexpr int kBlock = 32, kStride = 20;
  static constexpr bool kHasMin = true;
  static constexpr int kCodeMin = 0, kCodeMax = 15;
  __device__ static void chunk(const uint8_t* b, int, Chunk& c) {
    set_affine(c, ld_f16(b), ld_f16(b + 2));
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      int w = ld32(b + 4 + 4 * i);
      c.q[i] = w & 0x0F0F0F0F;
      c.q[i + 4] = (w >> 4) & 0x0F0F0F0F;
    }
  }
};

template <>
struct Decoder<6> {  // Q5_0: d@2 qh@4 qs@8
  static constexpr int kBlock = 32, kStride = 24;
  static constexpr bool kHasMin = false;
  static constexpr int kCodeMin = -16, kCodeMax = 15;
  __device__ static void chunk(const uint8_t* b, int, Chunk& c) {
    set_affine(c, ld_f16(b + 2), 0.0f);
    uint32_t qh = static_cast<uint32_t>(ld32(b + 4));
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      int w = ld32(b + 8 + 4 * i);
      c.q[i] = __vsub4((w & 0x0F0F0F0F) | spread4(qh, 4 * i), 0x10101010);
      c.q[i + 4] = __vsub4(((w >> 4) & 0x0F0F0F0F) | spread4(qh, 16 + 4 * i), 0x10101010);
    }
  }
};

template <>
struct Decoder<7> {  // Q5_1: d@0 m@2 qh@4 qs@8
  static constexpr int kBlock = 32, kStride = 24;
  static constexpr bool kHasMin = true;
  static constexpr int kCodeMin = 0, kCodeMax = 31;
  __device__ static void chunk(const uint8_t* b, int, Chunk& c) {
    set_affine(c, ld_f16(b), ld_f16(b + 2));
    uint32_t qh = static_cast<uint32_t>(ld32(b + 4));
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      int w = ld32(b + 8 + 4 * i);
      c.q[i] = (w & 0x0F0F0F0F) | spread4(qh, 4 * i);
      c.q[i + 4] = ((w >> 4) & 0x0F0F0F0F) | spread4(qh, 16 + 4 * i);
    }
  }
};

template <>
struct Decoder<8> {  // Q8_0: d@2 qs@4
  static constexpr int kBlock = 32, kStride = 36;
  static constexpr bool kHasMin = false;
  static constexpr int kCodeMin = -128, kCodeMax = 127;
  __device__ static void chunk(const uint8_t* b, int, Chunk& c) {
    set_affine(c, ld_f16(b + 2), 0.0f);
#pragma unroll
    for (int i = 0; i < 8; ++i) c.q[i] = ld32(b + 4 + 4 * i);
  }
};

template <>
struct Decoder<10> {  // Q2_K: scales@0 qs@16 d@80 dmin@82
  static constexpr int kBlock = 256, kStride = 84;
  static constexpr bool kHasMin = true;
  static constexpr int kCodeMin = 0, kCodeMax = 3;
  __device__ static void chunk(const uint8_t* b, int j, Chunk& c) {
    const int h = j / 4, shift = 2 * (j % 4);
    float d = ld_f16(b + 80), dmin = ld_f16(b + 82);
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      int sc = b[2 * j + k];
      c.a[k] = d * static_cast<float>(sc & 15);
      c.b[k] = -(dmin * static_cast<float>(sc >> 4));
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) c.q[i] = (ld32(b + 16 + 32 * h + 4 * i) >> shift) & 0x03030303;
  }
};

template <>
struct Decoder<11> {  // Q3_K: hmask@0 qs@32 scales@96 d@108
  static constexpr int kBlock = 256, kStride = 112;
  static constexpr bool kHasMin = false;
  static constexpr int kCodeMin = -4, kCodeMax = 3;
  __device__ static void chunk(const uint8_t* b, int j, Chunk& c) {
    const int h = j / 4, jj = j % 4;
    const uint8_t* S = b + 96;
    float d = ld_f16(b + 108);
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      int s = 2 * j + k;
      int lo = s < 8 ? (S[s] & 15) : (S[s - 8] >> 4);
      int hi = (S[8 + s % 4] >> (2 * (s / 4))) & 3;
      c.a[k] = d * static_cast<float>((lo | (hi << 4)) - 32);
      c.b[k] = 0.0f;
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      int low = (ld32(b + 32 + 32 * h + 4 * i) >> (2 * jj)) & 0x03030303;
      int hm = (ld32(b + 4 * i) >> (4 * h + jj)) & 0x01010101;
      c.q[i] = __vsub4(low | (hm << 2), 0x04040404);
    }
  }
};

__device__ __forceinline__ void scale_min_k4(int j, const uint8_t* S, int& sc, int& m) {
  if (j < 4) {
    sc = S[j] & 63;
    m = S[j + 4] & 63;
  } else {
    sc = (S[j + 4] & 15) | ((S[j - 4] >> 6) << 4);
    m = (S[j + 4] >> 4) | ((S[j] >> 6) << 4);
  }
}

template <>
struct Decoder<12> {  // Q4_K: d@0 dmin@2 scales@4 qs@16
  static constexpr int kBlock = 256, kStride = 144;
  static constexpr bool kHasMin = true;
  static constexpr int kCodeMin = 0, kCodeMax = 15;
  __device__ static void chunk(const uint8_t* b, int j, Chunk& c) {
    int sc, m;
    scale_min_k4(j, b + 4, sc, m);
    set_affine(c, ld_f16(b) * static_cast<float>(sc), -(ld_f16(b + 2) * static_cast<float>(m)));
    const int4* qs = reinterpret_cast<const int4*>(b + 16 + 32 * (j / 2));
    int4 w0 = qs[0], w1 = qs[1];
    const int shift = 4 * (j % 2);
    int w[8] = {w0.x, w0.y, w0.z, w0.w, w1.x, w1.y, w1.z, w1.w};
#pragma unroll
    for (int i = 0; i < 8; ++i) c.q[i] = (w[i] >> shift) & 0x0F0F0F0F;
  }
};

template <>
struct Decoder<13> {  // Q5_K: d@0 dmin@2 scales@4 qh@16 qs@48
  static constexpr int kBlock = 256, kStride = 176;
  static constexpr bool kHasMin = true;
  static constexpr int kCodeMin = 0, kCodeMax = 31;
  __device__ static void chunk(const uint8_t* b, int j, Chunk& c) {
    int sc, m;
    scale_min_k4(j, b + 4, sc, m);
    set_affine(c, ld_f16(b) * static_cast<float>(sc), -(ld_f16(b + 2) * static_cast<float>(m)));
    const int shift = 4 * (j % 2);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      int lo = (ld32(b + 48 + 32 * (j / 2) + 4 * i) >> shift) & 0x0F0F0F0F;
      int hb = (ld32(b + 16 + 4 * i) >> j) & 0x01010101;
      c.q[i] = lo | (hb << 4);
    }
  }
};

// Q6_K rows are split (device_layout.hpp): ql+qh of block b @192b, its
// scales @192nb+16b, its d @208nb+2b, for nb blocks in the row.
template <>
struct Decoder<14> {
  static constexpr int kBlock = 256, kBytes = 210;
  static constexpr bool kHasMin = false, kSplit = true;
  static constexpr int kCodeMin = -32, kCodeMax = 31;
  __device__ static void chunk(const uint8_t* row, int64_t nb, int64_t blk, int j, Chunk& c) {
    const uint8_t* b = row + 192 * blk;
    const auto* scales = reinterpret_cast<const int8_t*>(row + 192 * nb + 16 * blk);
    const float d = ld_f16(row + 208 * nb + 2 * blk);
    const int h = j / 4, u = j % 4;
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      c.a[k] = d * static_cast<float>(scales[8 * h + 2 * u + k]);
      c.b[k] = 0.0f;
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      int lo = (ld32(b + 64 * h + 32 * (u & 1) + 4 * i) >> (4 * (u >> 1))) & 0x0F0F0F0F;
      int hi = (ld32(b + 128 + 32 * h + 4 * i) >> (2 * u)) & 0x03030303;
      c.q[i] = __vsub4(lo | (hi << 4), 0x20202020);
    }
  }
};

template <>
struct Decoder<20> {  // IQ4_NL: d@2 qs@4
  static constexpr int kBlock = 32, kStride = 20;
  static constexpr bool kHasMin = false;
  static constexpr int kCodeMin = -127, kCodeMax = 113;
  __device__ static void chunk(const uint8_t* b, int, Chunk& c) {
    set_affine(c, ld_f16(b + 2), 0.0f);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      int w = ld32(b + 4 + 4 * i);
      c.q[i] = iq4_lookup(w & 0x0F0F0F0F);
      c.q[i + 4] = iq4_lookup((w >> 4) & 0x0F0F0F0F);
    }
  }
};

template <>
struct Decoder<23> {  // IQ4_XS: d@0 scales_h@2 scales_l@4 qs@8
  static constexpr int kBlock = 256, kStride = 136;
  static constexpr bool kHasMin = false;
  static constexpr int kCodeMin = -127, kCodeMax = 113;
  __device__ static void chunk(const uint8_t* b, int ib, Chunk& c) {
    uint32_t scales_h = ld_u16(b + 2);
    int lo = (b[4 + ib / 2] >> (4 * (ib % 2))) & 15;
    int hi = (scales_h >> (2 * ib)) & 3;
    set_affine(c, ld_f16(b) * static_cast<float>((lo | (hi << 4)) - 32), 0.0f);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      int w = ld32(b + 8 + 16 * ib + 4 * i);
      c.q[i] = iq4_lookup(w & 0x0F0F0F0F);
      c.q[i + 4] = iq4_lookup((w >> 4) & 0x0F0F0F0F);
    }
  }
};

template <typename D, typename = void>
struct IsSplit {
  static constexpr bool value = false;
};
template <typename D>
struct IsSplit<D, decltype(void(D::kSplit))> {
  static constexpr bool value = D::kSplit;
};

// Bytes of a device row of nb blocks (device_layout.hpp's device_row_bytes).
template <int TYPE>
__host__ __device__ constexpr int64_t row_bytes(int64_t nb) {
  using D = Decoder<TYPE>;
  if constexpr (IsSplit<D>::value)
    return (nb * D::kBytes + 15) / 16 * 16;
  else
    return nb * D::kStride;
}

// Chunk j of block blk of a row of nb blocks, for either layout.
template <int TYPE>
__device__ __forceinline__ void decode_chunk(const uint8_t* row, int64_t nb, int64_t blk, int j,
                                             Chunk& c) {
  using D = Decoder<TYPE>;
  if constexpr (IsSplit<D>::value)
    D::chunk(row, nb, blk, j, c);
  else
    D::chunk(row + blk * D::kStride, j, c);
}

// Chunks c and c + 1 (c even) of a row of `chunks` chunks, each index past
// the row clamped to a chunk inside it (the caller sees that what it meets
// is zero or dropped): the tile GEMM decodes a row's chunks in pairs. Q4_K's pair is
// one sub-block pair of one block (its chunks come in eights), whose codes
// share their 32 bytes (low and high nibbles): one 16-byte header load and
// two code loads for both, against seven loads a chunk through
// Decoder<12>::chunk (two 2-byte, three 1-byte, two 16-byte); Q5_K adds two
// loads of the 32 high-bit bytes both share (21 a chunk apart). Q6_K's pair
// (chunks 2v, 2v + 1 of a block) is 64 adjacent bytes of low codes, 32
// shared bytes of high bits and 4 adjacent scales: 8 loads for both, against
// 19 a chunk (4-byte code loads) through Decoder<14>::chunk. Other types
// decode the two chunks apart.
//
// For those three the loads (load_chunk_pair, into PairBytes) and the
// decoding (decode_pair_bytes) also come apart, so that a loop can load its
// next step's pair before it decodes this one.
template <int TYPE>
struct PairBytes {
  static constexpr bool kLoads = false;
};
template <>
struct PairBytes<12> {  // Q4_K: header (d, dmin, scales), codes of sub-blocks 2 part, 2 part + 1
  static constexpr bool kLoads = true;
  int4 head, q[2];
  int part;
};
template <>
struct PairBytes<13> {  // Q5_K: as Q4_K, and the 32 high-bit bytes
  static constexpr bool kLoads = true;
  int4 head, q[2], qh[2];
  int part;
};
template <>
struct PairBytes<14> {  // Q6_K: 64 bytes of low codes, 32 of high bits, 4 scales, d
  static constexpr bool kLoads = true;
  int4 l[4], qh[2];
  int scales;
  uint32_t d_bits;
  int v;  // the pair's first chunk in its half block: 0 or 2
};

template <int TYPE>
__device__ __forceinline__ void load_chunk_pair(const uint8_t* row, int64_t nb, int c, int chunks, PairBytes<TYPE>& p) {
  using D = Decoder<TYPE>;
  constexpr int kChunksPerBlock = D::kBlock / 32;
  c = min(c, chunks - 2);
  if constexpr (TYPE == 12 || TYPE == 13) {
    // Q4_K: header, qs[128]; Q5_K: header, qh[32], qs[128].
    constexpr int kCodes = TYPE == 12 ? 16 : 48;
    const uint8_t* b = row + static_cast<int64_t>(c / kChunksPerBlock) * D::kStride;
    p.part = (c % kChunksPerBlock) / 2;
    p.head = ld_weights(b);
    p.q[0] = ld_weights(b + kCodes + 32 * p.part);
    p.q[1] = ld_weights(b + kCodes + 16 + 32 * p.part);
    if constexpr (TYPE == 13) p.qh[0] = ld_weights(b + 16), p.qh[1] = ld_weights(b + 32);
  } else {
    // The split layout of Decoder<14>: codes (ql 128, qh 64 bytes a block),
    // then the scales (16 a block), then d. Chunk j = 4 h + v of a block:
    // low nibbles (shift 4 (v / 2)) of ql[64 h + 32 (v % 2) ..], high bits
    // (shift 2 v) of qh[32 h ..], scales[8 h + 2 v ..].
    static_assert(TYPE == 14, "no shared-load pair for this type");
    const int64_t blk = c / kChunksPerBlock;
    const int j = c % kChunksPerBlock, h = j / 4;
    p.v = j % 4;  // even
    const uint8_t* b = row + 192 * blk;
#pragma unroll
    for (int i = 0; i < 4; ++i) p.l[i] = ld_weights(b + 64 * h + 16 * i);
    p.qh[0] = ld_weights(b + 128 + 32 * h);
    p.qh[1] = ld_weights(b + 128 + 32 * h + 16);
    p.scales = ld32(row + 192 * nb + 16 * blk + 8 * h + 2 * p.v);
    p.d_bits = ld_u16(row + 208 * nb + 2 * blk);
  }
}

template <int TYPE>
__device__ __forceinline__ void decode_pair_bytes(const PairBytes<TYPE>& p, Chunk& lo, Chunk& hi) {
  if constexpr (TYPE == 12 || TYPE == 13) {
    const K4Factors f = k4_pair_factors(p.head, p.part);
    set_affine(lo, f.da, -f.ma);
    set_affine(hi, f.db, -f.mb);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int w = int4_at(p.q[i / 4], i % 4);
      lo.q[i] = w & 0x0F0F0F0F;
      hi.q[i] = (w >> 4) & 0x0F0F0F0F;
      if constexpr (TYPE == 13) {  // the 5th bit of element 32 j + l at bit j of qh[l]
        const int high = int4_at(p.qh[i / 4], i % 4);
        lo.q[i] |= ((high >> (2 * p.part)) & 0x01010101) << 4;
        hi.q[i] |= ((high >> (2 * p.part + 1)) & 0x01010101) << 4;
      }
    }
  } else {
    static_assert(TYPE == 14, "no shared-load pair for this type");
    const float d = __half2float(__ushort_as_half(static_cast<unsigned short>(p.d_bits)));
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      lo.a[k] = d * static_cast<float>(static_cast<int8_t>(p.scales >> (8 * k)));
      hi.a[k] = d * static_cast<float>(static_cast<int8_t>(p.scales >> (8 * (k + 2))));
      lo.b[k] = hi.b[k] = 0.0f;
    }
    const int lshift = 4 * (p.v / 2);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int high = int4_at(p.qh[i / 4], i % 4);
      const int lo_codes = (int4_at(p.l[i / 4], i % 4) >> lshift) & 0x0F0F0F0F;
      const int hi_codes = (int4_at(p.l[2 + i / 4], i % 4) >> lshift) & 0x0F0F0F0F;
      lo.q[i] = __vsub4(lo_codes | (((high >> (2 * p.v)) & 0x03030303) << 4), 0x20202020);
      hi.q[i] = __vsub4(hi_codes | (((high >> (2 * p.v + 2)) & 0x03030303) << 4), 0x20202020);
    }
  }
}

template <int TYPE>
__device__ __forceinline__ void decode_chunk_pair(const uint8_t* row, int64_t nb, int c, int chunks, Chunk& lo,
                                                  Chunk& hi) {
  using D = Decoder<TYPE>;
  constexpr int kChunksPerBlock = D::kBlock / 32;
  if constexpr (PairBytes<TYPE>::kLoads) {
    PairBytes<TYPE> p;
    load_chunk_pair<TYPE>(row, nb, c, chunks, p);
    decode_pair_bytes<TYPE>(p, lo, hi);
  } else {
    const int c_lo = min(c, chunks - 1), c_hi = min(c + 1, chunks - 1);
    decode_chunk<TYPE>(row, nb, c_lo / kChunksPerBlock, c_lo % kChunksPerBlock, lo);
    decode_chunk<TYPE>(row, nb, c_hi / kChunksPerBlock, c_hi % kChunksPerBlock, hi);
  }
}

// The 32 values of a decoded chunk in T (F16/BF16), two per word, rounded as
// the CPU reference does: each product and sum separately.
template <int TYPE, typename T>
__device__ __forceinline__ void pack_chunk(const Chunk& ch, uint32_t (&packed)[16]) {
  using D = Decoder<TYPE>;
#pragma unroll
  for (int e = 0; e < 32; e += 2) {
    uint32_t pair[2];
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int q = static_cast<int8_t>(ch.q[(e + j) / 4] >> (8 * ((e + j) % 4)));
      const float p = __fmul_rn(ch.a[(e + j) / 16], static_cast<float>(q));
      pair[j] = bits_of(from_float<T>(D::kHasMin ? __fadd_rn(p, ch.b[(e + j) / 16]) : p));
    }
    packed[e / 2] = pair[0] | (pair[1] << 16);
  }
}

// pack_chunk's values for the tile GEMM without its two conversions an
// element (int to float, float to T) and its fp32 arithmetic: four to six
// paired instructions for two elements. A code q, shifted to
// u = q - kCodeMin >= 0, goes into the mantissa of the T whose exponent makes
// it kValue + u exactly (bf16 0x43uu = 128 + u for u < 128; half 0x64uu =
// 1024 + u for u < 1024). Adding kCodeMin - kValue gives q exactly. The scale a
// and offset b go in as the part that T holds and the part it loses
// (a_lo = a - a_hi): (q * a_hi + b_hi) + (q * a_lo + b_lo), the value rounded
// twice. With a and b rounded to T alone (one FMA), all values of a block
// shared one relative error of up to 2^-9 (bf16), which adds up on smooth
// activations instead of cancelling: the real SmolLM2 Q4_1 linears at m = 40
// were 2.0-2.9 % off the CPU against 0.3 % with pack_chunk (0.4 % with the
// split; a numpy simulation of the three forms on that file, stop 21). Needs
// the codes' span to fit the mantissa (fast_pack_fits). H200, 8B Q4_K_M at
// batch 64 (A/B on one machine): the one-FMA form 4121 against pack_chunk's
// 3968 tok/s (stop 20); the split form 4052 against the one-FMA form's 4099
// (stop 21). The GEMMs' share of the step fell only from 74 % to 73 %, so
// decoding was not what bounds them.
template <typename T>
struct PackMagic;
template <>
struct PackMagic<__nv_bfloat16> {
  static constexpr uint32_t kHigh = 0x43;  // 0x4300 = 128.0
  static constexpr int kValue = 128, kSpan = 127;
  using T2 = __nv_bfloat162;
  __device__ static T2 pair(float v) { return __float2bfloat162_rn(v); }
};
template <>
struct PackMagic<__half> {
  static constexpr uint32_t kHigh = 0x64;  // 0x6400 = 1024.0
  static constexpr int kValue = 1024, kSpan = 1023;
  using T2 = __half2;
  __device__ static T2 pair(float v) { return __float2half2_rn(v); }
};

template <int TYPE, typename T>
__host__ __device__ constexpr bool fast_pack_fits() {
  return Decoder<TYPE>::kCodeMax - Decoder<TYPE>::kCodeMin <= PackMagic<T>::kSpan;
}

template <int TYPE, typename T>
__device__ __forceinline__ void pack_chunk_fast(const Chunk& ch, uint32_t (&packed)[16]) {
  using D = Decoder<TYPE>;
  using M = PackMagic<T>;
  using T2 = typename M::T2;
  static_assert(fast_pack_fits<TYPE, T>(), "the codes' span must fit T's mantissa");
  // Bytewise q - kCodeMin (mod 256, so a negative minimum adds).
  constexpr uint32_t kShift = static_cast<uint32_t>(static_cast<uint8_t>(D::kCodeMin)) * 0x01010101u;
  const T2 to_code = M::pair(static_cast<float>(D::kCodeMin - M::kValue));
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const T2 a_hi = M::pair(ch.a[h]), b_hi = M::pair(ch.b[h]);
    const T2 a_lo = M::pair(ch.a[h] - __low2float(a_hi)), b_lo = M::pair(ch.b[h] - __low2float(b_hi));
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      const uint32_t u = kShift == 0 ? static_cast<uint32_t>(ch.q[4 * h + w])
                                     : __vsub4(static_cast<uint32_t>(ch.q[4 * h + w]), kShift);
      // Elements 4w, 4w+1 and 4w+2, 4w+3 of the half: byte i of u under the
      // magic high byte, two to a word (the byte of M::kHigh is selector 4).
#pragma unroll
      for (int pr = 0; pr < 2; ++pr) {
        const uint32_t bits = __byte_perm(u, M::kHigh, pr == 0 ? 0x4140 : 0x4342);
        T2 q = *reinterpret_cast<const T2*>(&bits);
        q = __hadd2(q, to_code);
        const T2 v = D::kHasMin ? __hadd2(__hfma2(q, a_hi, b_hi), __hfma2(q, a_lo, b_lo))
                                : __hfma2(q, a_lo, __hmul2(q, a_hi));
        packed[8 * h + 2 * w + pr] = *reinterpret_cast<const uint32_t*>(&v);
      }
    }
  }
}

// The tile GEMM's W values: the fast form when the codes fit, else the exact one.
template <int TYPE, typename T>
__device__ __forceinline__ void pack_chunk_for_gemm(const Chunk& ch, uint32_t (&packed)[16]) {
  if constexpr (fast_pack_fits<TYPE, T>())
    pack_chunk_fast<TYPE, T>(ch, packed);
  else
    pack_chunk<TYPE, T>(ch, packed);
}

template <int T>
struct TypeTag {
  static constexpr int value = T;
};

// Calls f(TypeTag<TYPE>{}) for a runtime ggml type; false when the type has
// no decoder.
template <typename F>
bool dispatch_type(uint32_t type, F&& f) {
  switch (type) {
    case 2: f(TypeTag<2>{}); return true;
    case 3: f(TypeTag<3>{}); return true;
    case 6: f(TypeTag<6>{}); return true;
    case 7: f(TypeTag<7>{}); return true;
    case 8: f(TypeTag<8>{}); return true;
    case 10: f(TypeTag<10>{}); return true;
    case 11: f(TypeTag<11>{}); return true;
    case 12: f(TypeTag<12>{}); return true;
    case 13: f(TypeTag<13>{}); return true;
    case 14: f(TypeTag<14>{}); return true;
    case 20: f(TypeTag<20>{}); return true;
    case 23: f(TypeTag<23>{}); return true;
    default: return false;
  }
}

}  // namespace aph::gguf::cuda
