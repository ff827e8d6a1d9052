// A small fixed pool of worker threads for CPU kernels: core's ops, the CPU
// attention and, through the host services' parallel_for, plugins (which start
// no threads of their own). Calls from several threads are serialized; a call
// from inside a task runs inline. The calling thread takes a share of the
// work too, so a pool of n threads keeps n cores busy.
//
// A decode step makes hundreds of short parallel calls, so waking a sleeping
// worker (a futex round trip, tens of microseconds in a VM) would cost more
// than the work. Workers and the caller therefore spin for a short while
// before they block; an idle pool sleeps.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace aph {

class ThreadPool {
 public:
  // threads <= 0: one per hardware core.
  explicit ThreadPool(int threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }
  // The process-wide pool, one thread per core, created on first use.
  static ThreadPool& shared();
  // Splits [0, n) into contiguous chunks of at least `grain` items and runs
  // fn(begin, end) on them; returns when all are done. The first exception
  // thrown by fn is rethrown here.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);
  // Runs fn(i) for every i in [0, n), handing items out one at a time: for
  // items of uneven cost (attention over sequences of different lengths).
  void parallel_items(int64_t n, const std::function<void(int64_t)>& fn);

 private:
  void worker_loop(int index);
  void run_chunks(int slot);

  std::vector<std::thread> workers_;
  std::mutex call_mu_;  // one parallel_for at a time
  std::mutex mu_;       // guards the sleeping side: wake_, done_, error_
  std::condition_variable wake_, done_;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t n_ = 0, chunk_ = 0, chunks_ = 0;
  std::atomic<uint64_t> generation_{0};  // a new job is published by bumping it
  std::atomic<int> pending_{0};          // workers still on the current job
  std::atomic<bool> stop_{false};
  std::exception_ptr error_;
};

// Runs fn over [0, n) on the pool, or inline when pool is null.
inline void parallel_for(ThreadPool* pool, int64_t n, int64_t grain,
                         const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (pool == nullptr || n <= grain) {
    fn(0, n);
    return;
  }
  pool->parallel_for(n, grain, fn);
}

}  // namespace aph
