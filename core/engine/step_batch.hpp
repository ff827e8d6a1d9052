// Turns the scheduler's decision into the model runner's StepBatch: token ids,
// positions, per-sequence query offsets and context lengths, padded block
// tables, the KV slot of every new token, and which rows need logits.
#pragma once

#include "core/model/model_runner.hpp"
#include "core/scheduler/scheduler.hpp"

namespace aph::engine {

// `max_blocks_per_seq` is fixed for the engine's life (the context length in
// blocks) so captured decode graphs can take the table without re-layout.
model::StepBatch build_step_batch(const sched::SchedulerOutput& out, int block_size,
                                  int max_blocks_per_seq);

}  // namespace aph::engine
