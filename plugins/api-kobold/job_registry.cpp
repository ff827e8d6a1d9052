#include "job_registry.hpp"

namespace aph::kobold {
namespace {
std::string key_of(const std::string& scope, const std::string& genkey) {
  return scope + '\x1f' + genkey;
}
}  // namespace

std::shared_ptr<Job> JobRegistry::start(const std::string& scope, const std::string& genkey) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto job = std::make_shared<Job>();
  std::string key = key_of(scope, genkey);
  jobs_[key] = job;
  order_[key] = ++counter_;
  latest_by_scope_[scope] = key;
  // Bound memory: drop the oldest finished jobs.
  while (jobs_.size() > kMaxJobs) {
    auto oldest = order_.end();
    for (auto it = order_.begin(); it != order_.end(); ++it) {
      auto j = jobs_.find(it->first);
      bool finished = j != jobs_.end() && j->second->finished;
      if (finished && (oldest == order_.end() || it->second < oldest->second)) oldest = it;
    }
    if (oldest == order_.end()) break;
    jobs_.erase(oldest->first);
    order_.erase(oldest);
  }
  return job;
}

std::shared_ptr<Job> JobRegistry::find(const std::string& scope, const std::string& genkey) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string key;
  if (genkey.empty()) {
    auto latest = latest_by_scope_.find(scope);
    if (latest == latest_by_scope_.end()) return nullptr;
    key = latest->second;
  } else {
    key = key_of(scope, genkey);
  }
  auto it = jobs_.find(key);
  return it == jobs_.end() ? nullptr : it->second;
}

bool JobRegistry::abort(const std::string& scope, const std::string& genkey) {
  std::shared_ptr<Job> job = find(scope, genkey);
  if (!job) return false;
  job->abort_requested = true;
  return true;
}

}  // namespace aph::kobold
