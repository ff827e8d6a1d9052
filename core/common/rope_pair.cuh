// One RoPE rotation on the GPU, shared by ops' rope kernel and the KV write
// that applies RoPE itself (core/attention): both must produce the same
// values, so both call this.
#pragma once

#include <cuda_runtime.h>

namespace aph::rope {

// Pair i of a head at position pos: the element indices it rotates
// (adjacent for interleaved/GGUF order, i and i + half for NEOX/HF) and its
// cos/sin (times mscale, for yarn and longrope).
struct Pair {
  int a, b;
  float c, s;
};

__device__ __forceinline__ Pair pair(float pos, const float* inv_freq, int i, int half, bool interleaved,
                                     float mscale) {
  Pair p;
  sincosf(pos * inv_freq[i], &p.s, &p.c);
  p.c *= mscale;
  p.s *= mscale;
  p.a = interleaved ? 2 * i : i;
  p.b = interleaved ? 2 * i + 1 : i + half;
  return p;
}

// The pair that element j (< 2 * half) of a head belongs to: its index i and
// the two elements (a, b) it rotates.
struct PairOf {
  int i, a, b;
};
__device__ __forceinline__ PairOf pair_of(int j, int half, bool interleaved) {
  const int i = interleaved ? j >> 1 : (j < half ? j : j - half);
  return {i, interleaved ? 2 * i : i, interleaved ? 2 * i + 1 : i + half};
}

// (x[a], x[b]) rotated. The roundings are spelled out (no contraction left to
// the compiler) so every kernel that rotates gets the same bits: the decode
// kernel's RoPE and the KV write's must store identical cache rows.
__device__ __forceinline__ float2 rotate(const Pair& p, float x0, float x1) {
  return make_float2(__fmaf_rn(x0, p.c, -__fmul_rn(x1, p.s)), __fmaf_rn(x1, p.c, __fmul_rn(x0, p.s)));
}

}  // namespace aph::rope
