// Tests of topological order, reachability and (post-)dominator trees.
#include "ir/core/analysis.h"

#include <gtest/gtest.h>

#include <string>

namespace stitch::ir {
namespace {

// Builds graphs node by node: add("B", {"a"}, "b") adds node B reading value a and
// producing value b; values that nothing produced yet become graph inputs.
class GraphBuilder {
 public:
  NodeId add(const std::string& op, const std::vector<std::string>& inputs,
             const std::string& output) {
    std::vector<ValueId> input_ids;
    for (const std::string& input : inputs) input_ids.push_back(value(input, true));
    return graph.add_node(op, input_ids, {value(output, false)}, "", op);
  }
  ValueId value(const std::string& name, bool as_input) {
    if (auto id = graph.find_value(name)) return *id;
    ValueId id = graph.add_value(name, TensorType::make(DType::kFloat32, {4}));
    if (as_input) graph.add_graph_input(id);
    return id;
  }
  Graph graph;
};

TEST(TopologicalOrderTest, TiesBrokenBySmallestId) {
  GraphBuilder b;
  NodeId late = b.add("Late", {"mid"}, "out");
  NodeId first = b.add("First", {"x"}, "mid");
  NodeId other = b.add("Other", {"x"}, "other");
  Result<std::vector<NodeId>> order = topological_order(b.graph);
  ASSERT_TRUE(order.is_ok()) << order.status().message();
  // late (id 0) becomes ready after first and is then the smallest ready id.
  EXPECT_EQ(*order, (std::vector<NodeId>{first, late, other}));
}

TEST(TopologicalOrderTest, CycleMessageNamesANodeOnTheCycle) {
  Graph graph;
  auto type = TensorType::make(DType::kFloat32, {4});
  ValueId x = graph.add_value("x", type);
  graph.add_graph_input(x);
  ValueId a = graph.add_value("a", type);
  ValueId b = graph.add_value("b", type);
  ValueId c = graph.add_value("c", type);
  ValueId d = graph.add_value("d", type);
  // Node 0 only reads the cycle; the cycle is 1 -> 2 -> 3 -> 1.
  graph.add_node("Neg", {c}, {d}, "", "downstream");
  graph.add_node("Add", {x, c}, {a}, "", "add");
  graph.add_node("Relu", {a}, {b}, "", "relu");
  graph.add_node("Exp", {b}, {c}, "", "exp");
  Result<std::vector<NodeId>> order = topological_order(graph);
  ASSERT_FALSE(order.is_ok());
  EXPECT_EQ(order.status().message(),
            "the graph has a cycle through node \"add\" (Add); ONNX graphs must be acyclic: "
            "re-export the model");
  EXPECT_FALSE(Reachability::build(graph).is_ok());
  EXPECT_FALSE(DominatorTree::dominators(graph).is_ok());
}

TEST(ReachabilityTest, Diamond) {
  GraphBuilder b;
  NodeId top = b.add("Top", {"x"}, "a");
  NodeId left = b.add("Left", {"a"}, "l");
  NodeId right = b.add("Right", {"a"}, "r");
  NodeId bottom = b.add("Bottom", {"l", "r"}, "y");
  Result<Reachability> reach = Reachability::build(b.graph);
  ASSERT_TRUE(reach.is_ok());
  EXPECT_TRUE(reach->reaches(top, bottom));
  EXPECT_TRUE(reach->reaches(top, left));
  EXPECT_TRUE(reach->reaches(left, bottom));
  EXPECT_FALSE(reach->reaches(left, right));
  EXPECT_FALSE(reach->reaches(bottom, top));
  EXPECT_FALSE(reach->reaches(top, top));
}

TEST(ReachabilityTest, LongChainAcrossWordBoundaries) {
  GraphBuilder b;
  std::vector<NodeId> chain;
  for (int i = 0; i < 130; ++i) {
    chain.push_back(
        b.add("Relu", {i == 0 ? "x" : "v" + std::to_string(i - 1)}, "v" + std::to_string(i)));
  }
  Result<Reachability> reach = Reachability::build(b.graph);
  ASSERT_TRUE(reach.is_ok());
  EXPECT_TRUE(reach->reaches(chain[0], chain[129]));
  EXPECT_TRUE(reach->reaches(chain[63], chain[64]));
  EXPECT_FALSE(reach->reaches(chain[64], chain[63]));
}

TEST(ReachabilityTest, DeadNodesAreSkipped) {
  GraphBuilder b;
  NodeId a = b.add("A", {"x"}, "a");
  NodeId dead = b.add("Dead", {"a"}, "d");
  NodeId c = b.add("C", {"d"}, "c");
  b.graph.remove_node(dead);
  Result<Reachability> reach = Reachability::build(b.graph);
  ASSERT_TRUE(reach.is_ok());
  EXPECT_FALSE(reach->reaches(a, c));
  EXPECT_FALSE(reach->reaches(a, dead));
}

TEST(DominatorTreeTest, Diamond) {
  GraphBuilder b;
  NodeId top = b.add("Top", {"x"}, "a");
  NodeId left = b.add("Left", {"a"}, "l");
  NodeId right = b.add("Right", {"a"}, "r");
  NodeId bottom = b.add("Bottom", {"l", "r"}, "y");
  b.graph.add_graph_output(*b.graph.find_value("y"));
  Result<DominatorTree> dom = DominatorTree::dominators(b.graph);
  ASSERT_TRUE(dom.is_ok());
  EXPECT_EQ(dom->immediate_dominator(top), kNoId);
  EXPECT_EQ(dom->immediate_dominator(left), top);
  EXPECT_EQ(dom->immediate_dominator(right), top);
  EXPECT_EQ(dom->immediate_dominator(bottom), top);
  EXPECT_TRUE(dom->dominates(top, bottom));
  EXPECT_TRUE(dom->dominates(bottom, bottom));
  EXPECT_FALSE(dom->dominates(left, bottom));
  EXPECT_FALSE(dom->dominates(bottom, top));

  Result<DominatorTree> post = DominatorTree::post_dominators(b.graph);
  ASSERT_TRUE(post.is_ok());
  EXPECT_EQ(post->immediate_dominator(top), bottom);
  EXPECT_EQ(post->immediate_dominator(left), bottom);
  EXPECT_EQ(post->immediate_dominator(bottom), kNoId);
  EXPECT_TRUE(post->dominates(bottom, top));
  EXPECT_FALSE(post->dominates(left, top));
}

TEST(DominatorTreeTest, Chain) {
  GraphBuilder b;
  NodeId a = b.add("A", {"x"}, "a");
  NodeId bb = b.add("B", {"a"}, "b");
  NodeId c = b.add("C", {"b"}, "c");
  Result<DominatorTree> dom = DominatorTree::dominators(b.graph);
  ASSERT_TRUE(dom.is_ok());
  EXPECT_EQ(dom->immediate_dominator(c), bb);
  EXPECT_EQ(dom->immediate_dominator(bb), a);
  EXPECT_TRUE(dom->dominates(a, c));
  Result<DominatorTree> post = DominatorTree::post_dominators(b.graph);
  ASSERT_TRUE(post.is_ok());
  EXPECT_EQ(post->immediate_dominator(a), bb);
  EXPECT_EQ(post->immediate_dominator(bb), c);
  EXPECT_TRUE(post->dominates(c, a));
  EXPECT_FALSE(post->dominates(a, c));
}

TEST(DominatorTreeTest, MultipleSourcesAndSinks) {
  GraphBuilder b;
  NodeId s1 = b.add("S1", {"x"}, "s1");
  NodeId s2 = b.add("S2", {"y"}, "s2");
  NodeId merge = b.add("Merge", {"s1", "s2"}, "m");
  NodeId t1 = b.add("T1", {"m"}, "t1");
  NodeId t2 = b.add("T2", {"m"}, "t2");
  Result<DominatorTree> dom = DominatorTree::dominators(b.graph);
  ASSERT_TRUE(dom.is_ok());
  EXPECT_EQ(dom->immediate_dominator(merge), kNoId);  // two sources: only the root
  EXPECT_FALSE(dom->dominates(s1, merge));
  EXPECT_EQ(dom->immediate_dominator(t1), merge);
  EXPECT_EQ(dom->immediate_dominator(t2), merge);
  Result<DominatorTree> post = DominatorTree::post_dominators(b.graph);
  ASSERT_TRUE(post.is_ok());
  EXPECT_EQ(post->immediate_dominator(merge), kNoId);  // two sinks
  EXPECT_EQ(post->immediate_dominator(s1), merge);
  EXPECT_EQ(post->immediate_dominator(s2), merge);
  EXPECT_FALSE(post->dominates(t1, merge));
}

TEST(DominatorTreeTest, DeadNodesAreNotInTheTree) {
  GraphBuilder b;
  NodeId a = b.add("A", {"x"}, "a");
  NodeId dead = b.add("Dead", {"a"}, "d");
  NodeId c = b.add("C", {"a"}, "c");
  b.graph.remove_node(dead);
  Result<DominatorTree> dom = DominatorTree::dominators(b.graph);
  ASSERT_TRUE(dom.is_ok());
  EXPECT_EQ(dom->immediate_dominator(c), a);
  EXPECT_EQ(dom->immediate_dominator(dead), kNoId);
  EXPECT_FALSE(dom->dominates(a, dead));
  EXPECT_FALSE(dom->dominates(dead, dead));
  Result<DominatorTree> post = DominatorTree::post_dominators(b.graph);
  ASSERT_TRUE(post.is_ok());
  EXPECT_EQ(post->immediate_dominator(a), c);  // the dead reader does not count
}

// x -> relu -> reducemax -> sub -> exp -> reducesum -> div, where relu's output also
// feeds sub and exp's output also feeds div (Softmax decomposed).
struct SoftmaxGraph {
  SoftmaxGraph() {
    relu = b.add("Relu", {"x"}, "r");
    max = b.add("ReduceMax", {"r"}, "m");
    sub = b.add("Sub", {"r", "m"}, "s");
    exp = b.add("Exp", {"s"}, "e");
    sum = b.add("ReduceSum", {"e"}, "t");
    div = b.add("Div", {"e", "t"}, "y");
    b.graph.add_graph_output(*b.graph.find_value("y"));
  }
  GraphBuilder b;
  NodeId relu, max, sub, exp, sum, div;
};

TEST(DominatorTreeTest, SoftmaxDominators) {
  SoftmaxGraph g;
  Result<DominatorTree> dom = DominatorTree::dominators(g.b.graph);
  ASSERT_TRUE(dom.is_ok());
  EXPECT_EQ(dom->immediate_dominator(g.max), g.relu);
  EXPECT_EQ(dom->immediate_dominator(g.sub), g.relu);
  EXPECT_EQ(dom->immediate_dominator(g.exp), g.sub);
  EXPECT_EQ(dom->immediate_dominator(g.sum), g.exp);
  EXPECT_EQ(dom->immediate_dominator(g.div), g.exp);
  EXPECT_FALSE(dom->dominates(g.max, g.sub));
  EXPECT_TRUE(dom->dominates(g.relu, g.div));
}

TEST(DominatorTreeTest, SoftmaxPostDominators) {
  SoftmaxGraph g;
  Result<DominatorTree> post = DominatorTree::post_dominators(g.b.graph);
  ASSERT_TRUE(post.is_ok());
  EXPECT_EQ(post->immediate_dominator(g.relu), g.sub);
  EXPECT_EQ(post->immediate_dominator(g.max), g.sub);
  EXPECT_EQ(post->immediate_dominator(g.sub), g.exp);
  EXPECT_EQ(post->immediate_dominator(g.exp), g.div);
  EXPECT_EQ(post->immediate_dominator(g.sum), g.div);
  EXPECT_EQ(post->immediate_dominator(g.div), kNoId);
  EXPECT_TRUE(post->dominates(g.div, g.relu));
  EXPECT_FALSE(post->dominates(g.sum, g.exp));
}

TEST(DominatorTreeTest, GraphOutputEndsPostDominance) {
  SoftmaxGraph g;
  g.b.graph.add_graph_output(*g.b.graph.find_value("e"));
  Result<DominatorTree> post = DominatorTree::post_dominators(g.b.graph);
  ASSERT_TRUE(post.is_ok());
  EXPECT_EQ(post->immediate_dominator(g.exp), kNoId);  // e escapes as a graph output
  EXPECT_EQ(post->immediate_dominator(g.sub), g.exp);
  EXPECT_FALSE(post->dominates(g.div, g.relu));
}

// The subset form: only edges between the subset's nodes count, and an exit value ends
// post-dominance as a graph output does.
TEST(DominatorTreeTest, PostDominatorsOverASubset) {
  SoftmaxGraph g;
  // The group {sub, exp, sum, div}: relu and max are outside.
  std::vector<NodeId> group = {g.sub, g.exp, g.sum, g.div};
  Result<DominatorTree> post =
      DominatorTree::post_dominators(g.b.graph, group, {*g.b.graph.find_value("y")});
  ASSERT_TRUE(post.is_ok()) << post.status().message();
  EXPECT_EQ(post->immediate_dominator(g.sub), g.exp);
  EXPECT_EQ(post->immediate_dominator(g.exp), g.div);
  EXPECT_EQ(post->immediate_dominator(g.sum), g.div);
  EXPECT_EQ(post->immediate_dominator(g.div), kNoId);
  EXPECT_TRUE(post->dominates(g.div, g.sub));
  EXPECT_FALSE(post->dominates(g.sub, g.relu));  // outside the subset: not in the tree

  // e read outside the group: exp is an exit, so div no longer post-dominates sub.
  Result<DominatorTree> escaped = DominatorTree::post_dominators(
      g.b.graph, group, {*g.b.graph.find_value("e"), *g.b.graph.find_value("y")});
  ASSERT_TRUE(escaped.is_ok());
  EXPECT_EQ(escaped->immediate_dominator(g.exp), kNoId);
  EXPECT_EQ(escaped->immediate_dominator(g.sub), g.exp);
  EXPECT_FALSE(escaped->dominates(g.div, g.sub));

  // A node whose readers are all outside the subset ends at the virtual root.
  Result<DominatorTree> partial = DominatorTree::post_dominators(g.b.graph, {g.relu, g.max}, {});
  ASSERT_TRUE(partial.is_ok());
  EXPECT_EQ(partial->immediate_dominator(g.relu), g.max);
  EXPECT_EQ(partial->immediate_dominator(g.max), kNoId);
}

TEST(DominatorTreeTest, PostDominatorsOverASubsetNeedTopologicalOrder) {
  SoftmaxGraph g;
  Result<DominatorTree> post = DominatorTree::post_dominators(g.b.graph, {g.exp, g.sub}, {});
  ASSERT_FALSE(post.is_ok());
  EXPECT_EQ(post.status().message(),
            "node \"Exp\" (Exp) reads node \"Sub\" (Sub) but comes before it: the subset is "
            "not in topological order");
}

}  // namespace
}  // namespace stitch::ir
