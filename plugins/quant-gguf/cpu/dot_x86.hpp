// The x86 kernels of the CPU linear as templates over the integer dot
// instruction I (I::dot(acc, u8 codes, s8 activations): acc plus, per int32
// lane, the sum of four products). Included only by dot_avx2.cpp (maddubs +
// madd) and dot_vnni.cpp (vpdpbusd), each compiled with its own flags; both
// sums are exact, so both files' kernels give the same bits.
//
// Everything here has internal linkage, so no copy built with the wider
// instruction sets can be merged into the other file's code.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "plugins/quant-gguf/container/ggml_types.hpp"
#include "plugins/quant-gguf/cpu/block_scales.hpp"
#include "plugins/quant-gguf/cpu/dot.hpp"

namespace aph::gguf {
namespace {


inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float f16(const uint8_t* p) {
  uint16_t h;
  __builtin_memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// v[i] lane j -> v[j] lane i.
inline void transpose8(__m256 (&v)[8]) {
  __m256 t[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(v[i], v[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(v[i], v[i + 1]);
  }
  __m256 u[8];
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    v[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
    v[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
  }
}

// ---- The canonical per-group fold, shared by both row-block kernels. ----

// Lanes are the eight weight rows: acc += float(idot) * (a * dx), off += b * sx.
inline void fold(__m256& acc, __m256& off, __m256i idot, __m256 a, __m256 b, float dx, float sx) {
  acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(idot), _mm256_mul_ps(a, _mm256_set1_ps(dx)), acc);
  off = _mm256_fmadd_ps(b, _mm256_set1_ps(sx), off);
}

inline float group_sum(const ActQ8& x, int64_t g, int group) {
  return group == 16 ? x.s16[g] : x.s16[2 * g] + x.s16[2 * g + 1];
}

// Lane i of *lo = the sum of v[i]'s lanes 0-3, of *hi = of its lanes 4-7
// (exact: integers). For a 32-element partial, the two groups of 16.
inline void reduce8_halves(const __m256i* v, __m256i* lo, __m256i* hi) {
  const __m256i ab = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
  const __m256i cd = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
  *lo = _mm256_permute2x128_si256(ab, cd, 0x20);
  *hi = _mm256_permute2x128_si256(ab, cd, 0x31);
}

// ---- Unpacked rows (any type): lanes are rows from the start. ----

// R activation rows at once share each weight load. The integer dot wants
// unsigned * signed, so the sign of w moves onto x (|products| <= 128 * 127:
// a pair fits maddubs' int16).
template <class I, int R>
void rows8_block(const Rows8& w, const ActQ8* x, int64_t k, float* out) {
  const int G = w.group, chunks = G / 4;
  __m256 acc[R], off[R];
  for (int r = 0; r < R; ++r) acc[r] = off[r] = _mm256_setzero_ps();
  for (int64_t g = 0; g < k / G; ++g) {
    __m256i idot[R];
    for (int r = 0; r < R; ++r) idot[r] = _mm256_setzero_si256();
    for (int c = 0; c < chunks; ++c) {
      const int64_t chunk = g * chunks + c;
      const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.q + chunk * 32));
      const __m256i wabs = _mm256_sign_epi8(wv, wv);
      for (int r = 0; r < R; ++r) {
        int32_t four;
        __builtin_memcpy(&four, x[r].q + chunk * 4, 4);
        const __m256i xv = _mm256_sign_epi8(_mm256_set1_epi32(four), wv);
        idot[r] = I::dot(idot[r], wabs, xv);
      }
    }
    const __m256 a = _mm256_loadu_ps(w.a + g * 8), b = _mm256_loadu_ps(w.b + g * 8);
    for (int r = 0; r < R; ++r) fold(acc[r], off[r], idot[r], a, b, x[r].d[g * G / 32], group_sum(x[r], g, G));
  }
  for (int r = 0; r < R; ++r) _mm256_storeu_ps(out + r * 8, _mm256_add_ps(acc[r], off[r]));
}

template <class I>
void rows8(const Rows8& w, const ActQ8* x, int64_t m, int64_t k, float* out) {
  int64_t r = 0;
  for (; r + 4 <= m; r += 4) rows8_block<I, 4>(w, x + r, k, out + r * 8);
  for (; r < m; ++r) rows8_block<I, 1>(w, x + r, k, out + r * 8);
}

// ---- Direct from ggml blocks: per row, 32-element partials; reduce8 turns
// eight rows' partials into one vector of exact group sums. ----

// Nibbles of 16 bytes as 32 unsigned codes: low nibbles are elements 0-15,
// high nibbles 16-31 (the Q4_0 nibble order).
inline __m256i nibbles(const uint8_t* qs) {
  __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m128i low = _mm_set1_epi8(0x0F);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), low), _mm_and_si128(v, low));
}

// Each block type: the codes of 32-element chunk c of a row as a partial
// (I::dot of 32 codes: lanes 0-3 hold elements 0-15, lanes 4-7 elements
// 16-31), the integer to subtract per group for codes stored with a bias
// (times the group's activation sum), its scales, and whether its offsets b
// can be other than zero.
// Q4_0 and Q4_1: a 32-element block's 16 bytes of nibbles after its header
// (the scale, and for Q4_1 the minimum).
template <int kBytes, int kHeader, int kCodeBias, bool kHasOffsets>
struct Nibbles32 {
  static constexpr int kGroup = 32, kBlockElems = 32, kBlockBytes = kBytes, kBias = kCodeBias;
  static constexpr bool kOffsets = kHasOffsets;
  template <class I>
  static __m256i partial(const uint8_t* row, int64_t c, __m256i xv) {
    return I::dot(_mm256_setzero_si256(), nibbles(row + kBytes * c + kHeader), xv);
  }
};

struct Q4_0 : Nibbles32<18, 2, 8, false> {
  static void scales(const uint8_t* blk, float* a, float* b) { scales_q4_0(blk, a, b, f16); }
};

struct Q4_1 : Nibbles32<20, 4, 0, true> {
  static void scales(const uint8_t* blk, float* a, float* b) { scales_q4_1(blk, a, b, f16); }
};

struct Q8_0 {
  static constexpr int kGroup = 32, kBlockElems = 32, kBlockBytes = 34, kBias = 0;
  static constexpr bool kOffsets = false;
  template <class I>
  static __m256i partial(const uint8_t* row, int64_t c, __m256i xv) {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 34 * c + 2));
    return I::dot(_mm256_setzero_si256(), _mm256_sign_epi8(w, w), _mm256_sign_epi8(xv, w));
  }
  static void scales(const uint8_t* blk, float* a, float* b) { scales_q8_0(blk, a, b, f16); }
};

// Sub-block j of 32: the low (even j) or high (odd j) nibbles of 32 bytes.
struct Q4_K {
  static constexpr int kGroup = 32, kBlockElems = 256, kBlockBytes = 144, kBias = 0;
  static constexpr bool kOffsets = true;
  template <class I>
  static __m256i partial(const uint8_t* row, int64_t c, __m256i xv) {
    const int j = static_cast<int>(c % 8);
    const __m256i v = _mm256_loadu_si256(
        reinterpret_cast<const __m256i*>(row + 144 * (c / 8) + 16 + 32 * (j / 2)));
    const __m256i low = _mm256_set1_epi8(0x0F);
    return I::dot(_mm256_setzero_si256(),
                  j % 2 ? _mm256_and_si256(_mm256_srli_epi16(v, 4), low) : _mm256_and_si256(v, low), xv);
  }
  static void scales(const uint8_t* blk, float* a, float* b) { scales_q4_k(blk, a, b, f16); }
};

// Chunk u of half h: ql nibble | qh bits << 4, in [0, 63]; stored minus 32.
struct Q6_K {
  static constexpr int kGroup = 16, kBlockElems = 256, kBlockBytes = 210, kBias = 32;
  static constexpr bool kOffsets = false;
  template <class I>
  static __m256i partial(const uint8_t* row, int64_t c, __m256i xv) {
    const uint8_t* blk = row + 210 * (c / 8);
    const int h = static_cast<int>(c % 8) / 4, u = static_cast<int>(c % 4);
    const __m256i ql = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 64 * h + 32 * (u & 1)));
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 128 + 32 * h));
    const __m256i lo = _mm256_and_si256(u < 2 ? ql : _mm256_srli_epi16(ql, 4), _mm256_set1_epi8(0x0F));
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * u), _mm256_set1_epi8(0x03));
    return I::dot(_mm256_setzero_si256(), _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4)), xv);
  }
  static void scales(const uint8_t* blk, float* a, float* b) { scales_q6_k(blk, a, b, f16); }
  // The 16 scales of block blk of eight rows at once, lanes = rows (a8 as
  // rows8_direct lays it out): the same products d * scale as scales(), a
  // transpose instead of 128 scattered stores.
  static void scales8(const uint8_t* const* rows, int64_t blk, float* a8) {
    __m256 lo[8], hi[8];
    for (int i = 0; i < 8; ++i) {
      const uint8_t* b = rows[i] + blk * kBlockBytes;
      const __m256 d = _mm256_set1_ps(f16(b + 208));
      const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 192));
      lo[i] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc)));
      hi[i] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(sc, 8))));
    }
    transpose8(lo);
    transpose8(hi);
    float* out = a8 + blk * 16 * 8;
    for (int s = 0; s < 8; ++s) {
      _mm256_storeu_ps(out + s * 8, lo[s]);
      _mm256_storeu_ps(out + (s + 8) * 8, hi[s]);
    }
  }
};

template <class I, class T>
void rows8_direct(const uint8_t* const* rows, const ActQ8* x, int64_t m, int64_t k, float* out) {
  constexpr int G = T::kGroup, per_block = T::kBlockElems / G;
  const int64_t groups = k / G;
  // The eight rows' scales, lanes = rows, once for all activation rows.
  thread_local std::vector<float> ab;
  if (ab.size() < static_cast<size_t>(groups) * 16) ab.resize(groups * 16);
  float* a8 = ab.data();
  float* b8 = a8 + groups * 8;
  // Types without offsets store none (the scattered stores cost as much as
  // the scales); their b stays 0, so the fold adds the same zeros.
  if constexpr (!T::kOffsets) std::fill(b8, b8 + groups * 8, 0.0f);
  if constexpr (requires { T::scales8(rows, 0, a8); }) {
    for (int64_t blk = 0; blk < k / T::kBlockElems; ++blk) T::scales8(rows, blk, a8);
  } else {
    for (int i = 0; i < 8; ++i)
      for (int64_t blk = 0; blk < k / T::kBlockElems; ++blk) {
        float a[per_block], b[per_block];
        T::scales(rows[i] + blk * T::kBlockBytes, a, b);
        for (int s = 0; s < per_block; ++s) {
          a8[(blk * per_block + s) * 8 + i] = a[s];
          if constexpr (T::kOffsets) b8[(blk * per_block + s) * 8 + i] = b[s];
        }
      }
  }
  for (int64_t r = 0; r < m; ++r) {
    const ActQ8& xr = x[r];
    __m256 acc = _mm256_setzero_ps(), off = _mm256_setzero_ps();
    for (int64_t c = 0; c < k / 32; ++c) {
      const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xr.q + 32 * c));
      __m256i v[8];
      for (int i = 0; i < 8; ++i) v[i] = T::template partial<I>(rows[i], c, xv);
      // Groups of this chunk: one of 32, or two of 16 (lanes 0-3, 4-7).
      __m256i sums[2];
      reduce8_halves(v, &sums[0], &sums[1]);
      if constexpr (G == 32) sums[0] = _mm256_add_epi32(sums[0], sums[1]);
      for (int h = 0; h < 32 / G; ++h) {
        const int64_t g = c * (32 / G) + h;
        __m256i idot = sums[h];
        if constexpr (T::kBias != 0) {
          const int32_t xsum = G == 16 ? xr.sum16[g] : xr.sum16[2 * g] + xr.sum16[2 * g + 1];
          idot = _mm256_sub_epi32(idot, _mm256_set1_epi32(T::kBias * xsum));
        }
        fold(acc, off, idot, _mm256_loadu_ps(a8 + g * 8), _mm256_loadu_ps(b8 + g * 8), xr.d[g * G / 32],
             group_sum(xr, g, G));
      }
    }
    _mm256_storeu_ps(out + r * 8, _mm256_add_ps(acc, off));
  }
}

template <class I>
DotKernels::Rows8Direct direct_for(uint32_t type) {
  switch (type) {
    case kQ4_0: return rows8_direct<I, Q4_0>;
    case kQ4_1: return rows8_direct<I, Q4_1>;
    case kQ8_0: return rows8_direct<I, Q8_0>;
    case kQ4_K: return rows8_direct<I, Q4_K>;
    case kQ6_K: return rows8_direct<I, Q6_K>;
    default: return nullptr;
  }
}

float dot_f32(const float* w, const float* x, int64_t k) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(x + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 8), _mm256_loadu_ps(x + i + 8), acc1);
  }
  float acc = hsum(_mm256_add_ps(acc0, acc1));
  for (; i < k; ++i) acc += w[i] * x[i];
  return acc;
}

void quantize_act(const float* x, int8_t* q, float* d, float* s16, int32_t* sum16, int64_t k) {
  const __m256 sign_mask = _mm256_set1_ps(-0.0f);
  for (int64_t blk = 0; blk < k / 32; ++blk) {
    const float* xb = x + 32 * blk;
    __m256 v[4];
    __m256 amax = _mm256_setzero_ps();
    for (int j = 0; j < 4; ++j) {
      v[j] = _mm256_loadu_ps(xb + 8 * j);
      amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign_mask, v[j]));
    }
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    float scale = _mm_cvtss_f32(m) / 127.0f;
    float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
    __m256 iv = _mm256_set1_ps(inv);
    __m256i r[4];
    for (int j = 0; j < 4; ++j)
      r[j] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v[j], iv),
                                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    // Sums per 16 before packing: lanes of r[0], r[1] are elements 0-15.
    __m256i s0 = _mm256_add_epi32(r[0], r[1]);
    __m256i s1 = _mm256_add_epi32(r[2], r[3]);
    __m128i h0 = _mm_add_epi32(_mm256_castsi256_si128(s0), _mm256_extracti128_si256(s0, 1));
    __m128i h1 = _mm_add_epi32(_mm256_castsi256_si128(s1), _mm256_extracti128_si256(s1, 1));
    h0 = _mm_hadd_epi32(h0, h1);
    h0 = _mm_hadd_epi32(h0, h0);
    // Pack to int8; packs interleave 128-bit lanes, the permute restores order.
    __m256i p01 = _mm256_packs_epi32(r[0], r[1]);
    __m256i p23 = _mm256_packs_epi32(r[2], r[3]);
    __m256i p = _mm256_packs_epi16(p01, p23);
    p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * blk), p);
    d[blk] = scale;
    sum16[2 * blk] = _mm_cvtsi128_si32(h0);
    sum16[2 * blk + 1] = _mm_extract_epi32(h0, 1);
    s16[2 * blk] = scale * static_cast<float>(sum16[2 * blk]);
    s16[2 * blk + 1] = scale * static_cast<float>(sum16[2 * blk + 1]);
  }
}

}  // namespace
}  // namespace aph::gguf
