// The channel between the engine thread and the thread that submitted a
// request: a queue of generation events, a cancel flag, and the buffers the
// last aph_gen_event points into (valid until the next next_event()).
#pragma once

#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "aphrodite/api.h"

namespace aph::engine {

struct Event {
  aph_event_kind kind = APH_EVENT_NONE;
  uint32_t choice = 0;
  std::string text;
  std::vector<int32_t> token_ids;
  boost::json::array logprobs;
  bool has_logprobs = false;
  std::string finish_reason;
  std::optional<std::string> stop_reason;
  uint64_t prompt_tokens = 0;
  uint64_t completion_tokens = 0;
  uint64_t cached_prompt_tokens = 0;
  aph_status error_code = APH_OK;
  std::string error;
};

class RequestChannel {
 public:
  // Engine thread. Consecutive token events of one choice merge, so a slow
  // reader gets fewer, larger events rather than an unbounded backlog of tiny ones.
  void push(Event event);
  // Submitting thread. Fills `out` (pointing into this channel's buffers) or
  // leaves kind NONE on timeout.
  void next(int32_t timeout_ms, aph_gen_event* out, aph_error* err);

  void request_cancel() { cancelled_.store(true); }
  bool cancel_requested() const { return cancelled_.load(); }

 private:
  void fill(aph_gen_event* out, aph_error* err);

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Event> queue_;
  Event current_;
  std::string current_logprobs_;
  std::atomic<bool> cancelled_{false};
};

}  // namespace aph::engine
