// Tests of reduction_axes, the one reader of a reduction's axes: the attribute before
// the opset that made them an input (13 for ReduceSum, 18 for the others), the
// constant input after it, noop_with_empty_axes, ArgMax/ArgMin's axis, normalization,
// and the refusals with their messages; and that the op registry's classification
// reads the same axes.
#include "ir/core/reduction_axes.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "ir/core/attribute.h"
#include "ir/core/op_registry.h"

namespace stitch::ir {
namespace {

// One reduction `op` at `opset` of x: f32[8, 16, 32], with an axes input when `axes`
// is given (a constant unless `constant_axes` is false).
struct OneReduction {
  OneReduction(const std::string& op, int64_t opset,
               std::optional<std::vector<int64_t>> axes = std::nullopt, bool constant_axes = true) {
    ValueId x = graph.add_value("x", TensorType::make(DType::kFloat32, {8, 16, 32}));
    graph.add_graph_input(x);
    std::vector<ValueId> inputs = {x};
    if (axes) {
      const auto count = static_cast<int64_t>(axes->size());
      if (constant_axes) {
        inputs.push_back(graph.add_initializer("axes", Tensor::from_int64({count}, *axes)));
      } else {
        ValueId given = graph.add_value("axes", TensorType::make(DType::kInt64, {count}));
        graph.add_graph_input(given);
        inputs.push_back(given);
      }
    }
    ValueId y = graph.add_value("y", TensorType::make(DType::kFloat32, {}));
    node = graph.add_node(op, inputs, {y}, "", "r");
    graph.node(node).opset = opset;
  }
  Node& mutable_node() { return graph.node(node); }
  Result<std::vector<int64_t>> axes(bool* noop) const {
    return reduction_axes(graph, graph.node(node), noop);
  }
  Graph graph;
  NodeId node = kNoId;
};

TEST(ReductionAxesTest, TheOpsetWhereAxesBecameAnInput) {
  OneReduction sum("ReduceSum", 13);
  OneReduction mean("ReduceMean", 18);
  OneReduction arg("ArgMax", 13);
  EXPECT_EQ(reduction_axes_input_opset(sum.graph.node(sum.node)), 13);
  EXPECT_EQ(reduction_axes_input_opset(mean.graph.node(mean.node)), 18);
  EXPECT_EQ(reduction_axes_input_opset(arg.graph.node(arg.node)), 0);
}

TEST(ReductionAxesTest, AttributeBeforeTheOpset) {
  OneReduction mean("ReduceMean", 17);
  mean.mutable_node().set_attribute(Attribute::make_ints("axes", {-1, 1, 1}));
  bool noop = true;
  Result<std::vector<int64_t>> axes = mean.axes(&noop);
  ASSERT_TRUE(axes.is_ok()) << axes.status().message();
  EXPECT_EQ(*axes, (std::vector<int64_t>{1, 2}));  // normalized, sorted, unique
  EXPECT_FALSE(noop);
  // No attribute: every axis. noop_with_empty_axes does not exist before the input.
  OneReduction all("ReduceMax", 17);
  all.mutable_node().set_attribute(Attribute::make_int("noop_with_empty_axes", 1));
  axes = all.axes(&noop);
  ASSERT_TRUE(axes.is_ok());
  EXPECT_EQ(*axes, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_FALSE(noop);
}

TEST(ReductionAxesTest, ConstantInputFromTheOpset) {
  OneReduction sum("ReduceSum", 13, std::vector<int64_t>{-2});
  // The attribute is not read once the axes are an input.
  sum.mutable_node().set_attribute(Attribute::make_ints("axes", {0}));
  bool noop = true;
  Result<std::vector<int64_t>> axes = sum.axes(&noop);
  ASSERT_TRUE(axes.is_ok());
  EXPECT_EQ(*axes, (std::vector<int64_t>{1}));
  EXPECT_FALSE(noop);
  EXPECT_EQ(reduced_axes(sum.graph, sum.graph.node(sum.node), 3), (std::vector<int64_t>{1}));
  // ReduceSum at opset 12 reads the attribute.
  OneReduction old_sum("ReduceSum", 12);
  old_sum.mutable_node().set_attribute(Attribute::make_ints("axes", {0}));
  axes = old_sum.axes(&noop);
  ASSERT_TRUE(axes.is_ok());
  EXPECT_EQ(*axes, (std::vector<int64_t>{0}));
  // An empty axes input is every axis, or nothing with noop_with_empty_axes.
  OneReduction empty("ReduceMean", 18, std::vector<int64_t>{});
  axes = empty.axes(&noop);
  ASSERT_TRUE(axes.is_ok());
  EXPECT_EQ(*axes, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(classify_reduction(empty.graph, empty.graph.node(empty.node)), ReductionKind::kAll);
  empty.mutable_node().set_attribute(Attribute::make_int("noop_with_empty_axes", 1));
  axes = empty.axes(&noop);
  ASSERT_TRUE(axes.is_ok());
  EXPECT_TRUE(axes->empty());
  EXPECT_TRUE(noop);
  // The registry's classification reads the same: an Identity reduces nothing.
  EXPECT_EQ(reduced_axes(empty.graph, empty.graph.node(empty.node), 3), std::nullopt);
  EXPECT_EQ(classify_reduction(empty.graph, empty.graph.node(empty.node)), ReductionKind::kNone);
  // Omitted axes input with noop_with_empty_axes: also an Identity.
  OneReduction omitted("ReduceMax", 18);
  omitted.mutable_node().set_attribute(Attribute::make_int("noop_with_empty_axes", 1));
  axes = omitted.axes(&noop);
  ASSERT_TRUE(axes.is_ok());
  EXPECT_TRUE(noop);
}

TEST(ReductionAxesTest, ArgMaxReducesItsAxis) {
  OneReduction arg("ArgMin", 13);
  bool noop = true;
  Result<std::vector<int64_t>> axes = arg.axes(&noop);
  ASSERT_TRUE(axes.is_ok());
  EXPECT_EQ(*axes, (std::vector<int64_t>{0}));  // default axis 0
  arg.mutable_node().set_attribute(Attribute::make_int("axis", -1));
  axes = arg.axes(&noop);
  ASSERT_TRUE(axes.is_ok());
  EXPECT_EQ(*axes, (std::vector<int64_t>{2}));
  EXPECT_FALSE(noop);
  EXPECT_EQ(classify_reduction(arg.graph, arg.graph.node(arg.node)), ReductionKind::kRow);
}

TEST(ReductionAxesTest, Refusals) {
  bool noop = false;
  OneReduction computed("ReduceSum", 13, std::vector<int64_t>{1}, /*constant_axes=*/false);
  Result<std::vector<int64_t>> axes = computed.axes(&noop);
  ASSERT_FALSE(axes.is_ok());
  EXPECT_EQ(axes.status().message(),
            "node \"r\" (ReduceSum): the axes input is not a constant; the CUDA emitter needs "
            "constant axes (fold the axes computation)");
  EXPECT_EQ(reduced_axes(computed.graph, computed.graph.node(computed.node), 3), std::nullopt);
  OneReduction out_of_range("ReduceMean", 18, std::vector<int64_t>{3});
  axes = out_of_range.axes(&noop);
  ASSERT_FALSE(axes.is_ok());
  EXPECT_EQ(axes.status().message(),
            "node \"r\" (ReduceMean): axis out of range for rank 3; fix the axes");
  EXPECT_EQ(reduced_axes(out_of_range.graph, out_of_range.graph.node(out_of_range.node), 3),
            std::nullopt);
}

}  // namespace
}  // namespace stitch::ir
