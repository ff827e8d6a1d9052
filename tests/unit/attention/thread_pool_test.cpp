#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "core/attention/thread_pool.hpp"

namespace aph::attention {
namespace {

TEST(ThreadPool, RunsEveryItemOnce) {
  ThreadPool pool(4);
  for (int round = 0; round < 50; ++round) {
    std::vector<std::atomic<int>> hits(1000);
    pool.parallel_for(1000, [&](int64_t i) { hits[i]++; });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1);
  }
}

TEST(ThreadPool, RethrowsAndStaysUsable) {
  ThreadPool pool(3);
  EXPECT_THROW(pool.parallel_for(100, [](int64_t i) {
    if (i == 37) throw std::runtime_error("boom");
  }), std::runtime_error);
  std::atomic<int64_t> sum{0};
  pool.parallel_for(100, [&](int64_t i) { sum += i; });
  EXPECT_EQ(sum.load(), 4950);
}

}  // namespace
}  // namespace aph::attention
