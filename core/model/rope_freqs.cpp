#include "core/model/rope_freqs.hpp"

#include <algorithm>
#include <cmath>

#include "core/common/error.hpp"

namespace aph::model {

using weights::RopeType;

namespace {

constexpr double kPi = 3.14159265358979323846;

// YaRN's correction dimension: the rotary index whose wavelength fits `rotations` times in L0.
double yarn_corr_dim(double rotations, int64_t dim, double base, double l0) {
  return dim * std::log(l0 / (rotations * 2 * kPi)) / (2 * std::log(base));
}

}  // namespace

RopeTable compute_rope_table(const weights::ModelConfig& c, int64_t max_model_len, const std::vector<float>& divisors) {
  const int64_t dim = c.rotary_dim();
  const int64_t half = dim / 2;
  const auto& rs = c.rope_scaling;
  double base = c.rope_theta;
  const int64_t l0 = rs.original_max_position_embeddings > 0 ? rs.original_max_position_embeddings
                                                             : c.max_position_embeddings;
  RopeTable out;
  out.inv_freq.resize(half);

  if (rs.type == RopeType::Dynamic && max_model_len > c.max_position_embeddings) {
    // NTK-aware: HF grows the base only once the sequence outgrows the
    // trained context; we fix it for the longest context served.
    const double l = static_cast<double>(max_model_len);
    const double lmax = static_cast<double>(c.max_position_embeddings);
    base = base * std::pow(rs.factor * l / lmax - (rs.factor - 1), static_cast<double>(dim) / (dim - 2));
  }
  std::vector<double> inv(half);
  for (int64_t i = 0; i < half; ++i) inv[i] = 1.0 / std::pow(base, static_cast<double>(2 * i) / dim);

  switch (rs.type) {
    case RopeType::Default:
    case RopeType::Dynamic:
      break;
    case RopeType::Linear:
      for (auto& f : inv) f /= rs.factor;
      break;
    case RopeType::Llama3: {
      const double low_wl = l0 / rs.low_freq_factor, high_wl = l0 / rs.high_freq_factor;
      for (auto& f : inv) {
        const double wl = 2 * kPi / f;
        if (wl < high_wl) continue;
        if (wl > low_wl) {
          f /= rs.factor;
        } else {
          const double s = (l0 / wl - rs.low_freq_factor) / (rs.high_freq_factor - rs.low_freq_factor);
          f = (1 - s) * f / rs.factor + s * f;
        }
      }
      break;
    }
    case RopeType::Yarn: {
      double low = std::floor(yarn_corr_dim(rs.beta_fast, dim, base, static_cast<double>(l0)));
      double high = std::ceil(yarn_corr_dim(rs.beta_slow, dim, base, static_cast<double>(l0)));
      low = std::max(low, 0.0);
      high = std::min(high, static_cast<double>(dim - 1));
      if (high == low) high += 0.001;  // avoids a division by zero, as the reference does
      for (int64_t i = 0; i < half; ++i) {
        const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
        inv[i] = inv[i] / rs.factor * ramp + inv[i] * (1 - ramp);
      }
      out.mscale = static_cast<float>(rs.attention_factor > 0 ? rs.attention_factor
                                      : rs.factor > 1    ? 0.1 * std::log(rs.factor) + 1.0
                                                         : 1.0);
      break;
    }
    case RopeType::LongRope: {
      const int64_t lmax = c.max_position_embeddings;
      const auto& ext = max_model_len > l0 ? rs.long_factor : rs.short_factor;
      if (static_cast<int64_t>(ext.size()) != half) {
        throw invalid_argument("rope_scaling: longrope factor lists need " + std::to_string(half) + " entries");
      }
      for (int64_t i = 0; i < half; ++i) inv[i] /= ext[i];
      if (rs.attention_factor > 0) {
        out.mscale = static_cast<float>(rs.attention_factor);
      } else if (lmax > l0) {
        out.mscale = static_cast<float>(std::sqrt(1 + std::log(static_cast<double>(lmax) / l0) / std::log(static_cast<double>(l0))));
      }
      break;
    }
  }
  if (!divisors.empty()) {
    if (static_cast<int64_t>(divisors.size()) != half) {
      throw invalid_argument("rope_freqs.weight has " + std::to_string(divisors.size()) + " entries, expected " +
                             std::to_string(half));
    }
    for (int64_t i = 0; i < half; ++i) {
      if (!(divisors[i] > 0)) throw invalid_argument("rope_freqs.weight entry " + std::to_string(i) + " is not positive");
      inv[i] /= divisors[i];
    }
  }
  for (int64_t i = 0; i < half; ++i) out.inv_freq[i] = static_cast<float>(inv[i]);
  return out;
}

}  // namespace aph::model
