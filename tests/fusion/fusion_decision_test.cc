// Tests for the typed decisions of fusion/: FusionDecision, GroupCategory, UnfusedKind.
#include "fusion/fusion_decision.h"

#include <gtest/gtest.h>

#include "fusion/group_category.h"
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

// The report and the fused node's "category" attribute spell these; their bytes
// must not change.
TEST(GroupCategoryTest, NamesRoundTrip) {
  EXPECT_EQ(to_string(GroupCategory::kElementwise), "elementwise");
  EXPECT_EQ(to_string(GroupCategory::kReduction), "reduction");
  EXPECT_EQ(to_string(GroupCategory::kGemm), "gemm");
  EXPECT_EQ(to_string(GroupCategory::kLibrary), "library");
  for (GroupCategory category :
       {GroupCategory::kElementwise, GroupCategory::kReduction, GroupCategory::kGemm,
        GroupCategory::kLibrary, GroupCategory::kStencil}) {
    EXPECT_EQ(parse_group_category(to_string(category)), category);
  }
  EXPECT_EQ(parse_group_category("Library"), std::nullopt);
  EXPECT_EQ(parse_group_category(""), std::nullopt);
}

TEST(UnfusedKindTest, Names) {
  EXPECT_EQ(to_string(UnfusedKind::kLibraryCall), "library call");
  EXPECT_EQ(to_string(UnfusedKind::kKernel), "kernel");
  EXPECT_EQ(to_string(UnfusedKind::kNoKernel), "no kernel");
}

}  // namespace
}  // namespace stitch::fusion
