// The lifetime-based memory plan (runtime_stub/memory_plan.h): hand-checked
// placements, the lower bound on chains, and validity on random lifetimes.
#include "runtime_stub/memory_plan.h"

#include <gtest/gtest.h>

#include <random>

namespace stitch::runtime {
namespace {

TEST(MemoryPlanTest, ChainReusesTheBufferTwoStepsBack) {
  // a(0) -> b(1) -> c(2) -> d(3): each tensor is read by the next step only, so at most
  // two are live at once and c can take a's bytes.
  std::vector<BufferRequest> requests = {{1024, 0, 1}, {1024, 1, 2}, {1024, 2, 3}, {1024, 3, 3}};
  MemoryPlan plan = plan_memory(requests);
  EXPECT_TRUE(memory_plan_is_valid(requests, plan));
  EXPECT_EQ(plan.naive_bytes, 4096);
  EXPECT_EQ(plan.lower_bound_bytes, 2048);
  EXPECT_EQ(plan.arena_bytes, 2048);
  EXPECT_EQ(plan.offsets[0], plan.offsets[2]);
  EXPECT_NE(plan.offsets[0], plan.offsets[1]);
}

TEST(MemoryPlanTest, SmallBufferFillsAGapBetweenLargeOnes) {
  // Two large tensors live together leave no room for a third live with both; a small
  // one live with only the first goes where the second is not yet.
  std::vector<BufferRequest> requests = {{4096, 0, 2}, {4096, 2, 3}, {512, 0, 1}};
  MemoryPlan plan = plan_memory(requests, 256);
  EXPECT_TRUE(memory_plan_is_valid(requests, plan));
  EXPECT_EQ(plan.arena_bytes, 8192);
  EXPECT_EQ(plan.offsets[2], 4096);  // shares bytes with the second large tensor
}

TEST(MemoryPlanTest, SizesAreAlignedAndEmptyBuffersTakeNoSpace) {
  std::vector<BufferRequest> requests = {{1, 0, 0}, {0, 0, 0}, {300, 0, 0}};
  MemoryPlan plan = plan_memory(requests, 256);
  EXPECT_TRUE(memory_plan_is_valid(requests, plan));
  EXPECT_EQ(plan.naive_bytes, 256 + 512);
  EXPECT_EQ(plan.arena_bytes, 256 + 512);
  for (int64_t offset : plan.offsets) EXPECT_EQ(offset % 256, 0);
}

TEST(MemoryPlanTest, ValidityCheckCatchesOverlap) {
  std::vector<BufferRequest> requests = {{512, 0, 1}, {512, 1, 2}};
  MemoryPlan overlapping{{0, 256}, 768, 1024, 1024};
  EXPECT_FALSE(memory_plan_is_valid(requests, overlapping));
  MemoryPlan too_small{{0, 512}, 768, 1024, 1024};
  EXPECT_FALSE(memory_plan_is_valid(requests, too_small));
  MemoryPlan disjoint{{0, 512}, 1024, 1024, 1024};
  EXPECT_TRUE(memory_plan_is_valid(requests, disjoint));
}

TEST(MemoryPlanTest, RandomLifetimesGiveValidPlansBetweenTheBounds) {
  std::mt19937 generator(7);
  for (int round = 0; round < 200; ++round) {
    int steps = 1 + static_cast<int>(generator() % 30);
    std::vector<BufferRequest> requests;
    for (int i = 0; i < 40; ++i) {
      int32_t first = static_cast<int32_t>(generator() % static_cast<unsigned>(steps));
      int32_t last = first + static_cast<int32_t>(generator() % 5);
      requests.push_back({static_cast<int64_t>(generator() % 100000), first, last});
    }
    MemoryPlan plan = plan_memory(requests);
    ASSERT_TRUE(memory_plan_is_valid(requests, plan)) << "round " << round;
    EXPECT_GE(plan.arena_bytes, plan.lower_bound_bytes);
    EXPECT_LE(plan.arena_bytes, plan.naive_bytes);
  }
}

}  // namespace
}  // namespace stitch::runtime
