#include "core/engine/step_batch.hpp"

#include <algorithm>

#include "core/common/error.hpp"

namespace aph::engine {

model::StepBatch build_step_batch(const sched::SchedulerOutput& out, int block_size,
                                  int max_blocks_per_seq) {
  model::StepBatch b;
  const size_t n_seqs = out.seqs.size();
  b.token_ids.reserve(out.num_batched_tokens);
  b.positions.reserve(out.num_batched_tokens);
  b.slot_mapping.reserve(out.num_batched_tokens);
  b.query_start.reserve(n_seqs + 1);
  b.context_lens.reserve(n_seqs);
  b.max_blocks_per_seq = max_blocks_per_seq;
  b.block_tables.assign(n_seqs * static_cast<size_t>(max_blocks_per_seq), 0);
  b.query_start.push_back(0);
  for (size_t i = 0; i < n_seqs; ++i) {
    const sched::ScheduledSeq& s = out.seqs[i];
    const sched::Sequence& q = *s.seq;
    const auto& table = q.blocks.table;
    if (static_cast<int>(table.size()) > max_blocks_per_seq)
      throw Error(APH_ERR_INTERNAL, "sequence holds more blocks than the context allows");
    for (int pos = q.num_computed; pos < q.num_computed + s.num_new_tokens; ++pos) {
      b.token_ids.push_back(q.tokens[pos]);
      b.positions.push_back(pos);
      b.slot_mapping.push_back(static_cast<int64_t>(table[pos / block_size]) * block_size +
                               pos % block_size);
    }
    b.query_start.push_back(static_cast<int32_t>(b.token_ids.size()));
    b.context_lens.push_back(q.num_computed + s.num_new_tokens);
    std::copy(table.begin(), table.end(), b.block_tables.begin() + i * max_blocks_per_seq);
    if (s.sample) b.logits_indices.push_back(b.query_start.back() - 1);
  }
  return b;
}

}  // namespace aph::engine
