// The op-lowering table: lookups go through the op registry's schema (other domains
// and unregistered ops have no entry), and the per-op answers the scheduler and the
// emitters read (thread-only reductions, accumulator width, axes source, GEMM form,
// scalar operands, pass-through).
#include "emit/op_lowering.h"

#include <gtest/gtest.h>

#include <string>

namespace stitch::emit {
namespace {

// A graph holding one node of `op_type` in `domain` over f32[2,3] values.
struct OneNode {
  explicit OneNode(const std::string& op_type, const std::string& domain = "") {
    auto type = ir::TensorType::make(ir::DType::kFloat32, {2, 3});
    ir::ValueId x = graph.add_value("x", type);
    graph.add_graph_input(x);
    ir::ValueId y = graph.add_value("y", type);
    id = graph.add_node(op_type, {x}, {y}, domain, "n");
  }
  const ir::Node& node() const { return graph.node(id); }
  ir::Graph graph;
  ir::NodeId id = ir::kNoId;
};

TEST(OpLoweringTest, ElementwiseOpsHaveAnInlineBody) {
  for (const char* op_type :
       {"Relu", "Add", "Exp", "Cast", "Where", "Transpose", "Pad", "Conv", "MaxPool"}) {
    OneNode n(op_type);
    const OpLowering* lowering = find_op_lowering(n.node());
    ASSERT_NE(lowering, nullptr) << op_type;
    EXPECT_TRUE(static_cast<bool>(lowering->inline_body)) << op_type;
    EXPECT_FALSE(lowering->reduction.has_value()) << op_type;
  }
}

TEST(OpLoweringTest, NoEntryOutsideTheRegistryOrTheDefaultDomain) {
  EXPECT_EQ(find_op_lowering(OneNode("CumSum").node()), nullptr);  // registered, no CUDA
  EXPECT_EQ(find_op_lowering(OneNode("NotAnOp").node()), nullptr);
  EXPECT_EQ(find_op_lowering(OneNode("Relu", "com.example").node()), nullptr);
  EXPECT_NE(find_op_lowering(OneNode("Relu", "ai.onnx").node()), nullptr);
}

TEST(OpLoweringTest, ReductionAnswers) {
  EXPECT_TRUE(reduces_per_thread_only(OneNode("ArgMax").node()));
  EXPECT_TRUE(reduces_per_thread_only(OneNode("ReduceLogSumExp").node()));
  EXPECT_FALSE(reduces_per_thread_only(OneNode("ReduceSum").node()));
  EXPECT_FALSE(reduces_per_thread_only(OneNode("Softmax").node()));  // no entry
  // Float32 sums and products accumulate in float (no FP64), float64 ones in double.
  auto bytes = [](const OneNode& n) { return reduction_accumulator_bytes(n.graph, n.node()); };
  EXPECT_EQ(bytes(OneNode("ReduceMax")), 4);
  EXPECT_EQ(bytes(OneNode("ReduceMin")), 4);
  EXPECT_EQ(bytes(OneNode("ReduceMean")), 4);
  EXPECT_EQ(bytes(OneNode("ReduceProd")), 4);
  OneNode wide("ReduceSum");
  wide.graph.value(wide.node().inputs[0]).type.dtype = ir::DType::kFloat64;
  EXPECT_EQ(bytes(wide), 8);
  const ReductionLowering* l2 = find_reduction_lowering(OneNode("ReduceL2").node());
  ASSERT_NE(l2, nullptr);
  EXPECT_EQ(l2->combine, ReduceCombine::kSum);
  EXPECT_EQ(l2->pre, "v * v");
  EXPECT_EQ(l2->post, "sqrt");
  EXPECT_EQ(find_reduction_lowering(OneNode("Relu").node()), nullptr);
}

TEST(OpLoweringTest, GemmFormsAndOperandReads) {
  EXPECT_EQ(gemm_form(OneNode("MatMul").node()), GemmForm::kMatMul);
  EXPECT_EQ(gemm_form(OneNode("Gemm").node()), GemmForm::kGemm);
  EXPECT_FALSE(gemm_form(OneNode("Add").node()).has_value());
  EXPECT_TRUE(reads_later_operands_as_scalars(OneNode("Clip").node()));
  EXPECT_FALSE(reads_later_operands_as_scalars(OneNode("Add").node()));
  EXPECT_TRUE(find_op_lowering(OneNode("Dropout").node())->passes_through);
  EXPECT_FALSE(find_op_lowering(OneNode("Relu").node())->passes_through);
}

TEST(OpLoweringTest, CombineText) {
  EXPECT_EQ(combine_text(ReduceCombine::kSum, "a", "b", true), "a + b");
  EXPECT_EQ(combine_text(ReduceCombine::kProd, "a", "b", false), "a * b");
  EXPECT_EQ(combine_text(ReduceCombine::kMax, "a", "b", true), "(b > a || isnan(b)) ? b : a");
  EXPECT_EQ(combine_text(ReduceCombine::kMin, "a", "b", false), "(b < a) ? b : a");
}

}  // namespace
}  // namespace stitch::emit
