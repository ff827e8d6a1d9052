// Random but valid ggml blocks for tests: random bytes with finite fp16
// scales of varied magnitude (FORMATS.md §2.2 field offsets).
#pragma once

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/common/half.hpp"
#include "plugins/quant-gguf/container/ggml_types.hpp"

namespace aph::gguf::test_data {

inline std::vector<int> f16_fields(uint32_t type) {
  switch (type) {
    case kQ4_0: case kQ5_0: case kQ8_0: case kIQ4_NL: case kIQ4_XS: return {0};
    case kQ4_1: case kQ5_1: case kQ4_K: case kQ5_K: return {0, 2};
    case kQ2_K: return {80, 82};
    case kQ3_K: return {108};
    case kQ6_K: return {208};
    default: return {};
  }
}

inline const std::vector<uint32_t>& all_types() {
  static const std::vector<uint32_t> t = {kF32,  kF16,  kBF16, kQ4_0, kQ4_1,   kQ5_0,  kQ5_1, kQ8_0,
                                          kQ2_K, kQ3_K, kQ4_K, kQ5_K, kQ6_K, kIQ4_NL, kIQ4_XS};
  return t;
}

// `rows` rows of k elements of `type`, scales around `scale`.
inline std::vector<uint8_t> random_rows(uint32_t type, int64_t rows, int64_t k, uint32_t seed,
                                        float scale = 0.01f) {
  auto t = *type_traits(type);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  int64_t blocks = rows * k / t.block_elems;
  std::vector<uint8_t> out(blocks * t.block_bytes);
  auto put16 = [&](uint8_t* p, uint16_t h) { std::memcpy(p, &h, 2); };
  if (type == kF32) {
    for (int64_t i = 0; i < rows * k; ++i) {
      float v = normal(rng);
      std::memcpy(out.data() + 4 * i, &v, 4);
    }
    return out;
  }
  if (type == kF16 || type == kBF16) {
    for (int64_t i = 0; i < rows * k; ++i) {
      float v = normal(rng);
      put16(out.data() + 2 * i, type == kF16 ? f32_to_f16(v) : f32_to_bf16(v));
    }
    return out;
  }
  for (auto& b : out) b = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> mag(0.5f, 2.0f);
  for (int64_t b = 0; b < blocks; ++b)
    for (int off : f16_fields(type))
      put16(out.data() + b * t.block_bytes + off, f32_to_f16(scale * mag(rng)));
  return out;
}

}  // namespace aph::gguf::test_data
