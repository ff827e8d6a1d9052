// Generations addressable by (caller scope, genkey): /generate/check reads
// their text so far, /abort stops them, /last_logprobs reads the last one's
// logprobs. Finished jobs stay readable until their key is reused.
#pragma once

#include <boost/json.hpp>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace aph::kobold {

struct Job {
  std::mutex mutex;
  std::string text;              // the text so far (choice 0)
  boost::json::array logprobs;   // chat-style content entries
  bool finished = false;
  std::atomic<bool> abort_requested{false};
};

class JobRegistry {
 public:
  // Registers a new running job; replaces a finished one under the same key.
  std::shared_ptr<Job> start(const std::string& scope, const std::string& genkey);
  // The job under the key, or with an empty genkey the caller's latest job.
  std::shared_ptr<Job> find(const std::string& scope, const std::string& genkey) const;
  // Requests an abort; false when no job matched.
  bool abort(const std::string& scope, const std::string& genkey);

 private:
  static constexpr size_t kMaxJobs = 4096;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Job>> jobs_;
  std::map<std::string, std::string> latest_by_scope_;
  std::map<std::string, uint64_t> order_;
  uint64_t counter_ = 0;
};

}  // namespace aph::kobold
