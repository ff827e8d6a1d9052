#include "core/engine/request_state.hpp"

#include <algorithm>
#include <cstring>

#include "core/common/error.hpp"

namespace aph::engine {

void RequestChannel::push(Event event) {
  {
    std::lock_guard lock(mu_);
    if (event.kind == APH_EVENT_TOKENS && !queue_.empty()) {
      Event& last = queue_.back();
      if (last.kind == APH_EVENT_TOKENS && last.choice == event.choice) {
        last.text += event.text;
        last.token_ids.insert(last.token_ids.end(), event.token_ids.begin(), event.token_ids.end());
        for (auto& entry : event.logprobs) last.logprobs.push_back(std::move(entry));
        last.has_logprobs = last.has_logprobs || event.has_logprobs;
        last.completion_tokens = event.completion_tokens;
        last.cached_prompt_tokens = event.cached_prompt_tokens;
        cv_.notify_all();
        return;
      }
    }
    queue_.push_back(std::move(event));
  }
  cv_.notify_all();
}

void RequestChannel::next(int32_t timeout_ms, aph_gen_event* out, aph_error* err) {
  std::unique_lock lock(mu_);
  const auto ready = [&] { return !queue_.empty(); };
  if (timeout_ms < 0) {
    cv_.wait(lock, ready);
  } else {
    cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), ready);
  }
  // Written through a local copy: a caller built against an older minor
  // passes a smaller struct and must not see fields it does not know.
  const uint32_t caller_size = out->size;
  aph_gen_event ev{};
  ev.size = caller_size;
  ev.kind = APH_EVENT_NONE;
  if (queue_.empty()) {
    std::memcpy(out, &ev, std::min<size_t>(caller_size, sizeof ev));
    return;
  }
  current_ = std::move(queue_.front());
  queue_.pop_front();
  lock.unlock();
  fill(&ev, err);
  std::memcpy(out, &ev, std::min<size_t>(caller_size, sizeof ev));
}

void RequestChannel::fill(aph_gen_event* out, aph_error* err) {
  current_logprobs_ =
      current_.has_logprobs ? boost::json::serialize(current_.logprobs) : std::string();
  out->kind = current_.kind;
  out->choice = current_.choice;
  out->text = current_.text.c_str();
  out->text_len = current_.text.size();
  out->token_ids = current_.token_ids.empty() ? nullptr : current_.token_ids.data();
  out->n_tokens = static_cast<uint32_t>(current_.token_ids.size());
  out->logprobs_json = current_.has_logprobs ? current_logprobs_.c_str() : nullptr;
  out->finish_reason = current_.finish_reason.empty() ? nullptr : current_.finish_reason.c_str();
  out->stop_reason = current_.stop_reason ? current_.stop_reason->c_str() : nullptr;
  out->prompt_tokens = current_.prompt_tokens;
  out->completion_tokens = current_.completion_tokens;
  out->cached_prompt_tokens = current_.cached_prompt_tokens;
  if (current_.kind == APH_EVENT_ERROR)
    write_error(err, current_.error_code, current_.error.c_str());
}

}  // namespace aph::engine
