// Random paged-attention problems and a dense reference, shared by the CPU
// unit tests and the CUDA-vs-CPU GPU tests. The reference gathers each
// sequence's K/V from its own full history (quantized and dequantized through
// the cache dtype) rather than through the block table, so a wrong block or
// slot lookup in the kernels shows up as a mismatch.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "core/attention/fp8.hpp"
#include "core/attention/paged_attention.hpp"
#include "core/common/half.hpp"

namespace aph::attention::testing {

struct SeqSpec {
  int32_t q_len;
  int32_t ctx;  // includes this step's q_len tokens; ctx > q_len means cached prefix
};

struct ProblemSpec {
  int32_t num_heads = 8;
  int32_t num_kv_heads = 2;
  int32_t head_dim = 64;
  int32_t block_size = 16;
  aph_dtype kv_dtype = APH_DTYPE_F32;
  // Values the inputs are rounded to, so a CUDA run in f16/bf16 and the CPU
  // reference in f32 see the same numbers.
  aph_dtype input_dtype = APH_DTYPE_F32;
  std::vector<SeqSpec> seqs;
  float k_scale = 1.0f;
  float v_scale = 1.0f;
  uint32_t seed = 1;
  int32_t padding_tokens = 0;  // extra tokens with slot -1 appended after the last sequence
};

inline size_t cache_elem_size(aph_dtype d) {
  return d == APH_DTYPE_F32 ? 4 : (d == APH_DTYPE_F16 || d == APH_DTYPE_BF16) ? 2 : 1;
}

inline bool is_fp8_dtype(aph_dtype d) { return d == APH_DTYPE_F8_E4M3 || d == APH_DTYPE_F8_E5M2; }

// The bytes the cache must hold for value x.
inline void encode(float x, aph_dtype d, float scale, uint8_t* dst) {
  switch (d) {
    case APH_DTYPE_F32: std::memcpy(dst, &x, 4); return;
    case APH_DTYPE_F16: { uint16_t h = f32_to_f16(x); std::memcpy(dst, &h, 2); return; }
    case APH_DTYPE_BF16: { uint16_t h = f32_to_bf16(x); std::memcpy(dst, &h, 2); return; }
    default: *dst = f32_to_fp8(x / scale, d == APH_DTYPE_F8_E4M3 ? kE4M3 : kE5M2); return;
  }
}

inline float decode(const uint8_t* src, aph_dtype d, float scale) {
  switch (d) {
    case APH_DTYPE_F32: { float f; std::memcpy(&f, src, 4); return f; }
    case APH_DTYPE_F16: { uint16_t h; std::memcpy(&h, src, 2); return f16_to_f32(h); }
    case APH_DTYPE_BF16: { uint16_t h; std::memcpy(&h, src, 2); return bf16_to_f32(h); }
    default: return fp8_to_f32_slow(*src, d == APH_DTYPE_F8_E4M3 ? kE4M3 : kE5M2) * scale;
  }
}

inline float round_to(float x, aph_dtype d) {
  if (d == APH_DTYPE_F16) return f16_to_f32(f32_to_f16(x));
  if (d == APH_DTYPE_BF16) return bf16_to_f32(f32_to_bf16(x));
  return x;
}

inline float qdq(float x, aph_dtype d, float scale) {
  uint8_t buf[4];
  encode(x, d, scale, buf);
  return decode(buf, d, scale);
}

struct Problem {
  ProblemSpec spec;
  int32_t n_tokens = 0;
  int32_t num_blocks = 0;
  int32_t max_blocks_per_seq = 1;
  int32_t max_query_len = 0;
  int32_t max_context_len = 0;
  std::vector<float> q, k, v;                    // this step: [n_tokens, heads, d]
  std::vector<std::vector<float>> kfull, vfull;  // per sequence: [ctx, kv_heads, d]
  std::vector<uint8_t> k_cache, v_cache;
  std::vector<int32_t> query_start, context_lens, block_tables;
  std::vector<int64_t> slot_mapping;

  size_t row() const { return static_cast<size_t>(spec.num_kv_heads) * spec.head_dim; }
  size_t slot_bytes() const { return row() * cache_elem_size(spec.kv_dtype); }

  // CPU arguments over this problem's host buffers.
  PagedAttentionArgs args(float* out) {
    PagedAttentionArgs a;
    a.device = APH_DEVICE_CPU;
    a.act_dtype = APH_DTYPE_F32;
    a.q = q.data();
    a.k = k.data();
    a.v = v.data();
    a.out = out;
    a.k_cache = k_cache.data();
    a.v_cache = v_cache.data();
    a.layout = {num_blocks, spec.block_size, spec.num_kv_heads, spec.head_dim, spec.kv_dtype};
    a.k_scale = spec.k_scale;
    a.v_scale = spec.v_scale;
    a.num_heads = spec.num_heads;
    a.n_tokens = n_tokens;
    a.n_seqs = static_cast<int32_t>(spec.seqs.size());
    a.query_start = query_start.data();
    a.context_lens = context_lens.data();
    a.block_tables = block_tables.data();
    a.max_blocks_per_seq = max_blocks_per_seq;
    a.slot_mapping = slot_mapping.data();
    a.max_query_len = max_query_len;
    a.max_context_len = max_context_len;
    a.softmax_scale = 1.0f / std::sqrt(static_cast<float>(spec.head_dim));
    return a;
  }
};

inline Problem make_problem(const ProblemSpec& spec) {
  Problem p;
  p.spec = spec;
  std::mt19937 rng(spec.seed);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  const int32_t bs = spec.block_size, hd = spec.head_dim;
  const size_t row = p.row(), esz = cache_elem_size(spec.kv_dtype);
  const size_t qrow = static_cast<size_t>(spec.num_heads) * hd;

  int32_t total_blocks = 0;
  p.query_start.push_back(0);
  for (const SeqSpec& s : spec.seqs) {
    int32_t blocks = (s.ctx + bs - 1) / bs;
    total_blocks += blocks;
    p.max_blocks_per_seq = std::max(p.max_blocks_per_seq, blocks);
    p.max_query_len = std::max(p.max_query_len, s.q_len);
    p.max_context_len = std::max(p.max_context_len, s.ctx);
    p.query_start.push_back(p.query_start.back() + s.q_len);
    p.context_lens.push_back(s.ctx);
  }
  p.n_tokens = p.query_start.back() + spec.padding_tokens;
  // Spare blocks stay untouched; the permutation makes every table non-contiguous.
  p.num_blocks = total_blocks + 5;
  std::vector<int32_t> perm(p.num_blocks);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  p.block_tables.assign(spec.seqs.size() * p.max_blocks_per_seq, -1);

  p.k_cache.assign(static_cast<size_t>(p.num_blocks) * bs * row * esz, 0x5a);
  p.v_cache.assign(p.k_cache.size(), 0x5a);
  p.q.resize(p.n_tokens * qrow);
  p.k.resize(p.n_tokens * row);
  p.v.resize(p.n_tokens * row);
  for (auto& x : p.q) x = round_to(uni(rng), spec.input_dtype);
  p.slot_mapping.assign(p.n_tokens, -1);

  int32_t next_block = 0;
  for (size_t s = 0; s < spec.seqs.size(); ++s) {
    const SeqSpec& sq = spec.seqs[s];
    int32_t blocks = (sq.ctx + bs - 1) / bs;
    for (int32_t b = 0; b < blocks; ++b) p.block_tables[s * p.max_blocks_per_seq + b] = perm[next_block++];
    std::vector<float> kf(static_cast<size_t>(sq.ctx) * row), vf(kf.size());
    for (auto& x : kf) x = round_to(uni(rng), spec.input_dtype);
    for (auto& x : vf) x = round_to(uni(rng), spec.input_dtype);
    const int32_t prefix = sq.ctx - sq.q_len;
    for (int32_t pos = 0; pos < sq.ctx; ++pos) {
      int64_t slot = static_cast<int64_t>(p.block_tables[s * p.max_blocks_per_seq + pos / bs]) * bs + pos % bs;
      if (pos < prefix) {  // already cached by an earlier step (or a prefix-cache hit)
        for (size_t e = 0; e < row; ++e) {
          encode(kf[pos * row + e], spec.kv_dtype, spec.k_scale, &p.k_cache[(slot * row + e) * esz]);
          encode(vf[pos * row + e], spec.kv_dtype, spec.v_scale, &p.v_cache[(slot * row + e) * esz]);
        }
      } else {
        int32_t tok = p.query_start[s] + pos - prefix;
        p.slot_mapping[tok] = slot;
        std::copy_n(&kf[pos * row], row, &p.k[tok * row]);
        std::copy_n(&vf[pos * row], row, &p.v[tok * row]);
      }
    }
    p.kfull.push_back(std::move(kf));
    p.vfull.push_back(std::move(vf));
  }
  for (int32_t t = p.query_start.back(); t < p.n_tokens; ++t) {
    for (size_t e = 0; e < row; ++e) p.k[t * row + e] = p.v[t * row + e] = 100.0f;  // must never land
  }
  return p;
}

// Dense causal attention in double over the quantized-dequantized history.
inline std::vector<float> reference_attention(const Problem& p) {
  const ProblemSpec& sp = p.spec;
  const int32_t hd = sp.head_dim, group = sp.num_heads / sp.num_kv_heads;
  const size_t row = p.row();
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  std::vector<float> out(static_cast<size_t>(p.n_tokens) * sp.num_heads * hd, 0.0f);
  for (size_t s = 0; s < sp.seqs.size(); ++s) {
    const SeqSpec& sq = sp.seqs[s];
    std::vector<float> kq(p.kfull[s].size()), vq(kq.size());
    for (size_t i = 0; i < kq.size(); ++i) {
      kq[i] = qdq(p.kfull[s][i], sp.kv_dtype, sp.k_scale);
      vq[i] = qdq(p.vfull[s][i], sp.kv_dtype, sp.v_scale);
    }
    for (int32_t i = 0; i < sq.q_len; ++i) {
      const int32_t pos = sq.ctx - sq.q_len + i;
      const int32_t tok = p.query_start[s] + i;
      for (int32_t h = 0; h < sp.num_heads; ++h) {
        const int32_t kvh = h / group;
        const float* qr = &p.q[(static_cast<size_t>(tok) * sp.num_heads + h) * hd];
        std::vector<double> sc(pos + 1);
        double mx = -1e300;
        for (int32_t j = 0; j <= pos; ++j) {
          double d = 0;
          for (int32_t e = 0; e < hd; ++e) d += static_cast<double>(qr[e]) * kq[j * row + kvh * hd + e];
          sc[j] = d * scale;
          mx = std::max(mx, sc[j]);
        }
        double sum = 0;
        for (auto& x : sc) sum += (x = std::exp(x - mx));
        float* orow = &out[(static_cast<size_t>(tok) * sp.num_heads + h) * hd];
        for (int32_t e = 0; e < hd; ++e) {
          double acc = 0;
          for (int32_t j = 0; j <= pos; ++j) acc += sc[j] * vq[j * row + kvh * hd + e];
          orow[e] = static_cast<float>(acc / sum);
        }
      }
    }
  }
  return out;
}

// The cache bytes after this step's write: prefix as generated, new tokens
// encoded into their slots, everything else untouched.
inline void expected_caches(const Problem& p, std::vector<uint8_t>& kc, std::vector<uint8_t>& vc) {
  kc = p.k_cache;
  vc = p.v_cache;
  const size_t row = p.row(), esz = cache_elem_size(p.spec.kv_dtype);
  for (int32_t t = 0; t < p.n_tokens; ++t) {
    int64_t slot = p.slot_mapping[t];
    if (slot < 0) continue;
    for (size_t e = 0; e < row; ++e) {
      encode(p.k[t * row + e], p.spec.kv_dtype, p.spec.k_scale, &kc[(slot * row + e) * esz]);
      encode(p.v[t * row + e], p.spec.kv_dtype, p.spec.v_scale, &vc[(slot * row + e) * esz]);
    }
  }
}

}  // namespace aph::attention::testing
