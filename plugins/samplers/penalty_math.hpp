// Formulas the CPU stages and the CUDA kernels share, written once so both
// paths do the same float operations in the same order.
#pragma once

#include <cmath>
#include <cstdint>

#include "plugins/samplers/rng.hpp"  // APH_HD

namespace aph::samplers {

// Repetition penalty of window position i (0 = oldest) of n: KoboldAI's slope
// curve from 1 (oldest) to `penalty` (newest), or flat when slope is 0.
APH_HD float rep_pen_at(float penalty, float slope, int64_t i, int64_t n) {
  if (slope == 0.0f || n <= 1) return penalty;
  const double x = static_cast<double>(i) / static_cast<double>(n - 1) * 2.0 - 1.0;
  const double y = (slope * x) / (1.0 + fabs(x) * (slope - 1.0));
  return static_cast<float>(1.0 + ((y + 1.0) / 2.0) * (penalty - 1.0));
}

// multiplier * base^(length - allowed), by repeated multiplication (an exact
// sequence of float operations on every device).
APH_HD float dry_penalty(float multiplier, float base, int32_t length, int32_t allowed) {
  float scale = 1.0f;
  for (int32_t e = 0; e < length - allowed; ++e) scale *= base;
  return multiplier * scale;
}

}  // namespace aph::samplers
