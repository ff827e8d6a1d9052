// The CPU pool: every item runs once, exceptions come back to the caller and
// leave the pool usable, nested calls run inline, and a pool that went to
// sleep (idle longer than the spin) still wakes for the next call.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/common/thread_pool.hpp"

namespace aph {
namespace {

TEST(ThreadPool, ParallelForCoversTheRangeOnce) {
  ThreadPool pool(4);
  for (int round = 0; round < 200; ++round) {
    const int64_t n = 1 + round * 7;
    std::vector<std::atomic<int>> hits(n);
    pool.parallel_for(n, 3, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[i]++;
    });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1);
  }
}

TEST(ThreadPool, ParallelItemsRunsEveryItemOnce) {
  ThreadPool pool(4);
  for (int round = 0; round < 50; ++round) {
    std::vector<std::atomic<int>> hits(1000);
    pool.parallel_items(1000, [&](int64_t i) { hits[i]++; });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1);
  }
}

TEST(ThreadPool, RethrowsAndStaysUsable) {
  ThreadPool pool(3);
  EXPECT_THROW(pool.parallel_items(100,
                                   [](int64_t i) {
                                     if (i == 37) throw std::runtime_error("boom");
                                   }),
               std::runtime_error);
  std::atomic<int64_t> sum{0};
  pool.parallel_items(100, [&](int64_t i) { sum += i; });
  EXPECT_EQ(sum.load(), 4950);
}

TEST(ThreadPool, NestedCallsRunInline) {
  ThreadPool pool(4);
  std::atomic<int64_t> sum{0};
  pool.parallel_for(8, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      pool.parallel_for(10, 1, [&](int64_t bb, int64_t ee) {
        for (int64_t j = bb; j < ee; ++j) sum += j;
      });
    }
  });
  EXPECT_EQ(sum.load(), 8 * 45);
}

TEST(ThreadPool, WakesAfterSleeping) {
  ThreadPool pool(2);
  std::atomic<int> calls{0};
  for (int round = 0; round < 3; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // past the spin: workers block
    pool.parallel_for(2, 1, [&](int64_t b, int64_t e) { calls += static_cast<int>(e - b); });
  }
  EXPECT_EQ(calls.load(), 6);
}

}  // namespace
}  // namespace aph
