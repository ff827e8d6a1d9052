#include "plugins/quant-gguf/cpu/dequant.hpp"

#include <cstring>
#include <string>
#include <vector>

#include "core/common/error.hpp"
#include "core/common/half.hpp"
#include "plugins/quant-gguf/container/ggml_types.hpp"
#include "plugins/quant-gguf/cpu/block_scales.hpp"

namespace aph::gguf {

namespace {

float f16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}

constexpr int8_t kIq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                               1,    13,   25,  38,  53,  69,  89,  113};

// Each unpacker decodes one block into int8 codes q and per-group a (scale)
// and b (offset) so that w = a*q + b, with a and b computed in the gguf
// package's order (d*sc first, then the min product).

void unpack_q4_0(const uint8_t* blk, int8_t* q, float* a, float* b) {
  scales_q4_0(blk, a, b, f16_at);
  for (int i = 0; i < 16; ++i) {
    q[i] = static_cast<int8_t>((blk[2 + i] & 15) - 8);
    q[i + 16] = static_cast<int8_t>((blk[2 + i] >> 4) - 8);
  }
}

void unpack_q4_1(const uint8_t* blk, int8_t* q, float* a, float* b) {
  scales_q4_1(blk, a, b, f16_at);
  for (int i = 0; i < 16; ++i) {
    q[i] = static_cast<int8_t>(blk[4 + i] & 15);
    q[i + 16] = static_cast<int8_t>(blk[4 + i] >> 4);
  }
}

void unpack_q5_0(const uint8_t* blk, int8_t* q, float* a, float* b) {
  a[0] = f16_at(blk);
  b[0] = 0.0f;
  uint32_t qh;
  std::memcpy(&qh, blk + 2, 4);
  for (int i = 0; i < 16; ++i) {
    int lo = blk[6 + i] & 15, hi = blk[6 + i] >> 4;
    q[i] = static_cast<int8_t>((lo | (((qh >> i) & 1) << 4)) - 16);
    q[i + 16] = static_cast<int8_t>((hi | (((qh >> (i + 16)) & 1) << 4)) - 16);
  }
}

void unpack_q5_1(const uint8_t* blk, int8_t* q, float* a, float* b) {
  a[0] = f16_at(blk);
  b[0] = f16_at(blk + 2);
  uint32_t qh;
  std::memcpy(&qh, blk + 4, 4);
  for (int i = 0; i < 16; ++i) {
    int lo = blk[8 + i] & 15, hi = blk[8 + i] >> 4;
    q[i] = static_cast<int8_t>(lo | (((qh >> i) & 1) << 4));
    q[i + 16] = static_cast<int8_t>(hi | (((qh >> (i + 16)) & 1) << 4));
  }
}

void unpack_q8_0(const uint8_t* blk, int8_t* q, float* a, float* b) {
  scales_q8_0(blk, a, b, f16_at);
  std::memcpy(q, blk + 2, 32);
}

void unpack_q2_k(const uint8_t* blk, int8_t* q, float* a, float* b) {
  const uint8_t* scales = blk;
  const uint8_t* qs = blk + 16;
  float d = f16_at(blk + 80), dmin = f16_at(blk + 82);
  for (int s = 0; s < 16; ++s) {
    a[s] = d * static_cast<float>(scales[s] & 15);
    b[s] = -(dmin * static_cast<float>(scales[s] >> 4));
  }
  for (int e = 0; e < 256; ++e) {
    int h = e / 128, j = (e / 32) % 4, k = (e / 16) % 2, l = e % 16;
    q[e] = static_cast<int8_t>((qs[32 * h + 16 * k + l] >> (2 * j)) & 3);
  }
}

void unpack_q3_k(const uint8_t* blk, int8_t* q, float* a, float* b) {
  const uint8_t* hmask = blk;
  const uint8_t* qs = blk + 32;
  const uint8_t* S = blk + 96;
  float d = f16_at(blk + 108);
  for (int s = 0; s < 16; ++s) {
    int lo = s < 8 ? S[s] & 15 : S[s - 8] >> 4;
    int hi = (S[8 + s % 4] >> (2 * (s / 4))) & 3;
    a[s] = d * static_cast<float>((lo | (hi << 4)) - 32);
    b[s] = 0.0f;
  }
  for (int e = 0; e < 256; ++e) {
    int h = e / 128, j = (e / 32) % 4, k = (e / 16) % 2, l = e % 16;
    int low = (qs[32 * h + 16 * k + l] >> (2 * j)) & 3;
    int high = (hmask[e % 32] >> (4 * h + j)) & 1;
    q[e] = static_cast<int8_t>(low - (high ? 0 : 4));
  }
}

void unpack_q4_k(const uint8_t* blk, int8_t* q, float* a, float* b) {
  scales_q4_k(blk, a, b, f16_at);
  const uint8_t* qs = blk + 16;
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) {
      q[64 * c + l] = static_cast<int8_t>(qs[32 * c + l] & 15);
      q[64 * c + 32 + l] = static_cast<int8_t>(qs[32 * c + l] >> 4);
    }
}

void unpack_q5_k(const uint8_t* blk, int8_t* q, float* a, float* b) {
  float d = f16_at(blk), dmin = f16_at(blk + 2);
  const uint8_t* S = blk + 4;
  const uint8_t* qh = blk + 16;
  const uint8_t* qs = blk + 48;
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    scale_min_k4(j, S, &sc, &m);
    a[j] = d * static_cast<float>(sc);
    b[j] = -(dmin * static_cast<float>(m));
  }
  for (int e = 0; e < 256; ++e) {
    int c = e / 64, t = (e / 32) % 2, l = e % 32;
    int lo = t ? qs[32 * c + l] >> 4 : qs[32 * c + l] & 15;
    int hi = (qh[l] >> (e / 32)) & 1;
    q[e] = static_cast<int8_t>(lo | (hi << 4));
  }
}

void unpack_q6_k(const uint8_t* blk, int8_t* q, float* a, float* b) {
  scales_q6_k(blk, a, b, f16_at);
  const uint8_t* ql = blk;
  const uint8_t* qh = blk + 128;
  for (int e = 0; e < 256; ++e) {
    int h = e / 128, u = (e / 32) % 4, l = e % 32;
    uint8_t byte = ql[64 * h + l + 32 * (u & 1)];
    int lo = u < 2 ? byte & 15 : byte >> 4;
    int hi = (qh[32 * h + l] >> (2 * u)) & 3;
    q[e] = static_cast<int8_t>((lo | (hi << 4)) - 32);
  }
}

void unpack_iq4_nl(const uint8_t* blk, int8_t* q, float* a, float* b) {
  a[0] = f16_at(blk);
  b[0] = 0.0f;
  for (int i = 0; i < 16; ++i) {
    q[i] = kIq4nl[blk[2 + i] & 15];
    q[i + 16] = kIq4nl[blk[2 + i] >> 4];
  }
}

void unpack_iq4_xs(const uint8_t* blk, int8_t* q, float* a, float* b) {
  float d = f16_at(blk);
  uint16_t scales_h;
  std::memcpy(&scales_h, blk + 2, 2);
  const uint8_t* scales_l = blk + 4;
  const uint8_t* qs = blk + 8;
  for (int ib = 0; ib < 8; ++ib) {
    int lo = (scales_l[ib / 2] >> (4 * (ib % 2))) & 15;
    int hi = (scales_h >> (2 * ib)) & 3;
    a[ib] = d * static_cast<float>((lo | (hi << 4)) - 32);
    b[ib] = 0.0f;
    for (int i = 0; i < 16; ++i) {
      q[32 * ib + i] = kIq4nl[qs[16 * ib + i] & 15];
      q[32 * ib + 16 + i] = kIq4nl[qs[16 * ib + i] >> 4];
    }
  }
}

using Unpacker = void (*)(const uint8_t*, int8_t*, float*, float*);

struct QuantKind {
  Unpacker unpack;
  int block_elems;
  int block_bytes;
  int group;
  bool has_min;
};

const QuantKind* quant_kind(uint32_t type) {
  static const QuantKind q4_0{unpack_q4_0, 32, 18, 32, false};
  static const QuantKind q4_1{unpack_q4_1, 32, 20, 32, true};
  static const QuantKind q5_0{unpack_q5_0, 32, 22, 32, false};
  static const QuantKind q5_1{unpack_q5_1, 32, 24, 32, true};
  static const QuantKind q8_0{unpack_q8_0, 32, 34, 32, false};
  static const QuantKind q2_k{unpack_q2_k, 256, 84, 16, true};
  static const QuantKind q3_k{unpack_q3_k, 256, 110, 16, false};
  static const QuantKind q4_k{unpack_q4_k, 256, 144, 32, true};
  static const QuantKind q5_k{unpack_q5_k, 256, 176, 32, true};
  static const QuantKind q6_k{unpack_q6_k, 256, 210, 16, false};
  static const QuantKind iq4_nl{unpack_iq4_nl, 32, 18, 32, false};
  static const QuantKind iq4_xs{unpack_iq4_xs, 256, 136, 32, false};
  switch (type) {
    case kQ4_0: return &q4_0;
    case kQ4_1: return &q4_1;
    case kQ5_0: return &q5_0;
    case kQ5_1: return &q5_1;
    case kQ8_0: return &q8_0;
    case kQ2_K: return &q2_k;
    case kQ3_K: return &q3_k;
    case kQ4_K: return &q4_k;
    case kQ5_K: return &q5_k;
    case kQ6_K: return &q6_k;
    case kIQ4_NL: return &iq4_nl;
    case kIQ4_XS: return &iq4_xs;
    default: return nullptr;
  }
}

[[noreturn]] void unsupported(uint32_t type) {
  auto t = type_traits(type);
  throw Error(APH_ERR_UNSUPPORTED,
              "ggml type " + (t ? std::string(t->name) : std::to_string(type)) +
                  " is not supported by the GGUF plugin's kernels");
}

}  // namespace

bool is_float_type(uint32_t type) { return type == kF32 || type == kF16 || type == kBF16; }

bool cpu_supported(uint32_t type) { return is_float_type(type) || quant_kind(type) != nullptr; }

int unpack_group(uint32_t type) {
  const QuantKind* k = quant_kind(type);
  if (!k) unsupported(type);
  return k->group;
}

void unpack_row_i8(uint32_t type, const uint8_t* src, int8_t* q, float* a, float* b, int64_t n) {
  const QuantKind* k = quant_kind(type);
  if (!k) unsupported(type);
  const int groups = k->block_elems / k->group;
  for (int64_t i = 0; i < n / k->block_elems; ++i)
    k->unpack(src + i * k->block_bytes, q + i * k->block_elems, a + i * groups, b + i * groups);
}

void unpack_rows8(uint32_t type, const uint8_t* const* rows, int64_t k, int8_t* q, float* a, float* b) {
  const int64_t groups = k / unpack_group(type);
  thread_local std::vector<int8_t> row_q;
  thread_local std::vector<float> row_ab;
  row_q.resize(k);
  row_ab.resize(groups * 2);
  for (int i = 0; i < 8; ++i) {
    unpack_row_i8(type, rows[i], row_q.data(), row_ab.data(), row_ab.data() + groups, k);
    for (int64_t c = 0; c < k / 4; ++c) std::memcpy(&q[(c * 8 + i) * 4], &row_q[c * 4], 4);
    for (int64_t g = 0; g < groups; ++g) {
      a[g * 8 + i] = row_ab[g];
      b[g * 8 + i] = row_ab[groups + g];
    }
  }
}

void dequantize_row(uint32_t type, const uint8_t* src, float* dst, int64_t n) {
  switch (type) {
    case kF32:
      std::memcpy(dst, src, n * 4);
      return;
    case kF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = f16_at(src + 2 * i);
      return;
    case kBF16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        dst[i] = bf16_to_f32(h);
      }
      return;
    default:
      break;
  }
  const QuantKind* k = quant_kind(type);
  if (!k) unsupported(type);
  int8_t q[256];
  float a[16], b[16];
  for (int64_t i = 0; i < n / k->block_elems; ++i) {
    k->unpack(src + i * k->block_bytes, q, a, b);
    float* y = dst + i * k->block_elems;
    // Types without a min multiply only, as the reference does (no "+ 0").
    for (int e = 0; e < k->block_elems; ++e)
      y[e] = k->has_min ? a[e / k->group] * static_cast<float>(q[e]) + b[e / k->group]
                        : a[e / k->group] * static_cast<float>(q[e]);
  }
}

}  // namespace aph::gguf
