// Tests for driver::compile: the whole pipeline in process, on models in text IR.
#include "driver/compile.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "artifact/fused_node_attributes.h"
#include "emit/report.h"
#include "ir/core/verifier.h"
#include "ir/text/text.h"

namespace stitch::driver {
namespace {

// Two identical Mul -> Add -> Relu layers on different inputs: two groups, one kernel.
constexpr const char* kTwoLayers = R"(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "g" (%a: f32[64,8], %b: f32[64,8]) {
  %w: f32[8] = dense<f32[8]>[0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5]
  %t1: f32[64,8] = Mul(%a, %w) {name="mul1"}
  %u1: f32[64,8] = Add(%t1, %a) {name="add1"}
  %y1: f32[64,8] = Relu(%u1) {name="relu1"}
  %t2: f32[64,8] = Mul(%b, %w) {name="mul2"}
  %u2: f32[64,8] = Add(%t2, %b) {name="add2"}
  %y2: f32[64,8] = Relu(%u2) {name="relu2"}
  return %y1, %y2
}
)";

ir::Model two_layers() {
  Result<ir::Model> model = ir::parse_model(kTwoLayers, "two_layers.ir");
  EXPECT_TRUE(model.is_ok()) << model.status().message();
  return std::move(model).value();
}

CompileOptions fusing_options() {
  CompileOptions options;
  options.model_path = "two_layers.onnx";
  options.profile = cost_model::builtin_device_profile("h100").value();
  options.planner.candidates.packing = false;  // keep the two layers apart
  return options;
}

TEST(DriverTest, IdenticalLayersShareOneKernelAndBecomeFusedNodes) {
  Result<CompiledModel> compiled = compile(two_layers(), fusing_options());
  ASSERT_TRUE(compiled.is_ok()) << compiled.status().message();
  ASSERT_NE(compiled->plan(), nullptr);
  const fusion::PlannerResult& plan = *compiled->plan();
  ASSERT_EQ(plan.groups.size(), 2u);
  EXPECT_EQ(plan.groups[0].nodes.size(), 3u);
  EXPECT_EQ(plan.groups[0].category, artifact::GroupCategory::kElementwise);

  // One distinct kernel, named after the first group and what it computes, shared
  // by both.
  ASSERT_EQ(compiled->kernels.size(), 1u);
  EXPECT_EQ(compiled->kernels[0].name, "stitch_k0_mul_add_relu");
  EXPECT_EQ(compiled->kernels[0].file, "stitch_k0_mul_add_relu.cu");
  EXPECT_NE(compiled->kernels[0].source.find("stitch_k0_mul_add_relu"), std::string::npos);
  EXPECT_EQ(compiled->report.plan->kernel_names,
            (std::vector<std::string>{"stitch_k0_mul_add_relu", "stitch_k0_mul_add_relu"}));
  EXPECT_EQ(compiled->report.plan->distinct_kernels, 1);
  // Its header names the other call site too (a profiler user sees both layers).
  EXPECT_NE(compiled->kernels[0].source.find(
                "// Also launched for 1 more call site (the same computation on other "
                "tensors):\n//   group 1: mul2 .. relu2 (3 nodes)\n// Template: "),
            std::string::npos)
      << compiled->kernels[0].source.substr(0, 600);

  // The rewritten model: two stitchopt nodes calling the one function, with the
  // attributes the runtime reads back.
  const ir::Model& rewritten = compiled->rewritten;
  ASSERT_TRUE(ir::verify(rewritten).is_ok()) << ir::verify(rewritten).message();
  EXPECT_EQ(rewritten.functions.size(), 1u);
  EXPECT_EQ(rewritten.graph.num_nodes(), 2);
  std::vector<std::vector<std::string>> fused_nodes;
  for (ir::NodeId id : rewritten.graph.node_ids()) {
    const ir::Node& node = rewritten.graph.node(id);
    EXPECT_EQ(node.domain, "stitchopt");
    EXPECT_EQ(node.op_type, "stitch_k0_mul_add_relu");
    Result<artifact::FusedNodeAttributes> attributes =
        artifact::FusedNodeAttributes::from_node(node);
    ASSERT_TRUE(attributes.is_ok()) << attributes.status().message();
    EXPECT_EQ(attributes->kernel, "stitch_k0_mul_add_relu");
    EXPECT_EQ(attributes->category, artifact::GroupCategory::kElementwise);
    ASSERT_TRUE(attributes->codegen.has_value());
    EXPECT_EQ(attributes->codegen->source, "kernels/stitch_k0_mul_add_relu.cu");
    EXPECT_EQ(attributes->codegen->grid, compiled->kernels[0].launch.grid);
    // Written once, read back the same.
    EXPECT_EQ(attributes->to_attributes().size(), node.attributes.size());
    fused_nodes.push_back(attributes->fused_nodes);
  }
  EXPECT_EQ(fused_nodes, (std::vector<std::vector<std::string>>{{"mul1", "add1", "relu1"},
                                                                {"mul2", "add2", "relu2"}}));
  bool kernels_metadata = false;
  for (const auto& [key, value] : rewritten.metadata_props) {
    if (key == "stitchopt.kernels") kernels_metadata = value == "kernels/kernels.json";
  }
  EXPECT_TRUE(kernels_metadata);

  // The simplified model keeps the original nodes; the report counts them.
  EXPECT_EQ(compiled->simplified.graph.num_nodes(), 6);
  EXPECT_EQ(compiled->report.kernels.original, 6);
  EXPECT_EQ(plan.kernels_fused, 2);
}

// Two Slice -> Relu layers that differ only in the Slice's constant starts and ends
// (a Conv between them keeps them in two groups): the code generator folds those
// values into the kernel, so the groups must not share one (a shared kernel read the
// first layer's rows for both).
TEST(DriverTest, GroupsThatDifferInFoldedConstantsGetTheirOwnKernels) {
  Result<ir::Model> model = ir::parse_model(R"(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "g" (%x: f32[1,1,8,16]) {
  %s0: i64[1] = dense<i64[1]>[0]
  %e0: i64[1] = dense<i64[1]>[4]
  %s1: i64[1] = dense<i64[1]>[4]
  %e1: i64[1] = dense<i64[1]>[8]
  %ax: i64[1] = dense<i64[1]>[2]
  %w: f32[1,1,1,1] = dense<f32[1,1,1,1]>[2]
  %a: f32[1,1,4,16] = Slice(%x, %s0, %e0, %ax) {name="slice0"}
  %y1: f32[1,1,4,16] = Relu(%a) {name="relu0"}
  %c: f32[1,1,8,16] = Conv(%y1, %w) {name="conv", pads=[2,0,2,0]}
  %b: f32[1,1,4,16] = Slice(%c, %s1, %e1, %ax) {name="slice1"}
  %y2: f32[1,1,4,16] = Relu(%b) {name="relu1"}
  return %y1, %y2
}
)",
                                            "slices.ir");
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  Result<CompiledModel> compiled = compile(*model, fusing_options());
  ASSERT_TRUE(compiled.is_ok()) << compiled.status().message();
  ASSERT_NE(compiled->plan(), nullptr);
  ASSERT_EQ(compiled->plan()->groups.size(), 2u);
  ASSERT_EQ(compiled->kernels.size(), 2u);
  EXPECT_EQ(compiled->report.plan->distinct_kernels, 2);
  // The second layer's kernel reads rows 4..7 of the Conv's output.
  EXPECT_NE(compiled->kernels[1].source.find("64 + i"), std::string::npos)
      << compiled->kernels[1].source;
}

// Unfused, the two layers' identical ops launch one kernel each kind (as identical
// groups do): three kernels for six nodes, the second layer's nodes listed in
// shared_by with the values they write, and the report shows the shared code for both.
TEST(DriverTest, IdenticalUnfusedNodesShareOneSingleOpKernel) {
  CompileOptions options = fusing_options();
  options.planner.candidates.substitution = false;
  options.planner.candidates.exploratory = false;
  options.planner.candidates.epilogue = false;
  Result<CompiledModel> compiled = compile(two_layers(), options);
  ASSERT_TRUE(compiled.is_ok()) << compiled.status().message();
  ASSERT_NE(compiled->plan(), nullptr);
  ASSERT_TRUE(compiled->plan()->groups.empty());
  ASSERT_EQ(compiled->kernels.size(), 3u);
  std::vector<std::string> shared;
  for (const emit::EmittedKernel& kernel : compiled->kernels) {
    ASSERT_EQ(kernel.fused_nodes.size(), 1u);
    ASSERT_EQ(kernel.shared_by.size(), 1u) << kernel.name;
    shared.push_back(kernel.shared_by[0].node);
  }
  EXPECT_EQ(shared, (std::vector<std::string>{"mul2", "add2", "relu2"}));
  EXPECT_NE(compiled->kernels[0].source.find("// Also launched for 1 more call site"),
            std::string::npos);
  EXPECT_EQ(compiled->kernels[2].shared_by[0].outputs, std::vector<std::string>{"y2"});
  const emit::ReportPlan& plan = *compiled->report.plan;
  int with_code = 0;
  // One record per kernel, whichever node launches it: a copy per launch site grew
  // with the sites listed so far (a 20k-node chain left unfused took 10.5 GB).
  std::map<std::string, const emit::EmittedKernel*> record_of;
  for (const std::optional<emit::ReportCodegen>& codegen : plan.unfused_codegen) {
    if (!codegen) continue;
    ++with_code;
    EXPECT_EQ(codegen->kernel->name.rfind("stitch_s", 0), 0u);
    const emit::EmittedKernel* first =
        record_of.emplace(codegen->kernel->name, codegen->kernel.get()).first->second;
    EXPECT_EQ(first, codegen->kernel.get()) << codegen->kernel->name;
  }
  EXPECT_EQ(with_code, 6);
  EXPECT_EQ(record_of.size(), 3u);
}

// kernels.original counts what a GPU runtime launches: an exporter's shape arithmetic
// (Shape -> Gather -> Div -> Unsqueeze -> Concat on int64 scalars) is host work,
// counted apart in kernels.host_shape_ops; simplification folds it away.
TEST(DriverTest, ShapeArithmeticIsCountedAsHostShapeOps) {
  Result<ir::Model> model = ir::parse_model(R"(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "g" (%x: f32[4,8]) {
  %zero: i64[] = dense<i64[]>[0]
  %two: i64[] = dense<i64[]>[2]
  %axes: i64[1] = dense<i64[1]>[0]
  %rest: i64[1] = dense<i64[1]>[-1]
  %s: i64[2] = Shape(%x) {name="shape"}
  %b: i64[] = Gather(%s, %zero) {name="gather", axis=0}
  %h: i64[] = Div(%b, %two) {name="div"}
  %u: i64[1] = Unsqueeze(%h, %axes) {name="unsqueeze"}
  %t: i64[2] = Concat(%u, %rest) {name="concat", axis=0}
  %e: f32[4,8] = Exp(%x) {name="exp"}
  %r: f32[2,16] = Reshape(%e, %t) {name="reshape"}
  %y: f32[2,16] = Relu(%r) {name="relu"}
  return %y
}
)",
                                            "shapes.ir");
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  EXPECT_TRUE(emit::is_host_shape_op(model->graph, model->graph.node(model->graph.node_ids()[0])));
  Result<CompiledModel> compiled = compile(*model, fusing_options());
  ASSERT_TRUE(compiled.is_ok()) << compiled.status().message();
  // Exp and Relu launch work; Shape, Gather, Div and Concat are host shape ops
  // (Unsqueeze and Reshape are views).
  EXPECT_EQ(compiled->report.kernels.original, 2);
  EXPECT_EQ(compiled->report.kernels.host_shape_ops, 4);
  EXPECT_EQ(compiled->report.kernels.after_simplify, 2);
  ASSERT_TRUE(compiled->report.simplify.has_value());
  EXPECT_EQ(compiled->report.simplify->unknown_types, 0);
}

TEST(DriverTest, PhasesAreTimedAndObservedInOrder) {
  std::vector<std::string> observed;
  CompileObserver observer;
  observer.phase_done = [&](const emit::PhaseTiming& phase) { observed.push_back(phase.name); };
  int simplified = 0;
  observer.simplified = [&](const ir::SimplifyStatistics&) { ++simplified; };
  Result<CompiledModel> compiled = compile(two_layers(), fusing_options(), observer);
  ASSERT_TRUE(compiled.is_ok()) << compiled.status().message();
  const std::vector<std::string> expected = {"simplify", "plan", "codegen", "rewrite"};
  EXPECT_EQ(observed, expected);
  std::vector<std::string> recorded;
  for (const emit::PhaseTiming& phase : compiled->report.phases) recorded.push_back(phase.name);
  EXPECT_EQ(recorded, expected);
  EXPECT_EQ(simplified, 1);
}

TEST(DriverTest, WithoutCodegenTheModelIsStillRewritten) {
  CompileOptions options = fusing_options();
  options.codegen = false;
  Result<CompiledModel> compiled = compile(two_layers(), options);
  ASSERT_TRUE(compiled.is_ok()) << compiled.status().message();
  EXPECT_TRUE(compiled->kernels.empty());
  EXPECT_EQ(compiled->rewritten.graph.num_nodes(), 2);
  for (ir::NodeId id : compiled->rewritten.graph.node_ids()) {
    Result<artifact::FusedNodeAttributes> attributes =
        artifact::FusedNodeAttributes::from_node(compiled->rewritten.graph.node(id));
    ASSERT_TRUE(attributes.is_ok()) << attributes.status().message();
    EXPECT_FALSE(attributes->codegen.has_value());
  }
  for (const auto& entry : compiled->rewritten.metadata_props) {
    EXPECT_NE(entry.first, "stitchopt.kernels");
  }
}

TEST(DriverTest, WithoutAProfileNothingIsFused) {
  CompileOptions options;
  options.model_path = "two_layers.onnx";
  Result<CompiledModel> compiled = compile(two_layers(), options);
  ASSERT_TRUE(compiled.is_ok()) << compiled.status().message();
  EXPECT_EQ(compiled->plan(), nullptr);
  EXPECT_TRUE(compiled->kernels.empty());
  EXPECT_EQ(compiled->rewritten.graph.num_nodes(), 6);
  EXPECT_TRUE(compiled->rewritten.functions.empty());
}

}  // namespace
}  // namespace stitch::driver
