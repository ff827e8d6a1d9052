#include "core/common/thread_pool.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "core/common/env_flag.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace aph {

namespace {
// Set while this thread runs a chunk, so a nested parallel_for runs inline
// instead of waiting on the pool it occupies.
thread_local bool t_in_task = false;

// How long a thread spins before it sleeps: longer than the gap between two
// parallel calls of a decode step, short enough that an idle pool costs
// nothing measurable. APH_CPU_SPIN_US overrides it (0: sleep at once, for
// machines whose cores are shared with other work).
std::chrono::microseconds spin_time() {
  static const std::chrono::microseconds t(std::max(0L, env_int("APH_CPU_SPIN_US", 200)));
  return t;
}

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

// Spins until done() or kSpin has passed; true when done() held.
template <typename Done>
bool spin_until(Done&& done) {
  const auto deadline = std::chrono::steady_clock::now() + spin_time();
  for (int i = 0;; ++i) {
    if (done()) return true;
    cpu_relax();
    // Reading the clock costs more than a pause: look at it now and then.
    if ((i & 63) == 63 && std::chrono::steady_clock::now() > deadline) return done();
  }
}
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
    stop_.store(true);
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
    auto published = [&] { return stop_.load(std::memory_order_acquire) ||
                                  generation_.load(std::memory_order_acquire) != seen; };
    if (!spin_until(published)) {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, published);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = generation_.load(std::memory_order_acquire);
    run_chunks(index);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      // The caller may be asleep on done_: take the lock so the wake-up
      // cannot slip in between its check and its wait.
      std::lock_guard<std::mutex> lock(mu_);
      done_.notify_one();
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
    error_ = nullptr;
    pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);  // publishes the fields above
  }
  wake_.notify_all();
  run_chunks(0);
  auto finished = [&] { return pending_.load(std::memory_order_acquire) == 0; };
  if (!spin_until(finished)) {
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, finished);
  }
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = nullptr;
    error = error_;
  }
  if (error) std::rethrow_exception(error);
}

void ThreadPool::parallel_items(int64_t n, const std::function<void(int64_t)>& fn) {
  if (n <= 0) return;
  std::atomic<int64_t> next{0};
  // One chunk per thread; each takes items until none are left.
  parallel_for(std::min<int64_t>(n, size()), 1, [&](int64_t, int64_t) {
    for (int64_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) fn(i);
  });
}

}  // namespace aph
