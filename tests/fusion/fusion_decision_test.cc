// Tests for the typed decisions of fusion/: FusionDecision, UnfusedKind.
#include "fusion/fusion_decision.h"

#include <gtest/gtest.h>

#include "fusion/planner.h"

namespace stitch::fusion {
namespace {

TEST(FusionDecisionTest, AllowHasNoReasonAndForbidKeepsIt) {
  FusionDecision yes = FusionDecision::allow();
  EXPECT_TRUE(yes.can_fuse());
  FusionDecision no = FusionDecision::forbid("Conv: cuDNN library call");
  EXPECT_FALSE(no.can_fuse());
  EXPECT_EQ(no.reason(), "Conv: cuDNN library call");
  EXPECT_NE(yes, no);
}

TEST(FusionDecisionDeathTest, ForbidWithoutAReasonIsOurBug) {
  EXPECT_DEATH(FusionDecision::forbid(""), "a refused fusion needs a reason");
  EXPECT_DEATH((void)FusionDecision::allow().reason(), "an allowed fusion has no reason");
}

TEST(UnfusedKindTest, Names) {
  EXPECT_EQ(to_string(UnfusedKind::kLibraryCall), "library call");
  EXPECT_EQ(to_string(UnfusedKind::kKernel), "kernel");
  EXPECT_EQ(to_string(UnfusedKind::kNoKernel), "no kernel");
}

}  // namespace
}  // namespace stitch::fusion
