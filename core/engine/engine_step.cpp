// One engine step and what follows from it: the forward pass, sampling, and
// each sampled choice's text, stop checks and events.
#include <boost/json.hpp>

#include "core/common/error.hpp"
#include "core/common/log.hpp"
#include "core/engine/engine_impl.hpp"
#include "core/engine/histogram.hpp"
#include "core/engine/step_batch.hpp"

namespace aph::engine {
namespace {

aph_status status_of(const std::exception& e) {
  if (auto* err = dynamic_cast<const Error*>(&e)) return err->code();
  return APH_ERR_INTERNAL;
}

boost::json::array bytes_array(const std::string& bytes) {
  boost::json::array a;
  a.reserve(bytes.size());
  for (unsigned char c : bytes) a.push_back(c);
  return a;
}

}  // namespace

void EngineImpl::step() {
  phases_.mark(StepPhases::kLoop);
  StepPhases::Scope phase_scope(phases_);
  sched::SchedulerOutput out;
  Tensor logits;
  if (queued_step_) {  // scheduled, fed and completed during the last step
    out = std::move(queued_step_->out);
    logits = queued_step_->logits;
    queued_step_.reset();
    phase_scope.keep = true;
    phases_.mark(StepPhases::kSchedule);
    phases_.mark(StepPhases::kForward);
  } else {
    out = scheduler_->schedule();
    if (out.empty()) return;
    const model::StepBatch batch = build_step_batch(out, blocks_->block_size(), max_blocks_per_seq_);
    phase_scope.keep = batch.decode_only();
    phases_.mark(StepPhases::kSchedule);
    try {
      logits = runner_->forward(batch);
    } catch (const std::exception& e) {
      logger("engine")->error("forward failed for a batch of {} sequences: {}", out.seqs.size(),
                              e.what());
      for (const auto& s : out.seqs) {
        auto* c = static_cast<Choice*>(s.seq->owner);
        if (!c->finished)
          fail_request(c->request, status_of(e), std::string("model forward failed: ") + e.what());
      }
      return;
    }
    scheduler_->complete(out);
    phases_.mark(StepPhases::kForward);
  }

  // sampled[i] is null for a row whose sequence ended after its step was
  // queued: it is sampled with placeholder parameters and dropped.
  std::vector<Choice*> sampled;
  std::vector<sampling::RowInput> rows;
  bool want_logprobs = false;
  bool any_live = false;
  for (const auto& s : out.seqs) {
    if (!s.sample) continue;
    auto* c = s.seq ? static_cast<Choice*>(s.seq->owner) : nullptr;
    if (c == nullptr || c->finished) {
      sampled.push_back(nullptr);
      rows.push_back({.sampling = dropped_row_sampling_.get(), .seed = 0, .step = 0});
      continue;
    }
    const GenerationParams& p = c->request->params;
    sampled.push_back(c);
    rows.push_back({.sampling = p.sampling.get(),
                    .tokens = c->seq.tokens.data(),
                    .n_prompt = c->seq.num_prompt_tokens,
                    .n_tokens = c->seq.num_tokens(),
                    .tokens_device = nullptr,
                    .seed = p.sampling->seed() + c->index,
                    .step = static_cast<uint64_t>(c->output->num_output_tokens())});
    want_logprobs = want_logprobs || p.logprobs >= 0;
    any_live = true;
  }
  if (!any_live) return;

  std::vector<int32_t> chosen;
  std::vector<sampling::TokenLogprobs> logprobs;
  std::vector<bool> row_failed(rows.size(), false);
  std::optional<QueuedStep> next;
  bool batch_sampled = false;
  try {
    chain_->begin(logits, rows, want_logprobs);
    batch_sampled = true;
  } catch (const std::exception&) {
  }
  if (batch_sampled) {
    next = queue_next_decode(out);
    try {
      chain_->end(chosen, want_logprobs ? &logprobs : nullptr);
    } catch (const std::exception&) {
      if (next) {  // the queued step overwrote these logits: no row can be sampled again
        drop_queued(next->out);
        throw;
      }
      batch_sampled = false;
    }
  }
  if (!batch_sampled) {
    // Find the row at fault so only its request fails.
    chosen.assign(rows.size(), -1);
    logprobs.assign(rows.size(), {});
    for (size_t i = 0; i < rows.size(); ++i) {
      Tensor row = logits.rows(static_cast<int64_t>(i), static_cast<int64_t>(i) + 1);
      std::vector<int32_t> one;
      std::vector<sampling::TokenLogprobs> one_lp;
      try {
        chain_->sample(row, std::span(&rows[i], 1), one, want_logprobs ? &one_lp : nullptr);
        chosen[i] = one.at(0);
        if (want_logprobs) logprobs[i] = one_lp.at(0);
      } catch (const std::exception& e) {
        row_failed[i] = true;
        if (sampled[i] != nullptr)
          fail_request(sampled[i]->request, status_of(e), std::string("sampling failed: ") + e.what());
      }
    }
  }

  phases_.mark(StepPhases::kSample);
  const auto now = Clock::now();
  uint64_t new_prompt_tokens = 0;
  for (size_t i = 0; i < sampled.size(); ++i) {
    Choice* c = sampled[i];
    if (c == nullptr || row_failed[i] || c->finished) continue;
    ActiveRequest* r = c->request;
    const int32_t token = chosen[i];
    try {
      if (token < 0 || token >= vocab_size_)
        throw Error(APH_ERR_INTERNAL,
                    "sampler chose token " + std::to_string(token) + " outside the vocabulary");
      if (next)  // the queued step gave this sequence a placeholder, fed on the device
        c->seq.tokens.back() = token;
      else
        c->seq.tokens.push_back(token);
      boost::json::array lp;
      const bool has_lp = r->params.logprobs >= 0;
      if (has_lp) {
        const auto& tl = logprobs.at(i);
        auto entry = [&](int32_t id, float value) {
          const bool known = id >= 0 && id < token_vocab_size_;
          return boost::json::object{
              {"id", id},
              {"token", known ? tokenizer_.token_text(id) : std::string()},
              {"bytes", bytes_array(known ? tokenizer_.token_bytes(id) : std::string())},
              {"logprob", value}};
        };
        boost::json::object e = entry(token, tl.chosen.logprob);
        boost::json::array top;
        for (const auto& t : tl.top) top.push_back(entry(t.token, t.logprob));
        e["top"] = std::move(top);
        lp.push_back(std::move(e));
      }
      ChoiceStep st = c->output->push(token, c->seq.num_tokens());
      {
        std::lock_guard lock(stats_mu_);
        if (!r->first_token_seen) {
          observe(stats_.time_to_first_token,
                  std::chrono::duration<double>(now - r->arrival).count());
          new_prompt_tokens += r->params.prompt_ids.size();
        } else if (c->output->num_output_tokens() > 1) {
          observe(stats_.inter_token_latency,
                  std::chrono::duration<double>(now - c->last_token_time).count());
        }
      }
      r->first_token_seen = true;
      c->last_token_time = now;
      emit_tokens(c, std::move(st.text), token, std::move(lp), has_lp);
      if (st.finished) finish_choice(c, st.finish_reason, st.stop_reason, "");
    } catch (const std::exception& e) {
      fail_request(r, status_of(e), std::string("output processing failed: ") + e.what());
    }
  }

  if (next) {
    // The placeholders are real tokens now, so the queued step's positions
    // count as computed (complete() publishes full blocks by their tokens).
    // Sequences that ended keep a row that is dropped next step.
    sched::SchedulerOutput computed;
    for (sched::ScheduledSeq& s : next->out.seqs) {
      if (static_cast<Choice*>(s.seq->owner)->finished) {
        s.seq = nullptr;
        continue;
      }
      computed.seqs.push_back(s);
    }
    scheduler_->complete(computed);
    queued_step_ = std::move(next);
  }

  std::lock_guard lock(stats_mu_);
  stats_.prompt_tokens += new_prompt_tokens;
  for (const Choice* c : sampled) stats_.generation_tokens += c != nullptr ? 1 : 0;
  stats_.overlapped_steps += queued_step_ ? 1 : 0;
  phases_.mark(StepPhases::kOutput);
}

std::optional<QueuedStep> EngineImpl::queue_next_decode(const sched::SchedulerOutput& out) {
  if (!config_.overlap_decode || !out.preempted.empty() || scheduler_->num_waiting() > 0 ||
      scheduler_->num_running() != static_cast<int>(out.seqs.size()))
    return std::nullopt;
  // The scheduler picks exactly these sequences again, one token each, when
  // every one of them is a decode with room for another token and blocks
  // for it are free (nothing to preempt, nothing waiting to admit).
  kv::BlockManager& blocks = scheduler_->block_manager();
  int need = 0;
  for (const sched::ScheduledSeq& s : out.seqs) {
    if (s.seq == nullptr || !s.sample || s.num_new_tokens != 1) return std::nullopt;
    const sched::Sequence& q = *s.seq;
    if (static_cast<Choice*>(q.owner)->finished || q.remaining() != 0 || q.num_tokens() + 1 > max_model_len_)
      return std::nullopt;
    need += blocks.blocks_needed(q.blocks, q.num_tokens() + 1);
  }
  if (!blocks.can_allocate(need)) return std::nullopt;
  for (const sched::ScheduledSeq& s : out.seqs) s.seq->tokens.push_back(s.seq->tokens.back());
  try {
    QueuedStep next;
    next.out = scheduler_->schedule();
    bool same = next.out.preempted.empty() && next.out.seqs.size() == out.seqs.size();
    for (size_t i = 0; same && i < out.seqs.size(); ++i)
      same = next.out.seqs[i].seq == out.seqs[i].seq && next.out.seqs[i].num_new_tokens == 1 && next.out.seqs[i].sample;
    if (!same) throw Error(APH_ERR_INTERNAL, "the scheduler chose other sequences");
    const model::StepBatch batch = build_step_batch(next.out, blocks_->block_size(), max_blocks_per_seq_);
    next.logits = runner_->forward_fed(batch, chain_->chosen_ids());
    return next;
  } catch (const std::exception& e) {
    logger("engine")->warn("the next decode step was not queued early: {}", e.what());
    drop_queued(out);
    return std::nullopt;
  }
}

void EngineImpl::drop_queued(const sched::SchedulerOutput& out) {
  for (const sched::ScheduledSeq& s : out.seqs)
    if (s.seq != nullptr) s.seq->tokens.pop_back();
}

void EngineImpl::update_gauges() {
  std::lock_guard lock(stats_mu_);
  stats_.running = scheduler_->num_running();
  stats_.waiting = scheduler_->num_waiting();
  stats_.kv_usage = static_cast<double>(blocks_->num_used_blocks()) / blocks_->num_blocks();
  stats_.prefix_cache_queries = blocks_->stats().prefix_queries;
  stats_.prefix_cache_hits = blocks_->stats().prefix_hits;
  stats_.preemptions = scheduler_->num_preemptions();
}

void EngineImpl::emit_tokens(Choice* c, std::string text, int32_t token,
                             boost::json::array logprobs, bool has_logprobs) {
  Event ev;
  ev.kind = APH_EVENT_TOKENS;
  ev.choice = c->index;
  ev.text = std::move(text);
  ev.token_ids.push_back(token);
  ev.logprobs = std::move(logprobs);
  ev.has_logprobs = has_logprobs;
  ev.prompt_tokens = c->request->params.prompt_ids.size();
  ev.completion_tokens = c->output->num_output_tokens();
  ev.cached_prompt_tokens = c->request->choices[0]->seq.num_cached_prompt_tokens;
  c->request->channel->push(std::move(ev));
}

void EngineImpl::finish_choice(Choice* c, const std::string& reason,
                               std::optional<std::string> stop_reason, std::string text) {
  scheduler_->finish(&c->seq);
  c->finished = true;
  --c->request->open_choices;
  Event ev;
  ev.kind = APH_EVENT_FINISHED;
  ev.choice = c->index;
  ev.text = std::move(text);
  ev.finish_reason = reason;
  ev.stop_reason = std::move(stop_reason);
  ev.prompt_tokens = c->request->params.prompt_ids.size();
  ev.completion_tokens = c->output->num_output_tokens();
  ev.cached_prompt_tokens = c->request->choices[0]->seq.num_cached_prompt_tokens;
  c->request->channel->push(std::move(ev));
}

}  // namespace aph::engine
