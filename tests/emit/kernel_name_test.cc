// Tests for emit/kernel_name: readable kernel names from the nodes' scopes and ops.
#include "emit/kernel_name.h"

#include <gtest/gtest.h>

#include "ir/text/text.h"

namespace stitch::emit {
namespace {

ir::Model parse(const char* text) {
  Result<ir::Model> model = ir::parse_model(text, "test.ir");
  EXPECT_TRUE(model.is_ok()) << model.status().message();
  return std::move(model).value();
}

std::vector<ir::NodeId> nodes_named(const ir::Model& model, const std::vector<std::string>& names) {
  std::vector<ir::NodeId> nodes;
  for (const std::string& name : names) {
    for (ir::NodeId id : model.graph.node_ids()) {
      if (model.graph.node(id).name == name) nodes.push_back(id);
    }
  }
  EXPECT_EQ(nodes.size(), names.size());
  return nodes;
}

// Two layers' decomposed LayerNorms and GELUs named by module path, as PyTorch
// exports them.
constexpr const char* kLayers = R"ir(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "g" (%x: f32[4,8], %z: f32[4,8]) {
  %m: f32[4,1] = ReduceMean(%x) {name="/encoder/layer.0/output/LayerNorm/ReduceMean", axes=[-1]}
  %d: f32[4,8] = Sub(%x, %m) {name="/encoder/layer.0/output/LayerNorm/Sub"}
  %q: f32[4,8] = Mul(%d, %d) {name="/encoder/layer.0/output/LayerNorm/Mul"}
  %v: f32[4,1] = ReduceMean(%q) {name="/encoder/layer.0/output/LayerNorm/ReduceMean_1", axes=[-1]}
  %s: f32[4,1] = Sqrt(%v) {name="/encoder/layer.0/output/LayerNorm/Sqrt"}
  %y: f32[4,8] = Div(%d, %s) {name="/encoder/layer.0/output/LayerNorm/Div"}
  %e: f32[4,8] = Erf(%y) {name="/encoder/layer.1/intermediate/act/Erf"}
  %g: f32[4,8] = Mul(%e, %z) {name="/encoder/layer.1/intermediate/act/Mul"}
  %w: f32[4,8] = Erf(%z) {name="/encoder/layer.2/intermediate/act/Erf"}
  %h: f32[4,8] = Mul(%w, %z) {name="/encoder/layer.2/intermediate/act/Mul"}
  %a: f32[4,8] = Add(%g, %h) {name="add\n\"; system(\"rm -rf ~\")"}
  return %y, %a
}
)ir";

TEST(KernelNameTest, NamesThePatternAndTheScopeItsNodesShare) {
  ir::Model model = parse(kLayers);
  const ir::Graph& graph = model.graph;
  const std::vector<ir::NodeId> layernorm = nodes_named(
      model,
      {"/encoder/layer.0/output/LayerNorm/ReduceMean", "/encoder/layer.0/output/LayerNorm/Sub",
       "/encoder/layer.0/output/LayerNorm/Mul", "/encoder/layer.0/output/LayerNorm/ReduceMean_1",
       "/encoder/layer.0/output/LayerNorm/Sqrt", "/encoder/layer.0/output/LayerNorm/Div"});
  // The last three parts of the shared path, then what it computes; the module named
  // after the pattern is said once.
  EXPECT_EQ(kernel_description(graph, {layernorm}), "layer_0_output_layernorm");
  const std::vector<ir::NodeId> gelu1 = nodes_named(
      model, {"/encoder/layer.1/intermediate/act/Erf", "/encoder/layer.1/intermediate/act/Mul"});
  const std::vector<ir::NodeId> gelu2 = nodes_named(
      model, {"/encoder/layer.2/intermediate/act/Erf", "/encoder/layer.2/intermediate/act/Mul"});
  EXPECT_EQ(kernel_description(graph, {gelu1}), "layer_1_intermediate_act_gelu");
  // A kernel launched by both layers is named after the scope they share.
  EXPECT_EQ(kernel_description(graph, {gelu1, gelu2}), "encoder_gelu");
}

TEST(KernelNameTest, ModelNamesNeverReachTheIdentifierBeyondLettersAndDigits) {
  ir::Model model = parse(kLayers);
  const std::vector<ir::NodeId> add = nodes_named(model, {"add\n\"; system(\"rm -rf ~\")"});
  // No path: no scope; the op type alone.
  EXPECT_EQ(kernel_description(model.graph, {add}), "add");
  ir::Model hostile = parse(R"(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "g" (%x: f32[4]) {
  %y: f32[4] = Relu(%x) {name="/a\"b*/{}/$(x)//..//Ω/very_long_module_name_that_goes_on_and_on_and_on/r"}
  return %y
}
)");
  const std::string name =
      kernel_description(hostile.graph, {std::vector<ir::NodeId>{hostile.graph.node_ids()[0]}});
  EXPECT_LE(name.size(), kMaxDescription);
  for (char c : name) {
    EXPECT_TRUE((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_') << name;
  }
  EXPECT_EQ(name.find("__"), std::string::npos) << name;
  EXPECT_EQ(name.substr(name.size() - 4), "relu") << name;
  EXPECT_EQ(kernel_description(hostile.graph, {}), "kernel");
}

}  // namespace
}  // namespace stitch::emit
