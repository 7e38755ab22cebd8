#include "ir/core/windowed_reachability.h"

#include <gtest/gtest.h>

#include <vector>

namespace stitch::ir {
namespace {

using Answer = WindowedReachability::Answer;

// A chain 0 -> 1 -> ... -> 199 and a node 200 that nothing reaches, with memory for a
// window of 64 positions (200 rows of one word each: 1600 bytes).
WindowedReachability chain() {
  std::vector<std::vector<int32_t>> successors(201);
  for (int32_t p = 0; p + 1 < 200; ++p) successors[static_cast<size_t>(p)] = {p + 1};
  return WindowedReachability(successors, 201 * 8);
}

TEST(WindowedReachabilityTest, ExactInsideTheWindowUnknownBeyondIt) {
  WindowedReachability reachability = chain();
  EXPECT_EQ(reachability.window(), 64);
  EXPECT_EQ(reachability.reaches(0, 1), Answer::kYes);
  EXPECT_EQ(reachability.reaches(10, 74), Answer::kYes);  // 64 positions ahead
  EXPECT_EQ(reachability.reaches(10, 75), Answer::kUnknown);
  EXPECT_EQ(reachability.reaches(5, 5), Answer::kNo);
  EXPECT_EQ(reachability.reaches(6, 5), Answer::kNo);
  EXPECT_EQ(reachability.reaches(150, 200), Answer::kNo);  // within the window, no path
}

TEST(WindowedReachabilityTest, ReachesAnyOfAMask) {
  WindowedReachability reachability = chain();
  // Mask bits stand for positions 100.. ; bit 30 is position 130.
  std::vector<uint64_t> mask(1, uint64_t{1} << 30);
  EXPECT_TRUE(reachability.reaches_any(90, 100, mask));
  EXPECT_FALSE(reachability.reaches_any(130, 100, mask));  // not itself
  EXPECT_FALSE(reachability.reaches_any(131, 100, mask));  // nothing goes back
}

}  // namespace
}  // namespace stitch::ir
