// cost_model::recompute_cost: the scheduler's recompute-or-materialize choice,
// priced with the shipped H100 profile (the header's example).
#include "cost_model/recompute_cost.h"

#include <gtest/gtest.h>

namespace stitch::cost_model {
namespace {

TEST(RecomputeCostTest, ExtraReadsAgainstABarrierAndARoundTrip) {
  Result<DeviceProfile> h100 = builtin_device_profile("h100");
  ASSERT_TRUE(h100.is_ok()) << h100.status().message();
  const RecomputeCost cost = recompute_cost(1e6, 2, 2, 4e6, *h100);
  // The header's example: 1.32 us to recompute, 2.79 us to materialize.
  EXPECT_NEAR(cost.recompute_us, 1.3202, 1e-4);
  EXPECT_NEAR(cost.materialize_us, 2.7903, 1e-4);
  EXPECT_TRUE(cost.recompute_is_cheaper());
  // Ten times the reads of the same expression: materializing wins.
  EXPECT_FALSE(recompute_cost(1e7, 2, 2, 4e6, *h100).recompute_is_cheaper());
}

// The leaf's bytes come from the profile's calibration block, not a constant here.
TEST(RecomputeCostTest, LeafBytesComeFromTheCalibration) {
  Result<DeviceProfile> h100 = builtin_device_profile("h100");
  ASSERT_TRUE(h100.is_ok()) << h100.status().message();
  DeviceProfile doubled = *h100;
  doubled.calibration.recomputed_leaf_bytes *= 2;
  const double plain = recompute_cost(1e6, 0, 3, 0, *h100).recompute_us;
  EXPECT_DOUBLE_EQ(recompute_cost(1e6, 0, 3, 0, doubled).recompute_us, 2 * plain);
}

}  // namespace
}  // namespace stitch::cost_model
