#include "plugins/quant-gguf/cpu/quantize.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/common/error.hpp"
#include "core/common/half.hpp"
#include "plugins/quant-gguf/container/ggml_types.hpp"

namespace aph::gguf {

namespace {

void put_f16(uint8_t* p, float v) {
  uint16_t h = f32_to_f16(v);
  std::memcpy(p, &h, 2);
}
float f16_round(float v) { return f16_to_f32(f32_to_f16(v)); }

// The legacy types follow the gguf package's quantize_blocks operation by
// operation (float32 arithmetic, truncation after +0.5 / +8.5 / +16.5), so
// the bytes are identical to gguf.quants.quantize.

// The element of largest magnitude, keeping its sign (first one on ties).
float signed_absmax(const float* x, int n) {
  float best = x[0];
  for (int i = 1; i < n; ++i)
    if (std::fabs(x[i]) > std::fabs(best)) best = x[i];
  return best;
}

void pack_nibbles(const uint8_t* q, uint8_t* qs) {
  for (int i = 0; i < 16; ++i) qs[i] = static_cast<uint8_t>(q[i] | (q[i + 16] << 4));
}

uint8_t trunc_clip(float v, int hi) {
  float t = std::trunc(v);
  int i = t < 0 ? 0 : static_cast<int>(std::min(t, 255.0f));
  return static_cast<uint8_t>(std::min(i, hi));
}

void q4_0_block(const float* x, uint8_t* out) {
  float d = signed_absmax(x, 32) / -8.0f;
  float id = d == 0.0f ? 0.0f : 1.0f / d;
  uint8_t q[32];
  for (int i = 0; i < 32; ++i) q[i] = trunc_clip(x[i] * id + 8.5f, 15);
  put_f16(out, d);
  pack_nibbles(q, out + 2);
}

void q4_1_block(const float* x, uint8_t* out) {
  float mx = *std::max_element(x, x + 32), mn = *std::min_element(x, x + 32);
  float d = (mx - mn) / 15.0f;
  float id = d == 0.0f ? 0.0f : 1.0f / d;
  uint8_t q[32];
  for (int i = 0; i < 32; ++i) q[i] = trunc_clip((x[i] - mn) * id + 0.5f, 15);
  put_f16(out, d);
  put_f16(out + 2, mn);
  pack_nibbles(q, out + 4);
}

void pack5(const uint8_t* q, uint8_t* qh_out, uint8_t* qs) {
  uint32_t qh = 0;
  for (int i = 0; i < 32; ++i) qh |= static_cast<uint32_t>((q[i] >> 4) & 1) << i;
  std::memcpy(qh_out, &qh, 4);
  for (int i = 0; i < 16; ++i) qs[i] = static_cast<uint8_t>((q[i] & 15) | (q[i + 16] << 4));
}

void q5_0_block(const float* x, uint8_t* out) {
  float d = signed_absmax(x, 32) / -16.0f;
  float id = d == 0.0f ? 0.0f : 1.0f / d;
  uint8_t q[32];
  for (int i = 0; i < 32; ++i) q[i] = trunc_clip(x[i] * id + 16.5f, 31);
  put_f16(out, d);
  pack5(q, out + 2, out + 6);
}

void q5_1_block(const float* x, uint8_t* out) {
  float mx = *std::max_element(x, x + 32), mn = *std::min_element(x, x + 32);
  float d = (mx - mn) / 31.0f;
  float id = d == 0.0f ? 0.0f : 1.0f / d;
  uint8_t q[32];
  for (int i = 0; i < 32; ++i) q[i] = trunc_clip((x[i] - mn) * id + 0.5f, 31);
  put_f16(out, d);
  put_f16(out + 2, mn);
  pack5(q, out + 4, out + 8);
}

void q8_0_block(const float* x, uint8_t* out) {
  float amax = 0.0f;
  for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[i]));
  float d = amax / 127.0f;
  float id = d == 0.0f ? 0.0f : 1.0f / d;
  put_f16(out, d);
  for (int i = 0; i < 32; ++i) out[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(std::round(x[i] * id)));
}

// Scale and min of one K-quant sub-block: w ≈ scale*q - min with q in
// [0, nmax], min >= 0. Tries a range of grid placements and keeps the
// least-squares fit with the smallest squared error.
void fit_scale_min(const float* x, int n, int nmax, float* scale, float* min) {
  float lo = std::min(0.0f, *std::min_element(x, x + n));
  float hi = *std::max_element(x, x + n);
  if (hi <= lo) {
    *scale = 0.0f;
    *min = -lo;
    return;
  }
  float sx = 0.0f;
  for (int i = 0; i < n; ++i) sx += x[i];
  float best_err = INFINITY, best_s = (hi - lo) / nmax, best_m = -lo;
  int q[256];
  for (int step = -4; step <= 12; step += 2) {
    const float iscale = (nmax + 0.1f * step) / (hi - lo);
    float sl = 0, sll = 0, slx = 0;
    for (int i = 0; i < n; ++i) {
      // x >= lo, so adding 0.5 and truncating rounds to nearest.
      q[i] = std::min(static_cast<int>(iscale * (x[i] - lo) + 0.5f), nmax);
      sl += static_cast<float>(q[i]);
      sll += static_cast<float>(q[i] * q[i]);
      slx += static_cast<float>(q[i]) * x[i];
    }
    const float det = n * sll - sl * sl;
    if (det <= 0) continue;
    float s = (n * slx - sl * sx) / det;
    float m = (sll * sx - sl * slx) / det;  // x ≈ s*q + m
    if (m > 0) {                            // mins are subtracted, so m must be <= 0
      m = 0;
      s = sll > 0 ? slx / sll : 0;
    }
    float err = 0;
    for (int i = 0; i < n; ++i) {
      const float e = s * static_cast<float>(q[i]) + m - x[i];
      err += e * e;
    }
    if (err < best_err) {
      best_err = err;
      best_s = s;
      best_m = -m;
    }
  }
  *scale = std::max(best_s, 0.0f);
  *min = best_m;
}

// Q4_K and Q5_K: 8 sub-blocks of 32 with 6-bit scales and mins under fp16
// super-scales.
void qk_scale_min_block(const float* x, int nmax, float* d_out, float* dmin_out, uint8_t* S,
                        int* q /* 256 */) {
  float scales[8], mins[8];
  for (int j = 0; j < 8; ++j) fit_scale_min(x + 32 * j, 32, nmax, &scales[j], &mins[j]);
  float max_s = *std::max_element(scales, scales + 8), max_m = *std::max_element(mins, mins + 8);
  float d = f16_round(max_s / 63.0f), dmin = f16_round(max_m / 63.0f);
  int sc[8], mn[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = d > 0 ? std::clamp(static_cast<int>(std::lround(scales[j] / d)), 0, 63) : 0;
    mn[j] = dmin > 0 ? std::clamp(static_cast<int>(std::lround(mins[j] / dmin)), 0, 63) : 0;
  }
  for (int j = 0; j < 4; ++j) {
    S[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    S[j + 4] = static_cast<uint8_t>(mn[j] | ((mn[j + 4] >> 4) << 6));
    S[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4));
  }
  for (int j = 0; j < 8; ++j) {
    float ds = d * sc[j], dm = dmin * mn[j];
    for (int l = 0; l < 32; ++l) {
      int v = ds > 0 ? static_cast<int>(std::nearbyint((x[32 * j + l] + dm) / ds)) : 0;
      q[32 * j + l] = std::clamp(v, 0, nmax);
    }
  }
  *d_out = d;
  *dmin_out = dmin;
}

void q4_k_block(const float* x, uint8_t* out) {
  int q[256];
  float d, dmin;
  qk_scale_min_block(x, 15, &d, &dmin, out + 4, q);
  put_f16(out, d);
  put_f16(out + 2, dmin);
  uint8_t* qs = out + 16;
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) qs[32 * c + l] = static_cast<uint8_t>(q[64 * c + l] | (q[64 * c + 32 + l] << 4));
}

void q5_k_block(const float* x, uint8_t* out) {
  int q[256];
  float d, dmin;
  qk_scale_min_block(x, 31, &d, &dmin, out + 4, q);
  put_f16(out, d);
  put_f16(out + 2, dmin);
  uint8_t* qh = out + 16;
  uint8_t* qs = out + 48;
  std::memset(qh, 0, 32);
  for (int e = 0; e < 256; ++e) qh[e % 32] |= static_cast<uint8_t>(((q[e] >> 4) & 1) << (e / 32));
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l)
      qs[32 * c + l] = static_cast<uint8_t>((q[64 * c + l] & 15) | ((q[64 * c + 32 + l] & 15) << 4));
}

// Q6_K: 16 groups of 16 with int8 scales under one fp16 super-scale; codes
// in [-32, 31], the group's largest-magnitude element mapping to -32.
void q6_k_block(const float* x, uint8_t* out) {
  float scales[16];
  float max_abs_scale = 0.0f, max_scale = 0.0f;
  for (int g = 0; g < 16; ++g) {
    scales[g] = signed_absmax(x + 16 * g, 16) / -32.0f;
    if (std::fabs(scales[g]) > max_abs_scale) {
      max_abs_scale = std::fabs(scales[g]);
      max_scale = scales[g];
    }
  }
  float d = f16_round(max_scale / -128.0f);
  int8_t* sc = reinterpret_cast<int8_t*>(out + 192);
  int q[256];
  for (int g = 0; g < 16; ++g) {
    int s = d != 0.0f ? std::clamp(static_cast<int>(std::lround(scales[g] / d)), -128, 127) : 0;
    sc[g] = static_cast<int8_t>(s);
    float ds = d * s;
    for (int l = 0; l < 16; ++l) {
      int v = ds != 0.0f ? static_cast<int>(std::nearbyint(x[16 * g + l] / ds)) : 0;
      q[16 * g + l] = std::clamp(v, -32, 31) + 32;
    }
  }
  uint8_t* ql = out;
  uint8_t* qh = out + 128;
  std::memset(ql, 0, 128);
  std::memset(qh, 0, 64);
  for (int e = 0; e < 256; ++e) {
    int h = e / 128, u = (e / 32) % 4, l = e % 32;
    ql[64 * h + l + 32 * (u & 1)] |= static_cast<uint8_t>((q[e] & 15) << (u < 2 ? 0 : 4));
    qh[32 * h + l] |= static_cast<uint8_t>((q[e] >> 4) << (2 * u));
  }
  put_f16(out + 208, d);
}

using BlockQuantizer = void (*)(const float*, uint8_t*);

BlockQuantizer block_quantizer(uint32_t type) {
  switch (type) {
    case kQ4_0: return q4_0_block;
    case kQ4_1: return q4_1_block;
    case kQ5_0: return q5_0_block;
    case kQ5_1: return q5_1_block;
    case kQ8_0: return q8_0_block;
    case kQ4_K: return q4_k_block;
    case kQ5_K: return q5_k_block;
    case kQ6_K: return q6_k_block;
    default: return nullptr;
  }
}

}  // namespace

bool can_quantize(uint32_t type) {
  return type == kF32 || type == kF16 || type == kBF16 || block_quantizer(type) != nullptr;
}

void quantize_row(uint32_t type, const float* x, uint8_t* dst, int64_t n) {
  switch (type) {
    case kF32:
      std::memcpy(dst, x, n * 4);
      return;
    case kF16:
      for (int64_t i = 0; i < n; ++i) put_f16(dst + 2 * i, x[i]);
      return;
    case kBF16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h = f32_to_bf16(x[i]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
      return;
    default:
      break;
  }
  BlockQuantizer q = block_quantizer(type);
  auto t = type_traits(type);
  if (!q || !t) throw Error(APH_ERR_UNSUPPORTED, "cannot quantize to ggml type " + std::to_string(type));
  if (n % t->block_elems != 0)
    throw invalid_argument("row of " + std::to_string(n) + " is not a multiple of the " +
                           std::string(t->name) + " block size");
  for (int64_t b = 0; b < n / t->block_elems; ++b) q(x + b * t->block_elems, dst + b * t->block_bytes);
}

}  // namespace aph::gguf
