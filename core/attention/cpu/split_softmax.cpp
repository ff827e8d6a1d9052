#include "core/attention/cpu/split_softmax.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/attention/fp8.hpp"
#include "core/common/tensor.hpp"

namespace aph::attention::cpu {
namespace {

// One cached row as floats; f32 rows are read in place (no copy). Only fp8
// rows are scaled.
const float* load_row(const void* src, float* buf, int32_t n, aph_dtype dtype, float scale,
                      const TileKernels& kern) {
  switch (dtype) {
    case APH_DTYPE_F32:
      return static_cast<const float*>(src);
    case APH_DTYPE_F16:
      kern.widen_f16(static_cast<const uint16_t*>(src), buf, n);
      return buf;
    case APH_DTYPE_BF16:
      kern.widen_bf16(static_cast<const uint16_t*>(src), buf, n);
      return buf;
    default:
      kern.widen_fp8(static_cast<const uint8_t*>(src),
                     fp8_table(dtype == APH_DTYPE_F8_E4M3 ? kE4M3 : kE5M2).data(), scale, buf, n);
      return buf;
  }
}

}  // namespace

std::vector<Unit> plan_units(const PagedAttentionArgs& a) {
  std::vector<Unit> units;
  for (int32_t s = 0; s < a.n_seqs; ++s) {
    const int32_t q_len = a.query_start[s + 1] - a.query_start[s];
    const int32_t first_pos = a.context_lens[s] - q_len;
    for (int32_t kvh = 0; kvh < a.layout.num_kv_heads; ++kvh)
      for (int32_t i = 0; i < q_len; i += kQueryChunk) {
        const int32_t q_end = std::min(i + kQueryChunk, q_len);
        const int32_t keys = first_pos + q_end;
        units.push_back({s, kvh, i, q_end, (keys + kSplitKeys - 1) / kSplitKeys});
      }
  }
  return units;
}

SplitSoftmax::SplitSoftmax(const PagedAttentionArgs& a)
    : a_(a), L_(a.layout), hd_(L_.head_dim), group_(a.num_heads / L_.num_kv_heads), row_(hd_ + 2),
      esz_(dtype_size(L_.dtype)), kern_(tile_kernels()) {}

size_t SplitSoftmax::state_floats(const Unit& u) const {
  return static_cast<size_t>(u.q_end - u.q_begin) * group_ * row_;
}

int32_t SplitSoftmax::first_position(int32_t seq) const {
  return a_.context_lens[seq] - (a_.query_start[seq + 1] - a_.query_start[seq]);
}

void SplitSoftmax::run_split(const Unit& u, int32_t split, float* state) const {
  const float neg_inf = -std::numeric_limits<float>::infinity();
  const int32_t rows = (u.q_end - u.q_begin) * group_;
  for (int32_t r = 0; r < rows; ++r) {
    float* st = state + static_cast<size_t>(r) * row_;
    st[0] = neg_inf;
    std::fill(st + 1, st + row_, 0.0f);
  }
  const int32_t q_start = a_.query_start[u.seq];
  const int32_t first_pos = first_position(u.seq);
  const int32_t s0 = split * kSplitKeys;
  const int32_t s1 = std::min(s0 + kSplitKeys, first_pos + u.q_end);
  const int32_t* table = a_.block_tables + static_cast<int64_t>(u.seq) * a_.max_blocks_per_seq;
  thread_local std::vector<float> kbuf, vbuf;
  float* kb = scratch(kbuf, static_cast<size_t>(kTileKeys) * hd_);
  float* vb = scratch(vbuf, static_cast<size_t>(kTileKeys) * hd_);
  const float* kp[kTileKeys];
  const float* vp[kTileKeys];
  float s[kTileKeys], p[kTileKeys];
  const auto* q = static_cast<const float*>(a_.q);
  for (int32_t t0 = s0; t0 < s1; t0 += kTileKeys) {
    const int32_t n = std::min(kTileKeys, s1 - t0);
    for (int32_t j = 0; j < n; ++j) {
      const int32_t pos = t0 + j;
      const int64_t slot = static_cast<int64_t>(table[pos / L_.block_size]) * L_.block_size +
                           pos % L_.block_size;
      const size_t off = (static_cast<size_t>(slot) * L_.num_kv_heads + u.kv_head) * hd_ * esz_;
      kp[j] = load_row(static_cast<const uint8_t*>(a_.k_cache) + off, kb + j * hd_, hd_, L_.dtype,
                       a_.k_scale, kern_);
      vp[j] = load_row(static_cast<const uint8_t*>(a_.v_cache) + off, vb + j * hd_, hd_, L_.dtype,
                       a_.v_scale, kern_);
    }
    // Causal: query i (at first_pos + i) sees the tile's keys up to itself.
    for (int32_t i = std::max(u.q_begin, t0 - first_pos); i < u.q_end; ++i) {
      const int32_t nv = std::min(n, first_pos + i - t0 + 1);
      for (int32_t g = 0; g < group_; ++g) {
        float* st = state + (static_cast<size_t>(i - u.q_begin) * group_ + g) * row_;
        const float* qrow = q + (static_cast<int64_t>(q_start + i) * a_.num_heads +
                                 u.kv_head * group_ + g) * hd_;
        kern_.scores(qrow, kp, nv, hd_, a_.softmax_scale, s);
        const float m_old = st[0];
        const float m_new = std::max(m_old, *std::max_element(s, s + nv));
        const float corr = m_old == neg_inf ? 0.0f : std::exp(m_old - m_new);
        st[1] = st[1] * corr + kern_.exp_sum(s, m_new, nv, p);
        kern_.accumulate(st + 2, corr, p, vp, nv, hd_);
        st[0] = m_new;
      }
    }
  }
}

void SplitSoftmax::merge_split(const Unit& u, int32_t split, const float* part, float* total) const {
  const int32_t first_pos = first_position(u.seq);
  for (int32_t i = u.q_begin; i < u.q_end; ++i) {
    if (first_pos + i < split * kSplitKeys) continue;
    for (int32_t g = 0; g < group_; ++g) {
      const size_t at = (static_cast<size_t>(i - u.q_begin) * group_ + g) * row_;
      const float* ps = part + at;
      float* ts = total + at;
      if (split == 0) {
        std::copy(ps, ps + row_, ts);
        continue;
      }
      const float m = std::max(ts[0], ps[0]);
      const float a = std::exp(ts[0] - m), b = std::exp(ps[0] - m);
      ts[1] = ts[1] * a + ps[1] * b;
      for (int32_t d = 0; d < hd_; ++d) ts[2 + d] = ts[2 + d] * a + ps[2 + d] * b;
      ts[0] = m;
    }
  }
}

void SplitSoftmax::write_out(const Unit& u, const float* total) const {
  auto* out = static_cast<float*>(a_.out);
  const int32_t q_start = a_.query_start[u.seq];
  for (int32_t i = u.q_begin; i < u.q_end; ++i)
    for (int32_t g = 0; g < group_; ++g) {
      const float* ts = total + (static_cast<size_t>(i - u.q_begin) * group_ + g) * row_;
      float* orow = out + (static_cast<int64_t>(q_start + i) * a_.num_heads + u.kv_head * group_ + g) * hd_;
      const float inv = 1.0f / ts[1];
      for (int32_t d = 0; d < hd_; ++d) orow[d] = ts[2 + d] * inv;
    }
}

}  // namespace aph::attention::cpu
