// The scheduler driven by a fake model: every step writes (token, position)
// into a simulated KV pool through the block tables, so a wrong table, a
// shared block being overwritten or a bad prefix hit shows up as the wrong
// content at some position, and the block invariants are checked every step.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <memory>
#include <random>

#include "core/common/error.hpp"
#include "core/scheduler/scheduler.hpp"

using aph::kv::BlockManager;
using aph::sched::Scheduler;
using aph::sched::SchedulerConfig;
using aph::sched::SchedulerOutput;
using aph::sched::SeqStatus;
using aph::sched::Sequence;

namespace {

struct Slot {
  int32_t token = -1;
  int32_t position = -1;
};

class Harness {
 public:
  Harness(int num_blocks, int block_size, SchedulerConfig cfg, bool prefix = true)
      : bm(num_blocks, block_size, prefix),
        sched(cfg, bm),
        cfg_(cfg),
        kv(static_cast<size_t>(num_blocks) * block_size) {}

  Sequence* add(std::vector<int32_t> prompt, int max_new, Sequence* fork_of = nullptr) {
    auto s = std::make_unique<Sequence>();
    s->id = seqs.size();
    s->tokens = std::move(prompt);
    s->num_prompt_tokens = s->num_tokens();
    Sequence* p = s.get();
    max_new_[p] = max_new;
    seqs.push_back(std::move(s));
    if (fork_of)
      sched.add_fork(p, fork_of);
    else
      sched.add(p);
    return p;
  }

  // The token a sequence "generates" depends on its whole history, so reading
  // the wrong K/V is visible in the output too.
  static int32_t next_token(const Sequence& s) {
    uint64_t h = 1469598103934665603ull;
    for (int32_t t : s.tokens) h = (h ^ static_cast<uint64_t>(t)) * 1099511628211ull;
    return static_cast<int32_t>(h % 50000);
  }

  SchedulerOutput step() {
    SchedulerOutput out = sched.schedule();
    EXPECT_LE(out.num_batched_tokens, cfg_.max_num_batched_tokens);
    EXPECT_LE(sched.num_running(), cfg_.max_num_seqs);
    // What a sequence counts as cached must be in the pool before this step
    // writes anything (a kernel may read it before another sequence's write).
    for (auto& s : out.seqs) expect_cached(*s.seq, s.seq->num_computed);
    int total = 0;
    for (auto& s : out.seqs) {
      Sequence* q = s.seq;
      total += s.num_new_tokens;
      EXPECT_EQ(q->status, SeqStatus::Running);
      EXPECT_GT(s.num_new_tokens, 0);
      EXPECT_LE(q->num_computed + s.num_new_tokens,
                static_cast<int>(q->blocks.table.size()) * bm.block_size());
      for (int i = 0; i < s.num_new_tokens; ++i) {
        const int pos = q->num_computed + i;
        const int32_t block = q->blocks.table[pos / bm.block_size()];
        // Nobody else may see a block this step writes into.
        EXPECT_EQ(bm.ref_count(block), 1) << "write into shared block " << block;
        kv[static_cast<size_t>(block) * bm.block_size() + pos % bm.block_size()] = {q->tokens[pos],
                                                                                    pos};
      }
    }
    EXPECT_EQ(total, out.num_batched_tokens);
    for (auto& s : out.seqs) expect_cached(*s.seq, s.seq->num_computed + s.num_new_tokens);
    sched.complete(out);
    for (auto& s : out.seqs) {
      if (!s.sample) continue;
      Sequence* q = s.seq;
      q->tokens.push_back(next_token(*q));
      if (q->num_tokens() - q->num_prompt_tokens >= max_new_[q]) finish(q);
    }
    check();
    return out;
  }

  // Attention reads: positions [0, n) of the sequence must hold its tokens.
  void expect_cached(const Sequence& q, int n) {
    for (int pos = 0; pos < n; ++pos) {
      const int32_t block = q.blocks.table[pos / bm.block_size()];
      const Slot& slot = kv[static_cast<size_t>(block) * bm.block_size() + pos % bm.block_size()];
      EXPECT_EQ(slot.token, q.tokens[pos]) << "seq " << q.id << " pos " << pos;
      EXPECT_EQ(slot.position, pos);
    }
  }

  void finish(Sequence* q) {
    sched.finish(q);
    ++finished;
  }

  void check() {
    std::vector<const aph::kv::SeqBlocks*> live;
    for (auto& s : seqs) {
      if (s->status != SeqStatus::Finished) {
        live.push_back(&s->blocks);
      } else {
        EXPECT_TRUE(s->blocks.table.empty());
      }
    }
    bm.check_invariants(live);
  }

  int run_to_end(int max_steps) {
    int steps = 0;
    while (sched.has_work() && steps < max_steps) {
      step();
      ++steps;
    }
    return steps;
  }

  BlockManager bm;
  Scheduler sched;
  SchedulerConfig cfg_;
  std::vector<Slot> kv;
  std::vector<std::unique_ptr<Sequence>> seqs;
  std::map<Sequence*, int> max_new_;
  int finished = 0;
};

std::vector<int32_t> tokens_of(int n, int seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> t(n);
  for (auto& x : t) x = static_cast<int32_t>(rng() % 32000);
  return t;
}

// What a sequence would produce with no batching, no preemption, no sharing.
std::vector<int32_t> reference_output(std::vector<int32_t> prompt, int max_new) {
  Sequence s;
  s.tokens = std::move(prompt);
  const int n_prompt = s.num_tokens();
  while (s.num_tokens() - n_prompt < max_new) s.tokens.push_back(Harness::next_token(s));
  return {s.tokens.begin() + n_prompt, s.tokens.end()};
}

}  // namespace

TEST(Scheduler, NewRequestJoinsRunningBatchNextStep) {
  Harness h(64, 4, {.max_num_seqs = 8, .max_num_batched_tokens = 64});
  Sequence* a = h.add(tokens_of(10, 1), 20);
  auto out = h.step();
  ASSERT_EQ(out.seqs.size(), 1u);
  EXPECT_EQ(out.seqs[0].num_new_tokens, 10);
  EXPECT_TRUE(out.seqs[0].sample);
  Sequence* b = h.add(tokens_of(7, 2), 20);
  out = h.step();
  ASSERT_EQ(out.seqs.size(), 2u);
  EXPECT_EQ(out.seqs[0].seq, a);  // the decode comes first
  EXPECT_EQ(out.seqs[0].num_new_tokens, 1);
  EXPECT_EQ(out.seqs[1].seq, b);
  EXPECT_EQ(out.seqs[1].num_new_tokens, 7);
}

TEST(Scheduler, ChunkedPrefillMixesWithDecodesUnderTheTokenBudget) {
  Harness h(256, 16, {.max_num_seqs = 8, .max_num_batched_tokens = 32});
  Sequence* a = h.add(tokens_of(5, 1), 50);
  h.step();
  Sequence* b = h.add(tokens_of(100, 2), 5);
  auto out = h.step();
  ASSERT_EQ(out.seqs.size(), 2u);
  EXPECT_EQ(out.seqs[0].seq, a);
  EXPECT_EQ(out.seqs[1].num_new_tokens, 31);
  EXPECT_FALSE(out.seqs[1].sample);
  out = h.step();  // b's second chunk comes after a's decode
  ASSERT_EQ(out.seqs.size(), 2u);
  EXPECT_EQ(out.seqs[0].seq, a);
  EXPECT_EQ(out.seqs[1].seq, b);
  EXPECT_EQ(b->num_computed, 62);
  h.run_to_end(1000);
  EXPECT_EQ(h.finished, 2);
}

TEST(Scheduler, MaxNumSeqsBoundsTheBatch) {
  Harness h(256, 16, {.max_num_seqs = 3, .max_num_batched_tokens = 1000});
  for (int i = 0; i < 7; ++i) h.add(tokens_of(8, i), 4);
  auto out = h.step();
  EXPECT_EQ(out.seqs.size(), 3u);
  EXPECT_EQ(h.sched.num_waiting(), 4);
  h.run_to_end(1000);
  EXPECT_EQ(h.finished, 7);
}

TEST(Scheduler, PrefixHitsWhereExpected) {
  Harness h(128, 16, {.max_num_seqs = 8, .max_num_batched_tokens = 512});
  auto system_prompt = tokens_of(64, 7);
  auto p1 = system_prompt, p2 = system_prompt;
  auto u1 = tokens_of(10, 8), u2 = tokens_of(20, 9);
  p1.insert(p1.end(), u1.begin(), u1.end());
  p2.insert(p2.end(), u2.begin(), u2.end());
  Sequence* a = h.add(p1, 3);
  h.run_to_end(100);
  Sequence* b = h.add(p2, 3);
  auto out = h.step();
  EXPECT_EQ(b->num_cached_prompt_tokens, 64);
  EXPECT_EQ(out.seqs[0].num_new_tokens, 20);
  EXPECT_EQ(h.bm.stats().prefix_hits, 4u);
  h.run_to_end(100);
  EXPECT_EQ(a->tokens.size(), p1.size() + 3);
  EXPECT_EQ(std::vector<int32_t>(b->tokens.begin() + p2.size(), b->tokens.end()),
            reference_output(p2, 3));
}

TEST(Scheduler, SameStepTwinsDoNotReadUnwrittenBlocks) {
  // Two identical prompts admitted in one step: the second must not hit on
  // blocks the first is only now writing.
  Harness h(64, 4, {.max_num_seqs = 8, .max_num_batched_tokens = 512});
  auto p = tokens_of(20, 3);
  Sequence* a = h.add(p, 2);
  Sequence* b = h.add(p, 2);
  h.step();
  EXPECT_EQ(b->num_cached_prompt_tokens, 0);
  h.run_to_end(100);
  EXPECT_EQ(a->tokens, b->tokens);
}

TEST(Scheduler, PreemptsNewestWhenBlocksRunOutAndStillFinishes) {
  // 12 blocks of 4 tokens: three sequences growing to 24 tokens cannot all fit.
  Harness h(12, 4, {.max_num_seqs = 8, .max_num_batched_tokens = 64}, false);
  std::vector<Sequence*> s;
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 3; ++i) {
    prompts.push_back(tokens_of(8, 10 + i));
    s.push_back(h.add(prompts.back(), 16));
  }
  bool saw_preemption = false;
  for (int i = 0; i < 500 && h.sched.has_work(); ++i) {
    auto out = h.step();
    if (!out.preempted.empty()) {
      saw_preemption = true;
      EXPECT_EQ(out.preempted[0], s[2]) << "the newest goes first";
    }
  }
  EXPECT_TRUE(saw_preemption);
  EXPECT_EQ(h.finished, 3);
  EXPECT_GT(h.sched.num_preemptions(), 0u);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(std::vector<int32_t>(s[i]->tokens.begin() + 8, s[i]->tokens.end()),
              reference_output(prompts[i], 16));
  EXPECT_EQ(h.bm.num_free_blocks(), 12);
}

TEST(Scheduler, AbortFreesBlocksImmediately) {
  Harness h(32, 4, {.max_num_seqs = 8, .max_num_batched_tokens = 64});
  Sequence* a = h.add(tokens_of(20, 1), 100);
  Sequence* b = h.add(tokens_of(20, 2), 100);
  h.step();
  h.step();
  const int used = h.bm.num_used_blocks();
  const int a_blocks = static_cast<int>(a->blocks.table.size());
  h.finish(a);
  EXPECT_EQ(h.bm.num_used_blocks(), used - a_blocks);
  h.check();
  Sequence* c = h.add(tokens_of(5, 3), 1);
  h.finish(c);  // abort while waiting
  h.check();
  h.finish(b);
  EXPECT_EQ(h.bm.num_used_blocks(), 0);
  EXPECT_FALSE(h.sched.has_work());
}

TEST(Scheduler, ForkedChoicesShareThePromptBlocks) {
  Harness h(64, 4, {.max_num_seqs = 8, .max_num_batched_tokens = 256}, false);
  auto prompt = tokens_of(18, 5);  // 4 full blocks + 2 tokens
  Sequence* parent = h.add(prompt, 5);
  Sequence* c1 = h.add(prompt, 5, parent);
  Sequence* c2 = h.add(prompt, 5, parent);
  h.step();  // the parent's prefill
  EXPECT_EQ(c1->status, SeqStatus::Waiting);
  auto out = h.step();
  ASSERT_EQ(c1->status, SeqStatus::Running);
  EXPECT_EQ(c1->blocks.table[0], parent->blocks.table[0]);
  EXPECT_EQ(c2->blocks.table[3], parent->blocks.table[3]);
  EXPECT_EQ(h.bm.ref_count(parent->blocks.table[0]), 3);
  EXPECT_NE(c1->blocks.table[4], parent->blocks.table[4]);
  for (auto& s : out.seqs) {
    if (s.seq == c1) {
      EXPECT_EQ(s.num_new_tokens, 2);  // only the partial tail is recomputed
    }
  }
  h.run_to_end(100);
  EXPECT_EQ(h.finished, 3);
  EXPECT_EQ(c1->tokens, parent->tokens);  // same history, same fake model
}

TEST(Scheduler, ForkWaitingOnAFinishedParentStartsAlone) {
  Harness h(64, 4, {.max_num_seqs = 8, .max_num_batched_tokens = 256});
  auto prompt = tokens_of(18, 5);
  Sequence* parent = h.add(prompt, 5);
  Sequence* child = h.add(prompt, 5, parent);
  h.finish(parent);  // e.g. aborted before its prompt ran
  h.run_to_end(100);
  EXPECT_EQ(child->status, SeqStatus::Finished);
  EXPECT_EQ(child->num_tokens(), 23);
}

TEST(Scheduler, PromptLargerThanThePoolIsRejected) {
  Harness h(4, 4, {.max_num_seqs = 8, .max_num_batched_tokens = 256});
  EXPECT_THROW(h.add(tokens_of(16, 1), 1), aph::Error);
  EXPECT_FALSE(h.sched.has_work());
}

// Randomized long runs under heavy memory pressure: random lengths, shared
// prefixes, forks, aborts. Every request finishes with the reference output.
TEST(Scheduler, RandomizedPressureEverythingFinishes) {
  uint64_t preemptions = 0, hits = 0, evictions = 0;
  for (int trial = 0; trial < 12; ++trial) {
    std::mt19937 rng(1000 + trial);
    const int block_size = 1 + rng() % 16;
    const int max_len = 80;
    const int num_blocks = (max_len + block_size) / block_size + 1 + rng() % 40;
    SchedulerConfig cfg{.max_num_seqs = 1 + static_cast<int>(rng() % 16),
                        .max_num_batched_tokens = 8 + static_cast<int>(rng() % 200)};
    Harness h(num_blocks, block_size, cfg, trial % 3 != 0);
    auto shared = tokens_of(40, trial);
    std::vector<std::pair<Sequence*, std::vector<int32_t>>> expected;
    std::vector<Sequence*> aborted;
    int submitted = 0;
    for (int stepno = 0; stepno < 20000; ++stepno) {
      if (submitted < 60 && rng() % 3 == 0) {
        const int plen = 1 + rng() % 50;
        std::vector<int32_t> prompt;
        if (rng() % 2) prompt.assign(shared.begin(), shared.begin() + std::min(plen, 40));
        auto tail = tokens_of(plen - static_cast<int>(prompt.size()), trial * 100 + submitted);
        prompt.insert(prompt.end(), tail.begin(), tail.end());
        const int max_new = 1 + rng() % (max_len - plen);
        Sequence* s = h.add(prompt, max_new);
        ++submitted;
        expected.push_back({s, reference_output(prompt, max_new)});
        if (rng() % 4 == 0) {
          Sequence* c = h.add(prompt, max_new, s);
          ++submitted;
          expected.push_back({c, reference_output(prompt, max_new)});
        }
      }
      if (rng() % 25 == 0 && !h.sched.running().empty()) {
        Sequence* victim = h.sched.running()[rng() % h.sched.running().size()];
        h.finish(victim);
        aborted.push_back(victim);
      }
      if (!h.sched.has_work()) {
        if (submitted >= 60) break;
        continue;
      }
      h.step();
    }
    ASSERT_FALSE(h.sched.has_work()) << "trial " << trial << " did not drain";
    for (auto& [s, ref] : expected) {
      ASSERT_EQ(s->status, SeqStatus::Finished);
      if (std::find(aborted.begin(), aborted.end(), s) != aborted.end()) continue;
      EXPECT_EQ(std::vector<int32_t>(s->tokens.begin() + s->num_prompt_tokens, s->tokens.end()),
                ref)
          << "trial " << trial << " seq " << s->id;
    }
    EXPECT_EQ(h.bm.num_free_blocks(), num_blocks);
    preemptions += h.sched.num_preemptions();
    hits += h.bm.stats().prefix_hits;
    evictions += h.bm.stats().evictions;
  }
  // The runs must actually exercise the hard paths.
  EXPECT_GT(preemptions, 50u);
  EXPECT_GT(hits, 50u);
  EXPECT_GT(evictions, 50u);
  std::printf("preemptions %llu, prefix hits %llu, evictions %llu\n",
              static_cast<unsigned long long>(preemptions), static_cast<unsigned long long>(hits),
              static_cast<unsigned long long>(evictions));
}

TEST(Scheduler, HitsOnlyOnBlocksWhoseKvIsComputed) {
  // a's prompt runs in chunks of 10 and is aborted after the first: only two
  // of its 4-token blocks are complete, so b (same prompt) reuses exactly those.
  Harness h(64, 4, {.max_num_seqs = 8, .max_num_batched_tokens = 10});
  auto p = tokens_of(30, 4);
  Sequence* a = h.add(p, 2);
  h.step();
  EXPECT_EQ(a->num_computed, 10);
  h.finish(a);
  Sequence* b = h.add(p, 2);
  h.step();
  EXPECT_EQ(b->num_cached_prompt_tokens, 8);
  h.run_to_end(100);
  EXPECT_EQ(std::vector<int32_t>(b->tokens.begin() + 30, b->tokens.end()), reference_output(p, 2));
}
