// A small persistent pool for the CPU kernels: spawning threads per call would
// cost more than a decode step's attention. The caller's thread works too.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace aph::attention {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);  // total workers including the caller
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Runs fn(i) for every i in [0, n), items handed out dynamically; returns when
  // all are done. The first exception thrown by fn is rethrown here. Calls from
  // several threads are serialized.
  void parallel_for(int64_t n, const std::function<void(int64_t)>& fn);
  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // The process-wide pool (hardware concurrency threads), created on first use.
  static ThreadPool& shared();

 private:
  void worker_loop();
  void run_items();

  std::vector<std::thread> workers_;
  std::mutex call_mutex_;  // one parallel_for at a time
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(int64_t)>* fn_ = nullptr;
  int64_t n_ = 0;
  int64_t next_ = 0;
  int active_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

}  // namespace aph::attention
