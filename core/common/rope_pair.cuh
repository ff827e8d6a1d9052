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

// (x[a], x[b]) rotated.
__device__ __forceinline__ float2 rotate(const Pair& p, float x0, float x1) {
  return make_float2(x0 * p.c - x1 * p.s, x1 * p.c + x0 * p.s);
}

}  // namespace aph::rope
