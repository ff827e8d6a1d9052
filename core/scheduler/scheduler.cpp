#include "core/scheduler/scheduler.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/common/error.hpp"

namespace aph::sched {

Scheduler::Scheduler(const SchedulerConfig& config, kv::BlockManager& blocks)
    : config_(config), blocks_(blocks) {
  if (config.max_num_seqs <= 0) throw invalid_argument("max_num_seqs must be positive");
  if (config.max_num_batched_tokens <= 0)
    throw invalid_argument("max_num_batched_tokens must be positive");
}

void Scheduler::add(Sequence* seq) {
  if (seq->num_tokens() == 0) throw invalid_argument("prompt: empty");
  if (blocks_.blocks_for_tokens(seq->num_tokens() + 1) > blocks_.num_blocks())
    throw invalid_argument(
        "prompt: " + std::to_string(seq->num_tokens()) + " tokens do not fit in the KV cache (" +
        std::to_string(blocks_.num_blocks() * blocks_.block_size()) + " tokens)");
  seq->status = SeqStatus::Waiting;
  waiting_.push_back(seq);
}

int Scheduler::fork_point(const Sequence* child) const {
  const int bs = blocks_.block_size();
  return (child->num_prompt_tokens - 1) / bs * bs;
}

void Scheduler::add_fork(Sequence* child, Sequence* parent) {
  if (fork_point(child) == 0) return add(child);
  child->status = SeqStatus::Waiting;
  forks_.push_back({child, parent});
}

void Scheduler::start_forks() {
  for (auto it = forks_.begin(); it != forks_.end();) {
    if (static_cast<int>(running_.size()) >= config_.max_num_seqs) return;
    Sequence* child = it->child;
    const int shared = fork_point(child);
    if (it->parent->status != SeqStatus::Running || it->parent->num_computed < shared) {
      ++it;
      continue;
    }
    blocks_.fork(it->parent->blocks, child->blocks, shared);
    child->num_computed = shared;
    child->admitted_once = true;
    child->status = SeqStatus::Running;
    running_.push_back(child);
    it = forks_.erase(it);
  }
}

void Scheduler::preempt(Sequence* victim, SchedulerOutput& out, int& budget) {
  running_.erase(std::find(running_.begin(), running_.end(), victim));
  auto sched = std::find_if(out.seqs.begin(), out.seqs.end(),
                            [&](const ScheduledSeq& s) { return s.seq == victim; });
  if (sched != out.seqs.end()) {
    budget += sched->num_new_tokens;
    out.seqs.erase(sched);
  }
  blocks_.free(victim->blocks);
  victim->num_computed = 0;
  victim->status = SeqStatus::Waiting;
  waiting_.push_front(victim);
  out.preempted.push_back(victim);
  ++preemptions_;
}

bool Scheduler::reserve(Sequence* seq, int n, SchedulerOutput& out, int& budget) {
  const int need = blocks_.blocks_needed(seq->blocks, seq->num_computed + n);
  while (!blocks_.can_allocate(need)) {
    Sequence* victim = running_.back();
    preempt(victim, out, budget);
    if (victim == seq) return false;
  }
  blocks_.allocate(seq->blocks, seq->num_computed + n);
  return true;
}

bool Scheduler::admit(Sequence* seq, SchedulerOutput& out, int& budget) {
  const int bs = blocks_.block_size();
  const bool fresh = seq->blocks.table.empty();
  kv::PrefixHit hit;
  if (fresh) hit = blocks_.lookup(seq->tokens, seq->blocks.salt, seq->num_tokens() - 1);
  const int computed = fresh ? hit.num_tokens : seq->num_computed;
  const int held =
      fresh ? static_cast<int>(hit.blocks.size()) : static_cast<int>(seq->blocks.table.size());
  const int watermark =
      running_.empty()
          ? 0
          : static_cast<int>(std::ceil(config_.admission_watermark * blocks_.num_blocks()));
  const int usable = blocks_.num_free_blocks() - hit.blocks_from_free_pool - watermark;
  // Under pressure a prompt starts with the chunk that fits rather than waiting.
  const int fits = (held + usable) * bs - computed;
  const int n = std::min({seq->num_tokens() - computed, budget, fits});
  if (n <= 0) return false;

  if (fresh) blocks_.attach(seq->blocks, hit);
  seq->num_computed = computed;
  if (!seq->admitted_once)
    seq->num_cached_prompt_tokens = std::min(hit.num_tokens, seq->num_prompt_tokens);
  seq->admitted_once = true;
  blocks_.allocate(seq->blocks, computed + n);
  waiting_.pop_front();
  seq->status = SeqStatus::Running;
  running_.push_back(seq);
  out.seqs.push_back({seq, n, computed + n == seq->num_tokens()});
  budget -= n;
  return true;
}

SchedulerOutput Scheduler::schedule() {
  SchedulerOutput out;
  int budget = config_.max_num_batched_tokens;
  start_forks();

  std::vector<Sequence*> order;
  order.reserve(running_.size());
  for (Sequence* s : running_)
    if (s->remaining() == 1) order.push_back(s);
  for (Sequence* s : running_)
    if (s->remaining() > 1) order.push_back(s);

  for (Sequence* seq : order) {
    if (budget == 0) break;
    if (seq->status != SeqStatus::Running) continue;  // preempted earlier this step
    const int n = std::min(seq->remaining(), budget);
    if (!reserve(seq, n, out, budget)) continue;
    out.seqs.push_back({seq, n, seq->num_computed + n == seq->num_tokens()});
    budget -= n;
  }

  // Admitting while preempting would only trade one recompute for another.
  if (out.preempted.empty()) {
    while (!waiting_.empty() && budget > 0 &&
           static_cast<int>(running_.size()) < config_.max_num_seqs) {
      if (!admit(waiting_.front(), out, budget)) break;
    }
  }
  out.num_batched_tokens = config_.max_num_batched_tokens - budget;
  return out;
}

void Scheduler::complete(const SchedulerOutput& out) {
  for (const ScheduledSeq& s : out.seqs) {
    s.seq->num_computed += s.num_new_tokens;
    blocks_.publish(s.seq->blocks, s.seq->tokens, s.seq->num_computed);
  }
}

void Scheduler::finish(Sequence* seq) {
  // Children still waiting for this parent's prompt start on their own
  // (with prefix caching they still find its published blocks).
  for (auto it = forks_.begin(); it != forks_.end();) {
    if (it->parent == seq) {
      it->child->status = SeqStatus::Waiting;
      waiting_.push_front(it->child);
      it = forks_.erase(it);
    } else if (it->child == seq) {
      it = forks_.erase(it);
    } else {
      ++it;
    }
  }
  if (auto it = std::find(running_.begin(), running_.end(), seq); it != running_.end())
    running_.erase(it);
  if (auto it = std::find(waiting_.begin(), waiting_.end(), seq); it != waiting_.end())
    waiting_.erase(it);
  blocks_.free(seq->blocks);
  seq->status = SeqStatus::Finished;
}

}  // namespace aph::sched
