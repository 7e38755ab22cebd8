// Symbolic dims through shape inference, and which of them a model's shapes depend on
// (ir/shapes/symbolic_dims.h).
#include "ir/shapes/symbolic_dims.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ir/shapes/shape_inference.h"

namespace stitch::ir {
namespace {

ValueId add_input(Graph& graph, const std::string& name, std::vector<int64_t> dims) {
  ValueId id = graph.add_value(name, TensorType::make(DType::kFloat32, std::move(dims)));
  graph.add_graph_input(id);
  return id;
}

ValueId add_output_of(Graph& graph, const std::string& op, std::vector<ValueId> inputs,
                      const std::string& name) {
  ValueId out = graph.add_value(name, TensorType{DType::kUndefined, false, {}});
  graph.node(graph.add_node(op, std::move(inputs), {out}, "", name)).opset = 17;
  return out;
}

TEST(SymbolicDimsTest, ShapeRulesCarrySymbolsThroughOpsThatCopyDims) {
  Graph graph;
  graph.dim_symbols = {"batch", "seq"};
  ValueId x = add_input(graph, "x", {symbolic_dim(0), symbolic_dim(1), 32});
  ValueId r = add_output_of(graph, "Relu", {x}, "relu");
  ValueId t = add_output_of(graph, "Transpose", {r}, "transpose");
  graph.add_graph_output(t);
  ASSERT_TRUE(infer_shapes(graph, 17, {}).is_ok());
  EXPECT_EQ(graph.value(t).type.dims, (std::vector<int64_t>{32, symbolic_dim(1), symbolic_dim(0)}));
  EXPECT_FALSE(graph.value(t).type.is_static());
  EXPECT_EQ(to_string(graph.value(t).type), "f32[32,?,?]");
}

// ids [batch,seq] and mask [b,s] are added (batch = b, seq = s), and a [1,16,32]
// position table is added to the embeddings of ids: seq must be 16.
TEST(SymbolicDimsTest, EquatesBroadcastDimsAndFindsForcedValues) {
  Graph graph;
  graph.dim_symbols = {"batch", "seq", "b", "s"};
  ValueId ids = add_input(graph, "ids", {symbolic_dim(0), symbolic_dim(1), 32});
  ValueId mask = add_input(graph, "mask", {symbolic_dim(2), symbolic_dim(3), 1});
  std::vector<float> table(16 * 32, 0.5f);
  ValueId positions = graph.add_initializer("positions", Tensor::from_float({1, 16, 32}, table));
  ValueId masked = add_output_of(graph, "Add", {ids, mask}, "add_mask");
  ValueId placed = add_output_of(graph, "Add", {masked, positions}, "add_pos");
  graph.add_graph_output(placed);
  ASSERT_TRUE(infer_shapes(graph, 17, {}).is_ok());

  std::vector<SymbolicDim> dims = symbolic_dims(graph);
  ASSERT_EQ(dims.size(), 2u);
  EXPECT_EQ(dims[0].names, (std::vector<std::string>{"batch", "b"}));
  EXPECT_EQ(dims[0].uses, (std::vector<std::string>{"ids dim 0", "mask dim 0"}));
  EXPECT_FALSE(dims[0].value.has_value());
  EXPECT_EQ(dims[1].names, (std::vector<std::string>{"seq", "s"}));
  ASSERT_TRUE(dims[1].value.has_value());
  EXPECT_EQ(*dims[1].value, 16);
  EXPECT_EQ(dims[1].forced_by, "\"add_pos\" (Add)");
  EXPECT_EQ(explain_symbolic_dims(graph),
            "graph inputs have symbolic dims: ids [batch,seq,32], mask [b,s,1]; after shape "
            "propagation they are 2 dims: batch (= b; ids dim 0, mask dim 0) and seq (= s; ids "
            "dim 1, mask dim 1; \"add_pos\" (Add) requires 16); give them with --input-shape "
            "ids=1,16,32 --input-shape mask=1,16,1");
}

TEST(SymbolicDimsTest, MatMulContractionAndConflictingValues) {
  Graph graph;
  graph.dim_symbols = {"n", "k"};
  ValueId a = add_input(graph, "a", {symbolic_dim(0), symbolic_dim(1)});
  std::vector<float> w8(8 * 4, 1.0f);
  std::vector<float> w6(6 * 4, 1.0f);
  ValueId first = graph.add_initializer("w8", Tensor::from_float({8, 4}, w8));
  ValueId second = graph.add_initializer("w6", Tensor::from_float({6, 4}, w6));
  ValueId y1 = add_output_of(graph, "MatMul", {a, first}, "mm8");
  ValueId y2 = add_output_of(graph, "MatMul", {a, second}, "mm6");
  graph.add_graph_output(y1);
  graph.add_graph_output(y2);
  // Shape inference itself rejects nothing here: k is unknown to it.
  ASSERT_TRUE(infer_shapes(graph, 17, {}).is_ok());
  std::vector<SymbolicDim> dims = symbolic_dims(graph);
  ASSERT_EQ(dims.size(), 2u);
  EXPECT_FALSE(dims[0].value.has_value());
  EXPECT_EQ(dims[1].names, (std::vector<std::string>{"k"}));
  EXPECT_EQ(dims[1].conflict, "\"mm8\" (MatMul) requires 8 but \"mm6\" (MatMul) requires 6");
  EXPECT_NE(explain_symbolic_dims(graph).find("no value fits"), std::string::npos);
}

}  // namespace
}  // namespace stitch::ir
