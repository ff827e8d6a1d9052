#include "core/attention/attention_cpu.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/attention/cpu/split_softmax.hpp"
#include "core/attention/fp8.hpp"
#include "core/common/thread_pool.hpp"
#include "core/common/error.hpp"
#include "core/common/half.hpp"
#include "core/common/tensor.hpp"

namespace aph::attention {
namespace {

using cpu::SplitSoftmax;
using cpu::Unit;

// Below this many units a thread, splits become separate work items.
constexpr size_t kUnitsPerThread = 4;

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


ThreadPool& pool_of(const PagedAttentionArgs& a) { return a.cpu_pool ? *a.cpu_pool : ThreadPool::shared(); }

void check_index_data(const PagedAttentionArgs& a) {
  const KvLayout& L = a.layout;
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
  }
}

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
  const size_t esz = dtype_size(L.dtype);
  const auto* k = static_cast<const float*>(a.k);
  const auto* v = static_cast<const float*>(a.v);
  auto* kc = static_cast<uint8_t*>(a.k_cache);
  auto* vc = static_cast<uint8_t*>(a.v_cache);
  pool_of(a).parallel_items(a.n_tokens, [&](int64_t t) {
    int64_t slot = a.slot_mapping[t];
    if (slot < 0) return;  // padding token: nothing to store
    size_t off = static_cast<size_t>(slot) * row * esz;
    store_row(k + t * row, kc + off, row, L.dtype, a.k_scale);
    store_row(v + t * row, vc + off, row, L.dtype, a.v_scale);
  });
}

void attention_cpu(const PagedAttentionArgs& a) { attention_cpu(a, CpuSplitWork::kAuto); }

void attention_cpu(const PagedAttentionArgs& a, CpuSplitWork work) {
  check_index_data(a);
  const SplitSoftmax attention(a);
  const std::vector<Unit> units = cpu::plan_units(a);
  ThreadPool& pool = pool_of(a);
  const bool any_split = std::any_of(units.begin(), units.end(), [](const Unit& u) { return u.splits > 1; });
  const bool in_order = work == CpuSplitWork::kAuto
                            ? !any_split || units.size() >= kUnitsPerThread * static_cast<size_t>(pool.size())
                            : work == CpuSplitWork::kInOrder;
  if (in_order) {
    // Enough units to fill the threads: each runs its splits in order.
    pool.parallel_items(static_cast<int64_t>(units.size()), [&](int64_t idx) {
      const Unit& u = units[idx];
      thread_local std::vector<float> total_buf, part_buf;
      float* total = cpu::scratch(total_buf, attention.state_floats(u));
      float* part = cpu::scratch(part_buf, attention.state_floats(u));
      attention.run_split(u, 0, total);
      for (int32_t s = 1; s < u.splits; ++s) {
        attention.run_split(u, s, part);
        attention.merge_split(u, s, part, total);
      }
      attention.write_out(u, total);
    });
    return;
  }
  // Few units (a decode of a few sequences): every split is a work item, and
  // a second pass merges each unit's splits into its first split's state.
  struct Item {
    size_t unit;
    int32_t split;
  };
  std::vector<Item> items;
  std::vector<size_t> offset(units.size() + 1, 0);
  for (size_t u = 0; u < units.size(); ++u) {
    for (int32_t s = 0; s < units[u].splits; ++s) items.push_back({u, s});
    offset[u + 1] = offset[u] + attention.state_floats(units[u]) * units[u].splits;
  }
  std::vector<float> states(offset.back());
  auto state_of = [&](size_t u, int32_t s) {
    return states.data() + offset[u] + attention.state_floats(units[u]) * s;
  };
  pool.parallel_items(static_cast<int64_t>(items.size()), [&](int64_t idx) {
    attention.run_split(units[items[idx].unit], items[idx].split, state_of(items[idx].unit, items[idx].split));
  });
  pool.parallel_items(static_cast<int64_t>(units.size()), [&](int64_t u) {
    for (int32_t s = 1; s < units[u].splits; ++s) attention.merge_split(units[u], s, state_of(u, s), state_of(u, 0));
    attention.write_out(units[u], state_of(u, 0));
  });
}

}  // namespace aph::attention
