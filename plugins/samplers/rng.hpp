// Counter-based random numbers: a pure function of (seed, step, purpose,
// index), so a request's draws do not depend on its batch neighbours and the
// CPU and CUDA paths draw the same numbers. SplitMix64 finalizers.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define APH_HD __host__ __device__ __forceinline__
#else
#define APH_HD inline
#endif

namespace aph::samplers {

enum RngPurpose : uint64_t {
  kRngSample = 1,     // Gumbel noise per token for multinomial selection
  kRngXtc = 2,        // XTC's "apply this step?" coin
  kRngMirostat = 3,   // mirostat's draw
};

APH_HD uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

APH_HD uint64_t rng_key(uint64_t seed, uint64_t step, uint64_t purpose) {
  return mix64(mix64(mix64(seed) ^ step) ^ (purpose * 0xD1B54A32D192ED03ull));
}

// Uniform in the open interval (0, 1), 53 bits.
APH_HD double rng_uniform(uint64_t key, uint64_t index) {
  const uint64_t bits = mix64(key ^ (index * 0x9E3779B97F4A7C15ull)) >> 11;
  return (static_cast<double>(bits) + 0.5) * (1.0 / 9007199254740992.0);
}

}  // namespace aph::samplers
