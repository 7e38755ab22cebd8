// Tests of the rewritten model: groups as "stitchopt" nodes with local functions.
#include "emit/fused_model.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "ir/core/verifier.h"
#include "ir/text/text.h"

namespace stitch::emit {
namespace {

// Two identical Mul -> Add chains on different inputs, and a Relu after both.
constexpr const char* kTwoChains = R"(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "g" (%a: f32[4,8], %b: f32[4,8]) {
  %w: f32[8] = dense<f32[8]>[1, 2, 3, 4, 5, 6, 7, 8]
  %t1: f32[4,8] = Mul(%a, %w) {name="mul1"}
  %y1: f32[4,8] = Add(%t1, %a) {name="add1"}
  %t2: f32[4,8] = Mul(%b, %w) {name="mul2"}
  %y2: f32[4,8] = Add(%t2, %b) {name="add2"}
  %z: f32[4,8] = Relu(%y2) {name="relu"}
  return %y1, %z
}
)";

ir::Model parse(const char* text) {
  Result<ir::Model> model = ir::parse_model(text, "test.ir");
  EXPECT_TRUE(model.is_ok()) << model.status().message();
  return std::move(model).value();
}

ir::NodeId node_named(const ir::Graph& graph, const std::string& name) {
  for (ir::NodeId id : graph.node_ids()) {
    if (graph.node(id).name == name) return id;
  }
  ADD_FAILURE() << "no node " << name;
  return ir::kNoId;
}

TEST(FusedModelTest, GroupsBecomeStitchoptNodesAndIdenticalGroupsShareAFunction) {
  ir::Model model = parse(kTwoChains);
  const ir::Graph& graph = model.graph;
  std::vector<FusedGroup> groups = {
      {{node_named(graph, "mul1"), node_named(graph, "add1")},
       "fused_0",
       {ir::Attribute::make_string("kernel", "fused_0")}},
      {{node_named(graph, "mul2"), node_named(graph, "add2")},
       "fused_1",
       {ir::Attribute::make_string("kernel", "fused_1")}},
  };
  Result<FusedModel> fused = build_fused_model(model, groups);
  ASSERT_TRUE(fused.is_ok()) << fused.status().message();
  EXPECT_EQ(fused->distinct_kernels, 1);
  EXPECT_EQ(fused->kernel_names, (std::vector<std::string>{"fused_0", "fused_0"}));
  ASSERT_EQ(fused->model.functions.size(), 1u);
  EXPECT_EQ(fused->model.opset_of("stitchopt"), 1);
  ASSERT_TRUE(ir::verify(fused->model).is_ok()) << ir::verify(fused->model).message();

  const ir::Graph& out = fused->model.graph;
  EXPECT_EQ(out.num_nodes(), 3);  // two fused nodes and the Relu
  int fused_nodes = 0;
  for (ir::NodeId id : out.node_ids()) {
    const ir::Node& node = out.node(id);
    if (node.domain != "stitchopt") continue;
    ++fused_nodes;
    EXPECT_EQ(node.op_type, "fused_0");
    ASSERT_EQ(node.inputs.size(), 2u);  // the chain's input and the shared weight
    EXPECT_EQ(out.value(node.inputs[1]).name, "w");
    ASSERT_EQ(node.outputs.size(), 1u);
    EXPECT_EQ(node.origin.size(), 2u);
  }
  EXPECT_EQ(fused_nodes, 2);
  // Graph outputs keep their names and values.
  EXPECT_EQ(out.value(out.graph_outputs()[0]).name, "y1");
  EXPECT_EQ(out.value(out.graph_outputs()[1]).name, "z");

  onnx::FunctionProto function;
  ASSERT_TRUE(function.ParseFromString(fused->model.functions[0]));
  EXPECT_EQ(function.name(), "fused_0");
  EXPECT_EQ(function.domain(), "stitchopt");
  ASSERT_EQ(function.node_size(), 2);
  EXPECT_EQ(function.node(0).op_type(), "Mul");
  EXPECT_EQ(function.node(0).input(0), "x0");
  EXPECT_EQ(function.node(0).input(1), "x1");
  EXPECT_EQ(function.node(0).output(0), "t0");
  EXPECT_EQ(function.node(1).op_type(), "Add");
  EXPECT_EQ(function.node(1).output(0), "y0");
  ASSERT_EQ(function.opset_import_size(), 1);
  EXPECT_EQ(function.opset_import(0).version(), 17);
}

// The driver decides sharing once, emits one kernel per owner, then adds the
// kernel's attributes to every group that shares it before the rewrite.
TEST(FusedModelTest, SharingIsDecidedBeforeAttributesAreAdded) {
  ir::Model model = parse(kTwoChains);
  const ir::Graph& graph = model.graph;
  std::vector<FusedGroup> groups = {
      {{node_named(graph, "mul1"), node_named(graph, "add1")}, "fused_0", {}},
      {{node_named(graph, "mul2"), node_named(graph, "add2")}, "fused_1", {}},
  };
  Result<KernelSharing> sharing = share_kernels(model, groups);
  ASSERT_TRUE(sharing.is_ok()) << sharing.status().message();
  EXPECT_EQ(sharing->kernel_names, (std::vector<std::string>{"fused_0", "fused_0"}));
  EXPECT_EQ(sharing->owner, (std::vector<size_t>{0, 0}));
  EXPECT_EQ(sharing->distinct_kernels, 1);
  for (FusedGroup& group : groups) {
    group.attributes = {ir::Attribute::make_string("source", "kernels/fused_0.cu")};
  }
  Result<FusedModel> fused = build_fused_model(model, groups, *sharing);
  ASSERT_TRUE(fused.is_ok()) << fused.status().message();
  EXPECT_EQ(fused->kernel_names, sharing->kernel_names);
  ASSERT_EQ(fused->model.functions.size(), 1u);
  onnx::FunctionProto function;
  ASSERT_TRUE(function.ParseFromString(fused->model.functions[0]));
  ASSERT_EQ(function.attribute_size(), 1);
  EXPECT_EQ(function.attribute(0), "source");
  int with_source = 0;
  for (ir::NodeId id : fused->model.graph.node_ids()) {
    const ir::Node& node = fused->model.graph.node(id);
    if (node.domain == "stitchopt" && node.find_attribute("source") != nullptr) ++with_source;
  }
  EXPECT_EQ(with_source, 2);
}

TEST(FusedModelTest, DifferentShapesGetDifferentKernels) {
  ir::Model model = parse(R"(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "g" (%a: f32[4,8], %b: f32[2,8]) {
  %t1: f32[4,8] = Neg(%a) {name="n1"}
  %y1: f32[4,8] = Exp(%t1) {name="e1"}
  %t2: f32[2,8] = Neg(%b) {name="n2"}
  %y2: f32[2,8] = Exp(%t2) {name="e2"}
  return %y1, %y2
}
)");
  const ir::Graph& graph = model.graph;
  std::vector<FusedGroup> groups = {
      {{node_named(graph, "n1"), node_named(graph, "e1")}, "fused_0", {}},
      {{node_named(graph, "n2"), node_named(graph, "e2")}, "fused_1", {}},
  };
  Result<FusedModel> fused = build_fused_model(model, groups);
  ASSERT_TRUE(fused.is_ok()) << fused.status().message();
  EXPECT_EQ(fused->distinct_kernels, 2);
  EXPECT_EQ(fused->kernel_names, (std::vector<std::string>{"fused_0", "fused_1"}));
  EXPECT_EQ(fused->model.functions.size(), 2u);
}

TEST(FusedModelTest, AValueReadInsideAndOutsideIsAnOutput) {
  ir::Model model = parse(kTwoChains);
  const ir::Graph& graph = model.graph;
  // {add2, relu}: y2 is read only by relu, inside; z is a graph output.
  // {mul2}: t2 is read by add2 outside the group, so it is the group's output.
  std::vector<FusedGroup> groups = {
      {{node_named(graph, "add2"), node_named(graph, "relu")}, "fused_0", {}},
  };
  Result<FusedModel> fused = build_fused_model(model, groups);
  ASSERT_TRUE(fused.is_ok()) << fused.status().message();
  const ir::Graph& out = fused->model.graph;
  for (ir::NodeId id : out.node_ids()) {
    const ir::Node& node = out.node(id);
    if (node.domain != "stitchopt") continue;
    ASSERT_EQ(node.outputs.size(), 1u);
    EXPECT_EQ(out.value(node.outputs[0]).name, "z");
    ASSERT_EQ(node.inputs.size(), 2u);
    EXPECT_EQ(out.value(node.inputs[0]).name, "t2");
    EXPECT_EQ(out.value(node.inputs[1]).name, "b");
  }
  EXPECT_FALSE(out.find_value("y2").has_value());
}

TEST(FusedModelTest, KernelNamesAvoidFunctionsTheModelAlreadyHas) {
  ir::Model model = parse(kTwoChains);
  const ir::Graph& graph = model.graph;
  std::vector<FusedGroup> first = {
      {{node_named(graph, "mul1"), node_named(graph, "add1")}, "fused_0", {}}};
  Result<FusedModel> once = build_fused_model(model, first);
  ASSERT_TRUE(once.is_ok()) << once.status().message();
  // Fusing again in the rewritten model with the same kernel name.
  const ir::Graph& rewritten = once->model.graph;
  std::vector<FusedGroup> second = {
      {{node_named(rewritten, "mul2"), node_named(rewritten, "add2")}, "fused_0", {}}};
  Result<FusedModel> twice = build_fused_model(once->model, second);
  ASSERT_TRUE(twice.is_ok()) << twice.status().message();
  EXPECT_EQ(twice->kernel_names, (std::vector<std::string>{"fused_0_"}));
  ASSERT_EQ(twice->model.functions.size(), 2u);
  onnx::FunctionProto added;
  ASSERT_TRUE(added.ParseFromString(twice->model.functions[1]));
  EXPECT_EQ(added.name(), "fused_0_");
  EXPECT_EQ(twice->model.opset_of("stitchopt"), 1);
  size_t stitchopt_imports = 0;
  for (const ir::OpsetImport& opset : twice->model.opset_imports) {
    if (opset.domain == "stitchopt") ++stitchopt_imports;
  }
  EXPECT_EQ(stitchopt_imports, 1u);
}

}  // namespace
}  // namespace stitch::emit
