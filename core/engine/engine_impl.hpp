// The engine behind aph_engine_api: one engine thread runs schedule ->
// StepBatch -> ModelRunner::forward -> sampler chain -> detokenize/stop ->
// per-request channels; any thread may submit, read events or cancel.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/chat/chat_template.hpp"
#include "core/engine/choice_output.hpp"
#include "core/engine/engine.hpp"
#include "core/engine/request_params.hpp"
#include "core/engine/request_state.hpp"
#include "core/engine/step_phases.hpp"
#include "core/kvcache/block_manager.hpp"
#include "core/model/model_runner.hpp"
#include "core/sampling/sampler_chain.hpp"
#include "core/scheduler/scheduler.hpp"

namespace aph::engine {

using Clock = std::chrono::steady_clock;

struct ActiveRequest;

struct Choice {
  ActiveRequest* request = nullptr;
  uint32_t index = 0;
  sched::Sequence seq;
  std::unique_ptr<ChoiceOutput> output;
  bool finished = false;
  Clock::time_point last_token_time;
};

struct ActiveRequest {
  uint64_t id = 0;
  GenerationParams params;
  std::shared_ptr<RequestChannel> channel;
  std::vector<std::unique_ptr<Choice>> choices;  // stable addresses: the scheduler holds Sequence*
  Clock::time_point arrival;
  bool first_token_seen = false;
  int open_choices = 0;
};

// A decode step queued before the tokens of the step before it reached the
// host (EngineConfig::overlap_decode): its sequences, each scheduled for one
// token that the sampler fed on the device, and its logits. A sequence that
// ended after the step was queued has seq == nullptr: its row is sampled and
// dropped.
struct QueuedStep {
  sched::SchedulerOutput out;
  Tensor logits;
};

class EngineImpl final : public Engine {
 public:
  EngineImpl(const EngineConfig& config, std::unique_ptr<model::ModelRunner> runner,
             const PluginRegistry& plugins);
  ~EngineImpl() override;

  const aph_engine_api* api() const override { return &api_; }
  EngineStats stats() const override;
  void shutdown() override;

  // The aph_engine_api functions (any thread).
  void describe(aph_model_desc* out) const;
  std::vector<int32_t> tokenize(std::string_view text, bool add_special, bool parse_special) const;
  std::string detokenize(std::span<const int32_t> ids, bool skip_special) const;
  std::string apply_chat_template(const std::string& messages_json,
                                  const std::string& options_json) const;
  std::shared_ptr<RequestChannel> submit(const std::string& request_json);

 private:
  void setup_kv_cache();
  void loop();
  void take_inbox();
  void handle_cancels();
  void step();
  // Queues the step after `out` (overlap_decode) while the sampler's work for
  // `out` is in flight, when it is a step of decodes alone that the
  // scheduler will repeat: each sequence gets a placeholder token, which
  // output processing replaces. Never throws: a step it cannot queue is
  // left to the next schedule().
  std::optional<QueuedStep> queue_next_decode(const sched::SchedulerOutput& out);
  // Undoes queue_next_decode's placeholders (the step's KV writes are
  // overwritten when the scheduler runs those positions again).
  static void drop_queued(const sched::SchedulerOutput& out);
  // Fails one request (ERROR event) and frees its blocks.
  void fail_request(ActiveRequest* req, aph_status code, const std::string& message);
  void abort_request(ActiveRequest* req);
  void finish_choice(Choice* choice, const std::string& reason,
                     std::optional<std::string> stop_reason, std::string text);
  void emit_tokens(Choice* choice, std::string text, int32_t token, boost::json::array logprobs,
                   bool has_logprobs);
  void retire_finished();
  void update_gauges();
  const chat::ChatTemplate& chat_template_for(const std::string& source) const;

  EngineConfig config_;
  std::unique_ptr<model::ModelRunner> runner_;
  const text::Tokenizer& tokenizer_;
  int64_t max_model_len_ = 0;
  int32_t vocab_size_ = 0;        // logits columns
  int32_t token_vocab_size_ = 0;  // ids the tokenizer can turn into text
  std::vector<int32_t> eog_ids_;
  std::string served_name_;
  model::KvDtype kv_dtype_ = model::KvDtype::F32;
  int max_blocks_per_seq_ = 0;
  std::unique_ptr<sampling::SamplerChain> chain_;
  // Sampling for the rows of sequences that ended after their step was
  // queued: some valid parameters; the row's token is dropped.
  std::unique_ptr<sampling::RequestSampling> dropped_row_sampling_;
  std::unique_ptr<kv::BlockManager> blocks_;
  std::unique_ptr<sched::Scheduler> scheduler_;

  mutable std::mutex template_mu_;
  mutable std::map<std::string, std::unique_ptr<chat::ChatTemplate>> templates_;
  std::string default_template_;

  aph_engine_api api_{};

  std::mutex inbox_mu_;
  std::condition_variable inbox_cv_;
  std::vector<std::unique_ptr<ActiveRequest>> inbox_;
  std::atomic<int64_t> queued_{0};  // requests submitted and not yet running
  std::atomic<uint64_t> next_id_{1};
  bool stopping_ = false;
  std::thread thread_;
  StepPhases phases_;  // engine thread only

  // Engine thread only.
  std::vector<std::unique_ptr<ActiveRequest>> active_;
  std::optional<QueuedStep> queued_step_;

  mutable std::mutex stats_mu_;
  EngineStats stats_;
};

}  // namespace aph::engine
