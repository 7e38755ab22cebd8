// ir::stencil_of: the window facts of a Conv or a pool, including whether each tap
// reads a filter weight (the stencil charges read it instead of the op type).
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "ir/core/window.h"
#include "tests/ir/ir_test_util.h"

namespace stitch::ir {
namespace {

using test_util::node_named;

TEST(StencilTest, ConvTapsReadWeightsPoolTapsDoNot) {
  const Model model = test_util::parse_graph(
      "%x: f32[1,8,10,12], %w: f32[8,1,3,3]",
      "  %d: f32[1,8,10,12] = Conv(%x, %w) {name=\"dw\", group=8, kernel_shape=[3,3], "
      "pads=[1,1,1,1]}\n"
      "  %p: f32[1,8,5,6] = MaxPool(%d) {name=\"pool\", kernel_shape=[2,2], strides=[2,2]}\n",
      "%p");
  const std::optional<Stencil> conv =
      stencil_of(model.graph, model.graph.node(node_named(model.graph, "dw")));
  ASSERT_TRUE(conv.has_value());
  EXPECT_TRUE(conv->weighted);
  EXPECT_EQ(conv->taps, 9);
  EXPECT_EQ(conv->channels_per_group, 1);
  const std::optional<Stencil> pool =
      stencil_of(model.graph, model.graph.node(node_named(model.graph, "pool")));
  ASSERT_TRUE(pool.has_value());
  EXPECT_FALSE(pool->weighted);
  EXPECT_EQ(pool->taps, 4);
}

}  // namespace
}  // namespace stitch::ir
