#include "core/common/thread_pool.hpp"

#include <algorithm>

namespace aph {

namespace {
// Set while this thread runs a chunk, so a nested parallel_for runs inline
// instead of waiting on the pool it occupies.
thread_local bool t_in_task = false;
}  // namespace

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool& ThreadPool::shared() {
  static ThreadPool pool(0);
  return pool;
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

// Chunk i of the current job goes to thread slot i % size(): a static split
// keeps each core on the same rows of a weight matrix from call to call.
void ThreadPool::run_chunks(int slot) {
  for (int64_t c = slot; c < chunks_; c += size()) {
    int64_t begin = c * chunk_;
    int64_t end = std::min(n_, begin + chunk_);
    try {
      t_in_task = true;
      (*job_)(begin, end);
      t_in_task = false;
    } catch (...) {
      t_in_task = false;
      std::lock_guard<std::mutex> lock(mu_);
      if (!error_) error_ = std::current_exception();
    }
  }
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    run_chunks(index);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) done_.notify_one();
    }
  }
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  int64_t chunks = std::min<int64_t>(size(), (n + grain - 1) / grain);
  if (chunks <= 1 || workers_.empty() || t_in_task) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> serialized(call_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &fn;
    n_ = n;
    chunks_ = chunks;
    chunk_ = (n + chunks - 1) / chunks;
    pending_ = static_cast<int>(workers_.size());
    error_ = nullptr;
    ++generation_;
  }
  wake_.notify_all();
  run_chunks(0);
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [&] { return pending_ == 0; });
    job_ = nullptr;
    error = error_;
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace aph
