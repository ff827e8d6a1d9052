// The per-group scale a and offset b (w = a*q + b) of the block types that
// have a direct CPU kernel, in the gguf package's operation order. Both the
// unpacker (dequant.cpp) and the direct kernels (dot_avx2.cpp) use these, so
// the two paths see the same floats: the CPU linear's result must not depend
// on which path a batch size takes.
//
// Internal linkage on purpose: dot_avx2.cpp is compiled with -mavx2, and an
// inline function with external linkage could be merged into the other files'
// (older CPUs') code. F16 converts an IEEE half (exactly, either way).
#pragma once

#include <cstdint>

namespace aph::gguf {
namespace {

template <class F16>
inline void scales_q4_0(const uint8_t* blk, float* a, float* b, F16 f16) {
  a[0] = f16(blk);
  b[0] = 0.0f;
}

template <class F16>
inline void scales_q4_1(const uint8_t* blk, float* a, float* b, F16 f16) {
  a[0] = f16(blk);
  b[0] = f16(blk + 2);
}

template <class F16>
inline void scales_q8_0(const uint8_t* blk, float* a, float* b, F16 f16) {
  a[0] = f16(blk);
  b[0] = 0.0f;
}

// Q4_K's 6-bit scale and min of sub-block j (of 8).
inline void scale_min_k4(int j, const uint8_t* S, int* sc, int* m) {
  if (j < 4) {
    *sc = S[j] & 63;
    *m = S[j + 4] & 63;
  } else {
    *sc = (S[j + 4] & 15) | ((S[j - 4] >> 6) << 4);
    *m = (S[j + 4] >> 4) | ((S[j] >> 6) << 4);
  }
}

// Eight groups of 32.
template <class F16>
inline void scales_q4_k(const uint8_t* blk, float* a, float* b, F16 f16) {
  const float d = f16(blk), dmin = f16(blk + 2);
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    scale_min_k4(j, blk + 4, &sc, &m);
    a[j] = d * static_cast<float>(sc);
    b[j] = -(dmin * static_cast<float>(m));
  }
}

// Sixteen groups of 16.
template <class F16>
inline void scales_q6_k(const uint8_t* blk, float* a, float* b, F16 f16) {
  const auto* scales = reinterpret_cast<const int8_t*>(blk + 192);
  const float d = f16(blk + 208);
  for (int s = 0; s < 16; ++s) {
    a[s] = d * static_cast<float>(scales[s]);
    b[s] = 0.0f;
  }
}

}  // namespace
}  // namespace aph::gguf
