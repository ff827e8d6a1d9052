// Paged attention on the CPU: one decode step's attention call per layer,
// cycling through a model's worth of layer caches (as a forward pass does,
// so the KV comes from memory, not from cache), on the shared thread pool.
//
//   aph_bench_attention_cpu [--shape smol|llama8b] [--context N] [--seqs N] [--layers N] [--reps N]
//
// Prints, per KV dtype, microseconds a layer and the KV bytes read per
// second.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/attention/attention_cpu.hpp"
#include "core/attention/paged_attention.hpp"
#include "core/common/error.hpp"
#include "core/common/thread_pool.hpp"

namespace {

using aph::attention::PagedAttentionArgs;

struct Shape {
  int32_t heads, kv_heads, head_dim;
};

size_t elem_bytes(aph_dtype d) {
  return d == APH_DTYPE_F32 ? 4 : (d == APH_DTYPE_F16 || d == APH_DTYPE_BF16) ? 2 : 1;
}

const char* dtype_name(aph_dtype d) {
  switch (d) {
    case APH_DTYPE_F32: return "f32";
    case APH_DTYPE_F16: return "f16";
    case APH_DTYPE_BF16: return "bf16";
    default: return "fp8_e4m3";
  }
}

void run(const Shape& shape, aph_dtype kv, int32_t context, int32_t seqs, int32_t layers, int reps) {
  const int32_t bs = 16, blocks_per_seq = (context + bs - 1) / bs;
  const int32_t num_blocks = blocks_per_seq * seqs;
  const size_t cache_bytes =
      static_cast<size_t>(num_blocks) * bs * shape.kv_heads * shape.head_dim * elem_bytes(kv);
  std::mt19937 rng(7);
  std::vector<std::vector<uint8_t>> k_caches(layers), v_caches(layers);
  for (int32_t l = 0; l < layers; ++l) {
    k_caches[l].resize(cache_bytes);
    v_caches[l].resize(cache_bytes);
  }
  // Fill each layer's cache through the op itself (random values written by
  // a prefill-sized KV write), so every dtype holds valid codes.
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int32_t row = shape.kv_heads * shape.head_dim;
  std::vector<float> kv_rows(static_cast<size_t>(num_blocks) * bs * row);
  for (float& x : kv_rows) x = normal(rng);
  std::vector<int32_t> table(static_cast<size_t>(seqs) * blocks_per_seq);
  std::vector<int32_t> order(num_blocks);
  for (int32_t i = 0; i < num_blocks; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);  // scattered blocks, as after churn
  std::copy(order.begin(), order.end(), table.begin());

  std::vector<float> q(static_cast<size_t>(seqs) * shape.heads * shape.head_dim), out(q.size());
  for (float& x : q) x = normal(rng);
  std::vector<int32_t> query_start(seqs + 1), context_lens(seqs, context);
  for (int32_t s = 0; s <= seqs; ++s) query_start[s] = s;
  std::vector<int64_t> slots(seqs);
  for (int32_t s = 0; s < seqs; ++s)
    slots[s] = static_cast<int64_t>(table[static_cast<size_t>(s) * blocks_per_seq + (context - 1) / bs]) * bs +
               (context - 1) % bs;

  PagedAttentionArgs a;
  a.device = APH_DEVICE_CPU;
  a.act_dtype = APH_DTYPE_F32;
  a.layout = {num_blocks, bs, shape.kv_heads, shape.head_dim, kv};
  a.num_heads = shape.heads;
  a.n_seqs = seqs;
  a.block_tables = table.data();
  a.max_blocks_per_seq = blocks_per_seq;
  a.query_start = query_start.data();
  a.context_lens = context_lens.data();
  a.max_query_len = 1;
  a.max_context_len = context;
  a.softmax_scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
  a.q = q.data();
  a.out = out.data();
  // The new token's k/v: the first rows of kv_rows (any values do).
  a.k = kv_rows.data();
  a.v = kv_rows.data();
  a.n_tokens = seqs;
  a.slot_mapping = slots.data();
  for (int32_t l = 0; l < layers; ++l) {
    // Whole-cache fill: one "token" per slot.
    PagedAttentionArgs fill = a;
    std::vector<int64_t> all(static_cast<size_t>(num_blocks) * bs);
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
    fill.n_tokens = static_cast<int32_t>(all.size());
    fill.slot_mapping = all.data();
    fill.k_cache = k_caches[l].data();
    fill.v_cache = v_caches[l].data();
    aph::attention::write_kv_cache_cpu(fill);
  }

  auto step = [&] {
    for (int32_t l = 0; l < layers; ++l) {
      a.k_cache = k_caches[l].data();
      a.v_cache = v_caches[l].data();
      aph::attention::paged_attention(a);
    }
  };
  step();  // warm: thread pool, page faults
  double best = 1e30;
  for (int rep = 0; rep < reps; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    step();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  const double per_layer = best / layers;
  const double kv_bytes = 2.0 * seqs * context * row * elem_bytes(kv);
  std::printf("%-9s context %6d seqs %3d  %9.1f us a layer  %6.2f GB/s of KV\n", dtype_name(kv), context,
              seqs, per_layer * 1e6, kv_bytes / per_layer / 1e9);
}

}  // namespace

int main(int argc, char** argv) {
  std::string shape_name = "smol";
  int32_t context = 4096, seqs = 1, layers = 30, reps = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--shape") shape_name = argv[i + 1];
    else if (k == "--context") context = std::atoi(argv[i + 1]);
    else if (k == "--seqs") seqs = std::atoi(argv[i + 1]);
    else if (k == "--layers") layers = std::atoi(argv[i + 1]);
    else if (k == "--reps") reps = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  const Shape shape = shape_name == "llama8b" ? Shape{32, 8, 128} : Shape{9, 3, 64};
  std::printf("%s shape (%d heads, %d KV heads, d %d), %d threads\n", shape_name.c_str(), shape.heads,
              shape.kv_heads, shape.head_dim, aph::ThreadPool::shared().size());
  try {
    for (aph_dtype kv : {APH_DTYPE_F32, APH_DTYPE_F16, APH_DTYPE_BF16, APH_DTYPE_F8_E4M3})
      run(shape, kv, context, seqs, layers, reps);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "aph_bench_attention_cpu: %s\n", e.what());
    return 1;
  }
  return 0;
}
