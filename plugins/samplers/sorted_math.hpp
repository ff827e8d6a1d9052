// The formulas of the stages that walk the sorted distribution (tail-free,
// skew, mirostat), written once for the CPU stage and its kernel so that both
// evaluate them the same way. nvcc fuses a * b + c into one FMA (one rounding)
// where the host code rounds twice, so the products and sums below are
// spelled with round-to-nearest intrinsics on the device.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define APH_SORTED_FN __host__ __device__ __forceinline__
#else
#define APH_SORTED_FN inline
#endif

namespace aph::samplers {

APH_SORTED_FN double mul_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
APH_SORTED_FN double add_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
APH_SORTED_FN double sub_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}
APH_SORTED_FN float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
APH_SORTED_FN float sub_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
// False for infinities and NaN; one spelling for host and device.
APH_SORTED_FN bool is_finite(double x) { return ::fabs(x) <= DBL_MAX; }

// Tail-free: the curvature |p0 - 2 p1 + p2| of three consecutive sorted
// probabilities.
APH_SORTED_FN double second_difference(double p0, double p1, double p2) {
  return ::fabs(add_rn(sub_rn(p0, mul_rn(2.0, p1)), p2));
}

// Skew: the new log-probability log(C^e - (C - p)^e) of a token with
// probability p whose running sum in sorted order (itself included) is C.
// Spelled e log C + log(-expm1(e log1p(-p / C))): the plain difference of
// powers cancels in the tail, where C is within rounding of 1, and there it
// would be mostly rounding error (or zero, removing the token).
APH_SORTED_FN double skew_log_prob(double cum, double p, double exponent) {
  if (!(p > 0.0)) return -INFINITY;
  const double share = ::fmin(1.0, p / cum);  // cum >= p but for rounding
  const double rest = ::expm1(mul_rn(exponent, ::log1p(-share)));  // (1 - p/C)^e - 1, in (-1, 0]
  return add_rn(mul_rn(exponent, ::log(cum)), ::log(-rest));
}

// Mirostat v1: how many of the `live` sorted tokens to keep. Estimates the
// Zipf exponent s from the top m sorted probabilities (top[0, m)), then the
// k whose expected surprise is mu (Basu et al., algorithm 1).
constexpr int64_t kMirostatZipfTop = 100;

APH_SORTED_FN int64_t mirostat_v1_keep(const double* top, int64_t m, int64_t vocab, int64_t live, float mu) {
  double sum_tb = 0, sum_tt = 0;
  for (int64_t i = 0; i + 1 < m; ++i) {
    const double t = ::log(static_cast<double>(i + 2) / static_cast<double>(i + 1));
    const double b = ::log(top[i] / top[i + 1]);
    sum_tb = add_rn(sum_tb, mul_rn(t, b));
    sum_tt = add_rn(sum_tt, mul_rn(t, t));
  }
  const double s_hat = sum_tt > 0 ? sum_tb / sum_tt : 1.0;
  const double eps = s_hat - 1.0;
  const double n = static_cast<double>(vocab);
  const double k =
      ::pow(mul_rn(eps, ::pow(2.0, static_cast<double>(mu))) / (1.0 - ::pow(n, -eps)), 1.0 / s_hat);
  // Decided before rounding: llround of a value past int64 is undefined (x86
  // gives INT64_MIN, which would have kept one token instead of all).
  if (!is_finite(k) || k >= static_cast<double>(live)) return live;
  const int64_t r = static_cast<int64_t>(::llround(k));
  return r < 1 ? 1 : (r > live ? live : r);
}

// mu -= eta * (observed - tau), in float like the state.
APH_SORTED_FN float mirostat_next_mu(float mu, float eta, float tau, double observed) {
  return sub_rn(mu, mul_rn(eta, static_cast<float>(observed - static_cast<double>(tau))));
}

}  // namespace aph::samplers
