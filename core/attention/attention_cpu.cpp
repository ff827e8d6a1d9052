#include "core/attention/attention_cpu.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/attention/fp8.hpp"
#include "core/common/thread_pool.hpp"
#include "core/common/error.hpp"
#include "core/common/half.hpp"

namespace aph::attention {
namespace {

// Query tokens per work item: long prefills spread over threads, while each
// item still dequantizes its KV range only once.
constexpr int32_t kQueryChunk = 32;

bool is_fp8(aph_dtype d) { return d == APH_DTYPE_F8_E4M3 || d == APH_DTYPE_F8_E5M2; }

size_t kv_elem_size(aph_dtype d) {
  switch (d) {
    case APH_DTYPE_F32: return 4;
    case APH_DTYPE_F16: case APH_DTYPE_BF16: return 2;
    default: return 1;
  }
}

void store_row(const float* src, void* dst, int32_t n, aph_dtype dtype, float scale) {
  switch (dtype) {
    case APH_DTYPE_F32:
      std::memcpy(dst, src, n * sizeof(float));
      return;
    case APH_DTYPE_F16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (int32_t i = 0; i < n; ++i) d[i] = f32_to_f16(src[i]);
      return;
    }
    case APH_DTYPE_BF16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (int32_t i = 0; i < n; ++i) d[i] = f32_to_bf16(src[i]);
      return;
    }
    default: {
      const Fp8Format& fmt = dtype == APH_DTYPE_F8_E4M3 ? kE4M3 : kE5M2;
      auto* d = static_cast<uint8_t*>(dst);
      for (int32_t i = 0; i < n; ++i) d[i] = f32_to_fp8(src[i] / scale, fmt);
      return;
    }
  }
}

void load_row(const void* src, float* dst, int32_t n, aph_dtype dtype, float scale) {
  switch (dtype) {
    case APH_DTYPE_F32:
      std::memcpy(dst, src, n * sizeof(float));
      return;
    case APH_DTYPE_F16: {
      auto* s = static_cast<const uint16_t*>(src);
      for (int32_t i = 0; i < n; ++i) dst[i] = f16_to_f32(s[i]);
      return;
    }
    case APH_DTYPE_BF16: {
      auto* s = static_cast<const uint16_t*>(src);
      for (int32_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
      return;
    }
    default: {
      const auto& table = fp8_table(dtype == APH_DTYPE_F8_E4M3 ? kE4M3 : kE5M2);
      auto* s = static_cast<const uint8_t*>(src);
      for (int32_t i = 0; i < n; ++i) dst[i] = table[s[i]] * scale;
      return;
    }
  }
}

// Eight independent partial sums so the compiler can vectorize without
// reassociating a single accumulator (no -ffast-math here).
float dot(const float* a, const float* b, int32_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int32_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) acc[k] += a[i + k] * b[i + k];
  }
  float sum = 0;
  for (; i < n; ++i) sum += a[i] * b[i];
  for (int k = 0; k < 8; ++k) sum += acc[k];
  return sum;
}

struct WorkItem {
  int32_t seq;
  int32_t kv_head;
  int32_t q_begin;  // relative to the sequence's first query token
  int32_t q_end;
};

}  // namespace

void write_kv_cache_cpu(const PagedAttentionArgs& a) {
  const KvLayout& L = a.layout;
  const int64_t total_slots = static_cast<int64_t>(L.num_blocks) * L.block_size;
  for (int32_t t = 0; t < a.n_tokens; ++t) {
    int64_t slot = a.slot_mapping[t];
    if (slot >= total_slots) {
      throw invalid_argument("slot_mapping[" + std::to_string(t) + "] = " + std::to_string(slot) +
                             " is outside the cache (" + std::to_string(total_slots) + " slots)");
    }
  }
  const int32_t row = L.num_kv_heads * L.head_dim;
  const size_t esz = kv_elem_size(L.dtype);
  const auto* k = static_cast<const float*>(a.k);
  const auto* v = static_cast<const float*>(a.v);
  auto* kc = static_cast<uint8_t*>(a.k_cache);
  auto* vc = static_cast<uint8_t*>(a.v_cache);
  aph::ThreadPool::shared().parallel_items(a.n_tokens, [&](int64_t t) {
    int64_t slot = a.slot_mapping[t];
    if (slot < 0) return;  // padding token: nothing to store
    size_t off = static_cast<size_t>(slot) * row * esz;
    store_row(k + t * row, kc + off, row, L.dtype, a.k_scale);
    store_row(v + t * row, vc + off, row, L.dtype, a.v_scale);
  });
}

void attention_cpu(const PagedAttentionArgs& a) {
  const KvLayout& L = a.layout;
  const int32_t hd = L.head_dim;
  const int32_t group = a.num_heads / L.num_kv_heads;
  std::vector<WorkItem> items;
  for (int32_t s = 0; s < a.n_seqs; ++s) {
    const std::string where = "sequence " + std::to_string(s);
    int32_t q0 = a.query_start[s], q1 = a.query_start[s + 1];
    int32_t ctx = a.context_lens[s];
    if (q0 < 0 || q1 < q0 || q1 > a.n_tokens) {
      throw invalid_argument("query_start of " + where + " is outside [0, n_tokens]");
    }
    if (ctx < q1 - q0) throw invalid_argument("context_lens of " + where + " is below its query length");
    int32_t blocks = (ctx + L.block_size - 1) / L.block_size;
    if (blocks > a.max_blocks_per_seq) {
      throw invalid_argument("context_lens of " + where + " needs more than max_blocks_per_seq blocks");
    }
    for (int32_t b = 0; b < blocks; ++b) {
      int32_t blk = a.block_tables[static_cast<int64_t>(s) * a.max_blocks_per_seq + b];
      if (blk < 0 || blk >= L.num_blocks) {
        throw invalid_argument("block_tables[" + std::to_string(s) + "][" + std::to_string(b) +
                               "] = " + std::to_string(blk) + " is not a cache block");
      }
    }
    for (int32_t kvh = 0; kvh < L.num_kv_heads; ++kvh) {
      for (int32_t i = 0; i < q1 - q0; i += kQueryChunk) {
        items.push_back({s, kvh, i, std::min(i + kQueryChunk, q1 - q0)});
      }
    }
  }
  const size_t esz = kv_elem_size(L.dtype);
  const float k_scale = is_fp8(L.dtype) ? a.k_scale : 1.0f;
  const float v_scale = is_fp8(L.dtype) ? a.v_scale : 1.0f;
  const auto* q = static_cast<const float*>(a.q);
  auto* out = static_cast<float*>(a.out);
  aph::ThreadPool::shared().parallel_items(static_cast<int64_t>(items.size()), [&](int64_t idx) {
    const WorkItem& w = items[idx];
    const int32_t q_start = a.query_start[w.seq];
    const int32_t q_len = a.query_start[w.seq + 1] - q_start;
    const int32_t ctx = a.context_lens[w.seq];
    const int32_t first_pos = ctx - q_len;
    const int32_t kv_len = first_pos + w.q_end;  // the last query sees up to here
    const int32_t* table = a.block_tables + static_cast<int64_t>(w.seq) * a.max_blocks_per_seq;
    thread_local std::vector<float> kbuf, vbuf, scores;
    kbuf.resize(static_cast<size_t>(kv_len) * hd);
    vbuf.resize(static_cast<size_t>(kv_len) * hd);
    scores.resize(kv_len);
    for (int32_t j = 0; j < kv_len; ++j) {
      int64_t slot = static_cast<int64_t>(table[j / L.block_size]) * L.block_size + j % L.block_size;
      size_t off = (static_cast<size_t>(slot) * L.num_kv_heads + w.kv_head) * hd * esz;
      load_row(static_cast<const uint8_t*>(a.k_cache) + off, &kbuf[j * hd], hd, L.dtype, k_scale);
      load_row(static_cast<const uint8_t*>(a.v_cache) + off, &vbuf[j * hd], hd, L.dtype, v_scale);
    }
    std::vector<float> acc(hd);
    for (int32_t g = 0; g < group; ++g) {
      const int32_t h = w.kv_head * group + g;
      for (int32_t i = w.q_begin; i < w.q_end; ++i) {
        const int64_t tok = q_start + i;
        const float* qrow = q + (tok * a.num_heads + h) * hd;
        const int32_t n = first_pos + i + 1;  // causal: positions [0, first_pos + i]
        float mx = -std::numeric_limits<float>::infinity();
        for (int32_t j = 0; j < n; ++j) {
          scores[j] = dot(qrow, &kbuf[j * hd], hd) * a.softmax_scale;
          mx = std::max(mx, scores[j]);
        }
        float sum = 0;
        for (int32_t j = 0; j < n; ++j) {
          scores[j] = std::exp(scores[j] - mx);
          sum += scores[j];
        }
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int32_t j = 0; j < n; ++j) {
          const float p = scores[j];
          const float* vrow = &vbuf[j * hd];
          for (int32_t d = 0; d < hd; ++d) acc[d] += p * vrow[d];
        }
        float* orow = out + (tok * a.num_heads + h) * hd;
        const float inv = 1.0f / sum;
        for (int32_t d = 0; d < hd; ++d) orow[d] = acc[d] * inv;
      }
    }
  });
}

}  // namespace aph::attention
