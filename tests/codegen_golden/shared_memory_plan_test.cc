// Unit tests of FS Algorithm 4 (emit/shared_memory_plan.h) with hand-computed offsets.
#include "emit/shared_memory_plan.h"

#include <gtest/gtest.h>

namespace stitch::emit {
namespace {

bool always(size_t, size_t) { return true; }
bool never(size_t, size_t) { return false; }

TEST(SharedMemoryPlan, HeaderExampleReusesDominatedDeadSlot) {
  // a dead before c and dominated by c: c takes a's slot, which grows to 8192 bytes.
  std::vector<SharedMemoryRequest> requests = {
      {"a", 0, 1, 4096}, {"b", 1, 2, 4096}, {"c", 2, 3, 8192}};
  SharedMemoryPlan plan = plan_shared_memory(
      requests, [](size_t later, size_t earlier) { return later == 2 && earlier == 0; }, 48 * 1024);
  ASSERT_EQ(plan.allocations.size(), 3u);
  EXPECT_EQ(plan.allocations[0].offset, 0);
  EXPECT_EQ(plan.allocations[1].offset, 8192);
  EXPECT_EQ(plan.allocations[2].offset, 0);
  EXPECT_EQ(plan.allocations[0].slot, plan.allocations[2].slot);
  EXPECT_EQ(plan.requested_bytes, 16384);
  EXPECT_EQ(plan.allocated_bytes, 12288);
  EXPECT_EQ(plan.fallback, "");
}

TEST(SharedMemoryPlan, NoReuseWithoutDominance) {
  std::vector<SharedMemoryRequest> requests = {{"a", 0, 0, 100}, {"b", 1, 1, 100}};
  SharedMemoryPlan plan = plan_shared_memory(requests, never, 48 * 1024);
  EXPECT_EQ(plan.allocations[0].offset, 0);
  EXPECT_EQ(plan.allocations[1].offset, 112);  // 100 rounded up to 16
  EXPECT_EQ(plan.allocated_bytes, 224);
  EXPECT_EQ(plan.requested_bytes, 224);
}

TEST(SharedMemoryPlan, NoReuseWhileStillRead) {
  // b is written at position 1 while a is still read at position 1: no in-place reuse.
  std::vector<SharedMemoryRequest> requests = {{"a", 0, 1, 256}, {"b", 1, 2, 256}};
  SharedMemoryPlan plan = plan_shared_memory(requests, always, 48 * 1024);
  EXPECT_NE(plan.allocations[0].slot, plan.allocations[1].slot);
  EXPECT_EQ(plan.allocated_bytes, 512);
}

TEST(SharedMemoryPlan, ChainReusesOneSlot) {
  std::vector<SharedMemoryRequest> requests = {
      {"a", 0, 1, 1024}, {"b", 2, 3, 1024}, {"c", 4, 5, 512}};
  SharedMemoryPlan plan = plan_shared_memory(requests, always, 48 * 1024);
  for (const SharedMemoryAllocation& allocation : plan.allocations) {
    EXPECT_EQ(allocation.offset, 0);
    EXPECT_TRUE(allocation.in_shared);
  }
  EXPECT_EQ(plan.allocated_bytes, 1024);
  EXPECT_EQ(plan.requested_bytes, 2560);
}

TEST(SharedMemoryPlan, OverLimitMovesLargestToGlobal) {
  // 30000 floats do not fit in 48 KiB: the big row buffer goes to global memory.
  std::vector<SharedMemoryRequest> requests = {{"big", 0, 2, 120000}, {"small", 1, 2, 4096}};
  SharedMemoryPlan plan = plan_shared_memory(requests, never, 48 * 1024);
  EXPECT_FALSE(plan.allocations[0].in_shared);
  EXPECT_TRUE(plan.allocations[1].in_shared);
  EXPECT_EQ(plan.allocations[1].offset, 0);
  EXPECT_EQ(plan.allocated_bytes, 4096);
  EXPECT_EQ(plan.requested_bytes, 124096);
  EXPECT_EQ(plan.fallback, "regional to global");
}

}  // namespace
}  // namespace stitch::emit
