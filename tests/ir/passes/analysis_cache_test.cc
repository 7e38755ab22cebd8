// Tests of the analyses the pipeline shares between passes (ir/passes/pass.h).
#include <gtest/gtest.h>

#include <vector>

#include "ir/core/analysis.h"
#include "ir/passes/pass.h"

namespace stitch::ir {
namespace {

Graph chain(int nodes) {
  Graph graph;
  auto type = TensorType::make(DType::kFloat32, {4});
  ValueId value = graph.add_value("x", type);
  graph.add_graph_input(value);
  for (int i = 0; i < nodes; ++i) {
    ValueId next = graph.add_value("v" + std::to_string(i), type);
    graph.add_node("Relu", {value}, {next}, "", "relu" + std::to_string(i));
    value = next;
  }
  graph.add_graph_output(value);
  return graph;
}

TEST(AnalysisCacheTest, KeepsTheOrderUntilInvalidated) {
  Graph graph = chain(3);
  AnalysisCache cache;
  Result<std::vector<NodeId>> first = cache.topological_order(graph);
  ASSERT_TRUE(first.is_ok());
  EXPECT_EQ(*first, (std::vector<NodeId>{0, 1, 2}));
  // A node added without invalidating: the cached order is what a caller gets...
  ValueId extra = graph.add_value("extra", TensorType::make(DType::kFloat32, {4}));
  graph.add_node("Neg", {graph.graph_inputs()[0]}, {extra}, "", "neg");
  EXPECT_EQ(*cache.topological_order(graph), (std::vector<NodeId>{0, 1, 2}));
  // ...and after invalidate() the order of the graph as it is.
  cache.invalidate();
  EXPECT_EQ(*cache.topological_order(graph), *topological_order(graph));
  EXPECT_EQ(cache.topological_order(graph)->size(), 4u);
}

TEST(AnalysisCacheTest, AnotherGraphIsComputedAfresh) {
  Graph small = chain(2);
  Graph large = chain(5);
  AnalysisCache cache;
  EXPECT_EQ(cache.topological_order(small)->size(), 2u);
  EXPECT_EQ(cache.topological_order(large)->size(), 5u);
}

}  // namespace
}  // namespace stitch::ir
