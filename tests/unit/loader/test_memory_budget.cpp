#include <gtest/gtest.h>

#include "server/memory_budget.hpp"

namespace aph::server {
namespace {

TEST(MemoryBudget, HostAllocationsCountAgainstTheBudget) {
  MemoryBudget budget(1000, 500);
  aph_error err{};
  void* a = budget.device_alloc(APH_DEVICE_CPU, 600, &err);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(budget.device_used(APH_DEVICE_CPU), 600u);
  void* b = budget.device_alloc(APH_DEVICE_CPU, 600, &err);
  EXPECT_EQ(b, nullptr);
  EXPECT_EQ(err.code, APH_ERR_OUT_OF_MEMORY);
  EXPECT_NE(std::string(err.message).find("exceed the plugin memory budget"), std::string::npos);
  budget.device_free(APH_DEVICE_CPU, a);
  EXPECT_EQ(budget.device_used(APH_DEVICE_CPU), 0u);
  b = budget.device_alloc(APH_DEVICE_CPU, 1000, &err);
  EXPECT_NE(b, nullptr);
  budget.device_free(APH_DEVICE_CPU, b);
}

TEST(MemoryBudget, PinnedHasItsOwnBudget) {
  MemoryBudget budget(0, 100);
  aph_error err{};
  void* p = budget.pinned_alloc(100, &err);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(budget.pinned_alloc(1, &err), nullptr);
  EXPECT_EQ(budget.pinned_used(), 100u);
  budget.pinned_free(p);
  EXPECT_EQ(budget.pinned_used(), 0u);
}

TEST(MemoryBudget, ForeignAndDoubleFreesAreIgnored) {
  MemoryBudget budget;
  aph_error err{};
  int on_stack = 0;
  budget.device_free(APH_DEVICE_CPU, &on_stack);  // not ours: must not be freed
  void* p = budget.device_alloc(APH_DEVICE_CPU, 16, &err);
  budget.device_free(APH_DEVICE_CPU, p);
  budget.device_free(APH_DEVICE_CPU, p);
  EXPECT_EQ(budget.device_used(APH_DEVICE_CPU), 0u);
}

TEST(MemoryBudget, BadDeviceIsAnError) {
  MemoryBudget budget;
  aph_error err{};
  EXPECT_EQ(budget.device_alloc(-7, 16, &err), nullptr);
  EXPECT_EQ(err.code, APH_ERR_INVALID_ARGUMENT);
}

TEST(MemoryBudget, LeakedBlocksAreFreedWithTheBudget) {
  auto budget = std::make_unique<MemoryBudget>();
  aph_error err{};
  ASSERT_NE(budget->device_alloc(APH_DEVICE_CPU, 64, &err), nullptr);
  budget.reset();  // LeakSanitizer would report the block otherwise
}

}  // namespace
}  // namespace aph::server
