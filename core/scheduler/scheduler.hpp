// Continuous batching over a paged KV cache. Each step: running sequences
// first (decodes, then unfinished prefill chunks), then waiting ones while the
// token budget, max_num_seqs and free blocks allow. When blocks run out the
// newest running sequence is preempted and later recomputed, so a step never
// fails for lack of memory.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "core/kvcache/block_manager.hpp"
#include "core/scheduler/sequence.hpp"

namespace aph::sched {

struct SchedulerConfig {
  int max_num_seqs = 64;
  int max_num_batched_tokens = 2048;
  // Free blocks kept back when admitting new sequences, so running ones can
  // grow a while before anything is preempted.
  double admission_watermark = 0.01;
};

struct ScheduledSeq {
  Sequence* seq = nullptr;
  int num_new_tokens = 0;  // tokens[num_computed, num_computed + num_new_tokens)
  bool sample = false;     // the chunk reaches the end of the known tokens
};

struct SchedulerOutput {
  std::vector<ScheduledSeq> seqs;  // decodes first
  std::vector<Sequence*> preempted;
  int num_batched_tokens = 0;
  bool empty() const { return seqs.empty(); }
};

class Scheduler {
 public:
  Scheduler(const SchedulerConfig& config, kv::BlockManager& blocks);

  // Queues a new sequence. Throws aph::Error when it could never fit in the
  // whole pool (it would otherwise preempt itself forever).
  void add(Sequence* seq);
  // n > 1: `child` holds the same prompt as `parent` and starts once the
  // parent's prompt is in the cache, sharing its full blocks.
  void add_fork(Sequence* child, Sequence* parent);

  SchedulerOutput schedule();
  // After the step's forward pass: the scheduled tokens are now cached.
  // Sampled tokens are appended by the caller afterwards.
  void complete(const SchedulerOutput& out);
  // Removes a sequence wherever it is (finished, aborted) and frees its blocks.
  void finish(Sequence* seq);

  bool has_work() const { return !waiting_.empty() || !running_.empty() || !forks_.empty(); }
  int num_waiting() const { return static_cast<int>(waiting_.size() + forks_.size()); }
  int num_running() const { return static_cast<int>(running_.size()); }
  uint64_t num_preemptions() const { return preemptions_; }
  const std::deque<Sequence*>& running() const { return running_; }
  const std::deque<Sequence*>& waiting() const { return waiting_; }
  kv::BlockManager& block_manager() { return blocks_; }

 private:
  struct PendingFork {
    Sequence* child;
    Sequence* parent;
  };

  void start_forks();
  // Blocks for `n` more tokens of `seq`, preempting newer sequences if needed.
  // False when `seq` itself had to be preempted.
  bool reserve(Sequence* seq, int n, SchedulerOutput& out, int& budget);
  void preempt(Sequence* victim, SchedulerOutput& out, int& budget);
  bool admit(Sequence* seq, SchedulerOutput& out, int& budget);
  int fork_point(const Sequence* child) const;

  SchedulerConfig config_;
  kv::BlockManager& blocks_;
  std::deque<Sequence*> waiting_;
  std::deque<Sequence*> running_;
  std::vector<PendingFork> forks_;
  uint64_t preemptions_ = 0;
};

}  // namespace aph::sched
