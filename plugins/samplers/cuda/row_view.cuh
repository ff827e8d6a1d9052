// A logits row as a sampler kernel walks it: the whole row split over the
// blocks of its cluster (row_split.cuh), or, when at most kSparseCap tokens
// are still live, those tokens alone in block 0's shared memory.
//
// After a truncation (top-k, min-p, ...) nearly every token is -inf, and a
// stage's passes over the whole row cost little data but a cluster barrier
// for each reduction (two per combine): on the H200 that was most of what a
// stage cost a batch-1 step. open_row() reads the row once; if few tokens
// live, block 0 gathers them (in id order, so sums run in a fixed order) and
// does the stage alone with block barriers, and the other blocks leave.
//
// Removed tokens (-inf) are absent from a sparse row, so a stage must treat
// them as the dense path does: add nothing to sums, never be kept.
//
// The live tokens found are kept for the rest of the chain run
// (kernels.hpp's LiveList): a later stage on the row reads the listed ones
// in block 0 alone, and its other blocks leave at once. Reading the whole
// row again would cost every stage that scan, a block scan, two cluster
// barriers and a distributed shared memory copy to find the same tokens.
#pragma once

#include "plugins/samplers/cuda/kernels.hpp"
#include "plugins/samplers/cuda/row_split.cuh"

namespace aph::samplers::cuda {

struct SparseTokens {
  float value[kSparseCap];
  int32_t id[kSparseCap];
  int32_t n;
};  // 8 KiB of block 0's shared memory

class RowView {
 public:
  __device__ RowView(float* x, int64_t vocab, SparseTokens* sparse) : x_(x), vocab_(vocab), s_(sparse) {}

  __device__ bool sparse() const { return s_ != nullptr; }
  // This thread's first index into the view, the stride, and the end.
  __device__ int64_t first() const { return sparse() ? static_cast<int64_t>(threadIdx.x) : split_first(); }
  __device__ int64_t step() const { return sparse() ? static_cast<int64_t>(blockDim.x) : split_step(); }
  __device__ int64_t size() const { return sparse() ? s_->n : vocab_; }
  __device__ float value(int64_t j) const { return sparse() ? s_->value[j] : x_[j]; }
  __device__ int64_t id(int64_t j) const { return sparse() ? s_->id[j] : j; }
  __device__ void set(int64_t j, float v) const {
    x_[id(j)] = v;
    if (sparse()) s_->value[j] = v;
  }
  __device__ void remove(int64_t j) const { set(j, -INFINITY); }

  // Over every thread of the view (the block, or the whole cluster).
  template <typename T, typename Op>
  __device__ T reduce(T v, Op op, T identity) const {
    return sparse() ? block_reduce(v, op, identity) : split_reduce(v, op, identity);
  }
  __device__ float max() const {
    float m = -FLT_MAX;
    for (int64_t j = first(); j < size(); j += step()) m = fmaxf(m, value(j));
    return reduce(m, MaxOp{}, -FLT_MAX);
  }
 private:
  float* x_;
  int64_t vocab_;
  SparseTokens* s_;
};

// The row's live list when a kernel before this one in the batch's run
// wrote it (dependent_start waits for that kernel), else null: then the row
// must be read whole.
__device__ inline const LiveList* listed_row(const LogitsView& logits, int32_t row_index) {
  if (logits.live == nullptr || logits.run_id == 0) return nullptr;
  const LiveList* list = logits.live + row_index;
  return list->run_id == logits.run_id ? list : nullptr;
}

// Block 0 alone: the listed tokens still live, in the list's (id) order,
// into s. Tokens removed since the list was written are dropped, so s is
// what a scan of the row would gather.
__device__ inline void gather_listed(const float* x, const LiveList* list, SparseTokens* s) {
  constexpr int kPerThread = 2;  // a whole list (kSparseCap) in one round of 512 threads
  const int32_t n = min(list->n, kSparseCap);
  int32_t count = 0;
  for (int32_t base = 0; base < n; base += static_cast<int32_t>(blockDim.x) * kPerThread) {
    const int32_t j0 = base + static_cast<int32_t>(threadIdx.x) * kPerThread;
    int32_t id[kPerThread];
    float v[kPerThread];
    int mine = 0;
    for (int k = 0; k < kPerThread; ++k) id[k] = j0 + k < n ? list->ids[j0 + k] : -1;
    for (int k = 0; k < kPerThread; ++k) {
      v[k] = id[k] >= 0 ? x[id[k]] : -INFINITY;
      mine += v[k] != -INFINITY ? 1 : 0;
    }
    int round = 0;
    int32_t at = count + block_exclusive_add(mine, &round);
    for (int k = 0; k < kPerThread; ++k) {
      if (v[k] == -INFINITY) continue;
      s->value[at] = v[k];
      s->id[at] = id[k];
      ++at;
    }
    count += round;
  }
  if (threadIdx.x == 0) s->n = count;
  __syncthreads();
}

// The live tokens of this block's slice of row x (block b takes the b-th
// contiguous slice of the cluster's, kPerThread consecutive tokens a thread
// per round, so they come in id order): put(at, value, id) for each, `at`
// its place among the block's live tokens. Returns how many there are. Every
// thread of the block calls it.
template <int kPerThread, typename Put>
__device__ int32_t scan_live_slice(const float* x, int64_t vocab, Put put) {
  const int64_t slice = (vocab + gridDim.x - 1) / gridDim.x;
  const int64_t lo = min(vocab, static_cast<int64_t>(blockIdx.x) * slice), hi = min(vocab, lo + slice);
  int32_t count = 0;
  for (int64_t base = lo; base < hi; base += static_cast<int64_t>(blockDim.x) * kPerThread) {
    const int64_t i0 = base + static_cast<int64_t>(threadIdx.x) * kPerThread;
    float v[kPerThread];
    int mine = 0;
    for (int k = 0; k < kPerThread; ++k) {
      v[k] = i0 + k < hi ? x[i0 + k] : -INFINITY;
      mine += v[k] != -INFINITY ? 1 : 0;
    }
    int round = 0;
    int32_t at = count + block_exclusive_add(mine, &round);
    for (int k = 0; k < kPerThread; ++k) {
      if (v[k] == -INFINITY) continue;
      put(at, v[k], i0 + k);
      ++at;
    }
    count += round;
  }
  return count;
}

// start[b] = the sum of blocks 0..b-1's `mine` over the row's cluster, for b
// up to gridDim.x (start holds kWideBlocks + 1), read from each block's
// *mine through distributed shared memory. Every thread of every block of
// the cluster calls it; the peers may read *mine until the cluster's next
// barrier.
__device__ inline void cluster_offsets(int32_t* mine, int32_t value, int32_t* start) {
  if (threadIdx.x == 0) *mine = value;
  cluster_sync();
  cluster_gather(mine, start + 1);
  if (threadIdx.x == 0) {
    start[0] = 0;
    for (unsigned b = 0; b < gridDim.x; ++b) start[b + 1] += start[b];
  }
  __syncthreads();
}

// Every block of the row's cluster calls it first (after dependent_start,
// which also waits for the kernel that wrote the row's live list). On a
// dense view the caller must pass a cluster barrier (any reduction over the
// row) before a block leaves: the peers may still read this block's count.
// *leave: this block has nothing more to do (the row is sparse and block 0
// has it).
//
// scan = false: an unlisted row is taken dense without the scan. For a
// stage of one reduction and one pass that sees a full row (dynamic
// temperature and top-nsigma lead the default chain), the scan, its block
// scan and its cluster barrier only find out that the row is dense; on a
// sparse unlisted row the stage's own pass costs what the scan would have.
// Such a stage publishes no list.
__device__ inline RowView open_row(LogitsView logits, int32_t row_index, bool* leave, bool scan = true) {
  __shared__ SparseTokens s;
  __shared__ int32_t gathered;  // this block's live count; read by the peers
  float* x = logits.data + static_cast<int64_t>(row_index) * logits.stride;
  const int64_t vocab = logits.vocab;
  *leave = false;
  if (gridDim.x == 1 && vocab > kSparseCap) return RowView(x, vocab, nullptr);  // nothing to gain
  if (const LiveList* listed = listed_row(logits, row_index)) {
    // No cluster barrier follows for this row: the peers are gone, and a
    // sparse view reduces within block 0.
    *leave = blockIdx.x != 0;
    if (*leave) return RowView(x, vocab, nullptr);
    gather_listed(x, listed, &s);
    return RowView(x, vocab, &s);
  }
  if (!scan) return RowView(x, vocab, nullptr);
  // 16 consecutive tokens a thread per round: a 128k row over 16 blocks is
  // one round, so one block scan (three barriers) places every live token.
  const int32_t count = scan_live_slice<16>(x, vocab, [&](int32_t at, float v, int64_t id) {
    if (at < kSparseCap) {
      s.value[at] = v;
      s.id[at] = static_cast<int32_t>(id);
    }
  });
  __shared__ int32_t start[kWideBlocks + 1];  // block b's tokens go to [start[b], start[b + 1])
  cluster_offsets(&gathered, count, start);
  const int32_t total = start[gridDim.x];
  const bool sparse = total <= kSparseCap;
  if (sparse && blockIdx.x == 0) {
    // Each thread copies its slots straight from their peer, so all the
    // peers' loads are in flight together.
    for (int32_t j = start[1] + threadIdx.x; j < total; j += blockDim.x) {
      unsigned from = 1;
      while (from + 1 < gridDim.x && j >= start[from + 1]) ++from;  // an empty block's range is empty
      const SparseTokens* peer = cluster_peer(&s, from);
      s.value[j] = peer->value[j - start[from]];
      s.id[j] = peer->id[j - start[from]];
    }
    if (threadIdx.x == 0) s.n = total;
  }
  // A dense row goes on without a cluster barrier here: the peers only read
  // this block's `gathered`, which nothing rewrites, and every stage reduces
  // over the cluster (cluster barriers) before any block of a dense row
  // leaves.
  if (!sparse) return RowView(x, vocab, nullptr);
  cluster_sync();  // block 0 has copied the peers' lists: they may leave
  *leave = blockIdx.x != 0;
  if (logits.live != nullptr && logits.run_id != 0 && blockIdx.x == 0) {
    // For the stages after this one: the kernels after it read the list
    // only once this grid is done (dependent_start).
    LiveList* list = logits.live + row_index;
    for (int32_t j = threadIdx.x; j < total; j += blockDim.x) list->ids[j] = s.id[j];
    if (threadIdx.x == 0) {
      list->n = total;
      list->run_id = logits.run_id;
    }
  }
  return RowView(x, vocab, &s);
}

// open_row for the row of active row blockIdx.y of a (row, value) table;
// *value gets its value.
template <typename V>
__device__ RowView open_indexed_row(LogitsView logits, const Rows<Indexed<V>>& params, V* value, bool* leave) {
  const Indexed<V> p = params[blockIdx.y];
  *value = p.value;
  return open_row(logits, p.row, leave);
}

}  // namespace aph::samplers::cuda
