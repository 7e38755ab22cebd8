// Tests of gemm_shape: MatMul's numpy rules (rank 1, broadcast batch dims), Gemm's
// transposes, and the refusals with their reasons.
#include "ir/core/gemm_shape.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "ir/core/attribute.h"

namespace stitch::ir {
namespace {

// One node `op` reading two f32 inputs of dims `a` and `b` and writing `out`.
struct OneNode {
  OneNode(const std::string& op, const std::vector<int64_t>& a, const std::vector<int64_t>& b,
          const std::vector<int64_t>& out) {
    ValueId left = graph.add_value("a", TensorType::make(DType::kFloat32, a));
    ValueId right = graph.add_value("b", TensorType::make(DType::kFloat32, b));
    graph.add_graph_input(left);
    graph.add_graph_input(right);
    ValueId result = graph.add_value("y", TensorType::make(DType::kFloat32, out));
    node = graph.add_node(op, {left, right}, {result}, "", "n");
  }
  std::optional<GemmShape> shape(std::string* why_not = nullptr) const {
    return gemm_shape(graph, graph.node(node), why_not);
  }
  Graph graph;
  NodeId node = kNoId;
};

TEST(GemmShapeTest, MatMulBroadcastsBatchDims) {
  OneNode matmul("MatMul", {8, 1, 64, 32}, {4, 32, 16}, {8, 4, 64, 16});
  std::optional<GemmShape> shape = matmul.shape();
  ASSERT_TRUE(shape.has_value());
  EXPECT_EQ(shape->m, 64);
  EXPECT_EQ(shape->k, 32);
  EXPECT_EQ(shape->n, 16);
  EXPECT_EQ(shape->batch, 32);
  EXPECT_EQ(shape->batch_dims, (std::vector<int64_t>{8, 4}));
  EXPECT_EQ(shape->left_batch_dims, (std::vector<int64_t>{8, 1}));
  EXPECT_EQ(shape->right_batch_dims, (std::vector<int64_t>{4}));
  EXPECT_FALSE(shape->transpose_left);
  EXPECT_EQ(shape->flops(), 2 * 64 * 32 * 16 * 32);
}

TEST(GemmShapeTest, MatMulRankOneOperandsAreARowAndAColumn) {
  OneNode vector_matrix("MatMul", {32}, {32, 16}, {16});
  std::optional<GemmShape> shape = vector_matrix.shape();
  ASSERT_TRUE(shape.has_value());
  EXPECT_EQ(shape->m, 1);
  EXPECT_EQ(shape->k, 32);
  EXPECT_EQ(shape->n, 16);
  EXPECT_EQ(shape->batch, 1);
  OneNode matrix_vector("MatMul", {3, 64, 32}, {32}, {3, 64});
  shape = matrix_vector.shape();
  ASSERT_TRUE(shape.has_value());
  EXPECT_EQ(shape->m, 64);
  EXPECT_EQ(shape->n, 1);
  EXPECT_EQ(shape->batch, 3);
  EXPECT_TRUE(shape->right_batch_dims.empty());
}

TEST(GemmShapeTest, GemmAppliesTransposes) {
  OneNode gemm("Gemm", {32, 64}, {16, 32}, {64, 16});
  gemm.graph.node(gemm.node).attributes.push_back(Attribute::make_int("transA", 1));
  gemm.graph.node(gemm.node).attributes.push_back(Attribute::make_int("transB", 1));
  std::optional<GemmShape> shape = gemm.shape();
  ASSERT_TRUE(shape.has_value());
  EXPECT_EQ(shape->m, 64);
  EXPECT_EQ(shape->k, 32);
  EXPECT_EQ(shape->n, 16);
  EXPECT_EQ(shape->batch, 1);
  EXPECT_TRUE(shape->transpose_left);
  EXPECT_TRUE(shape->transpose_right);
  EXPECT_TRUE(shape->batch_dims.empty());
}

TEST(GemmShapeTest, RefusalsSayWhy) {
  std::string why;
  EXPECT_FALSE(OneNode("MatMul", {4, 8}, {9, 2}, {4, 2}).shape(&why));
  EXPECT_EQ(why, "MatMul's inner dims differ");
  EXPECT_FALSE(OneNode("MatMul", {3, 4, 8}, {2, 8, 2}, {3, 4, 2}).shape(&why));
  EXPECT_EQ(why, "MatMul batch dims [3] x [2] do not broadcast");
  EXPECT_FALSE(OneNode("Gemm", {2, 4, 8}, {8, 2}, {4, 2}).shape(&why));
  EXPECT_EQ(why, "Gemm operands must be rank 2");
  EXPECT_FALSE(OneNode("MatMul", {4, 8}, {8, 2}, {4, 3}).shape(&why));
  EXPECT_EQ(why, "the output f32[4,3] is not 1 x 4 x 2");
  EXPECT_FALSE(OneNode("MatMul", {-1, 8}, {8, 2}, {-1, 2}).shape(&why));
  EXPECT_EQ(why, "operands or output without static shapes");
  EXPECT_FALSE(OneNode("Add", {4, 8}, {4, 8}, {4, 8}).shape(&why));
  EXPECT_EQ(why, "\"n\" (Add) is not a MatMul or Gemm");
}

// Batches of A over one B fold into the rows of one GEMM (the library calls' one
// large GEMM); a batched B, or a transposed A, do not.
TEST(GemmShapeTest, BatchesFoldIntoRowsOverOneMatrix) {
  std::optional<GemmShape> folded =
      batches_folded_into_rows(*OneNode("MatMul", {8, 64, 32}, {32, 16}, {8, 64, 16}).shape());
  ASSERT_TRUE(folded.has_value());
  EXPECT_EQ(folded->batch, 1);
  EXPECT_EQ(folded->m, 512);
  EXPECT_EQ(folded->k, 32);
  EXPECT_EQ(folded->n, 16);
  // B's batch dims of 1 are one matrix too.
  folded =
      batches_folded_into_rows(*OneNode("MatMul", {2, 3, 4, 8}, {1, 8, 5}, {2, 3, 4, 5}).shape());
  ASSERT_TRUE(folded.has_value());
  EXPECT_EQ(folded->m, 24);
  EXPECT_EQ(folded->batch, 1);
  EXPECT_FALSE(
      batches_folded_into_rows(*OneNode("MatMul", {8, 64, 32}, {8, 32, 16}, {8, 64, 16}).shape()));
  GemmShape transposed = *OneNode("Gemm", {32, 64}, {32, 16}, {64, 16}).shape();
  transposed.transpose_left = true;
  EXPECT_FALSE(batches_folded_into_rows(transposed));
}

}  // namespace
}  // namespace stitch::ir
