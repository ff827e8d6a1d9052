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

// Pair i's cos and sin (times mscale) at position pos.
__device__ __forceinline__ float2 cos_sin(float pos, const float* inv_freq, int i, float mscale) {
  float s, c;
  sincosf(pos * inv_freq[i], &s, &c);
  return make_float2(c * mscale, s * mscale);
}

// Pair i with its cos and sin already computed (cos_sin): a kernel that
// rotates many heads at one position computes each pair's once.
__device__ __forceinline__ Pair pair_with(int i, int half, bool interleaved, float2 cs) {
  Pair p;
  p.c = cs.x;
  p.s = cs.y;
  p.a = interleaved ? 2 * i : i;
  p.b = interleaved ? 2 * i + 1 : i + half;
  return p;
}

__device__ __forceinline__ Pair pair(float pos, const float* inv_freq, int i, int half, bool interleaved,
                                     float mscale) {
  return pair_with(i, half, interleaved, cos_sin(pos, inv_freq, i, mscale));
}

// (x[a], x[b]) rotated.
__device__ __forceinline__ float2 rotate(const Pair& p, float x0, float x1) {
  return make_float2(x0 * p.c - x1 * p.s, x1 * p.c + x0 * p.s);
}

}  // namespace aph::rope
