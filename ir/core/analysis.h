// Graph analyses: topological order, reachability, dominator and post-dominator trees.
#pragma once

#include <cstdint>
#include <set>
#include <vector>

#include "ir/core/graph.h"
#include "ir/core/status.h"

namespace stitch::ir {

// Live nodes in topological order, ties broken by smallest id first (Kahn's
// algorithm with a min-heap), so the order is deterministic and equals the model's
// order when that is already topological. Error when the graph has a cycle; the
// message names one node on it.
Result<std::vector<NodeId>> topological_order(const Graph& graph);

// Node-to-node reachability over data edges: reaches(a, b) is true when a path of
// one or more edges leads from a to b. Built once in O(N * E / 64) time with one
// bitset per node (N^2 / 8 bytes): meant for partitions and plans, not for 100k-node
// whole graphs.
class Reachability {
 public:
  static Result<Reachability> build(const Graph& graph);
  bool reaches(NodeId from, NodeId to) const;

 private:
  int32_t words_ = 0;
  std::vector<uint64_t> bits_;  // row per node id
};

// Dominator tree of the node graph (edges are data dependencies), with a virtual
// root that precedes every node without a node predecessor. For post-dominators the
// edges are reversed and the virtual root follows every node without a node user
// and every node producing a graph output (a graph output is a use outside the
// graph, so no node after it post-dominates its producer). Dead nodes are not in
// the tree. Cooper, Harvey and Kennedy's algorithm over the topological order (one
// pass: in a DAG every predecessor is final before its successors). Example:
//   a -> b -> d, a -> c -> d: idom(b) = idom(c) = idom(d) = a; ipdom(a) = d.
class DominatorTree {
 public:
  static Result<DominatorTree> dominators(const Graph& graph);
  static Result<DominatorTree> post_dominators(const Graph& graph);
  // Post-dominators over the subgraph of `nodes` (a topological order of them; an
  // error otherwise): only edges between them count, and the virtual root follows
  // every node with an output in `exits` (values read outside the subset, graph
  // outputs) and every node without a user in the subset. Example: a fused group's
  // nodes with its boundary outputs as exits (emit/schedule.cc's shared-memory reuse).
  static Result<DominatorTree> post_dominators(const Graph& graph, const std::vector<NodeId>& nodes,
                                               const std::set<ValueId>& exits);
  // Immediate dominator of `node`, kNoId when it is the virtual root (or the node
  // is dead).
  NodeId immediate_dominator(NodeId node) const;
  // True when every path from the root to b passes through a (a dominates a). O(1).
  // False when a or b is dead.
  bool dominates(NodeId a, NodeId b) const;

 private:
  static Result<DominatorTree> build(const Graph& graph, bool post);
  // The tree over `order`, in which every node's predecessors `preds[i]` come earlier;
  // `from_root[i]`: order[i] also follows the virtual root.
  static DominatorTree from_order(int32_t node_capacity, const std::vector<NodeId>& order,
                                  const std::vector<std::vector<NodeId>>& preds,
                                  const std::vector<bool>& from_root);

  std::vector<NodeId> idom_;    // by node id; kNoId: the virtual root
  std::vector<int32_t> enter_;  // preorder number in the tree, -1 for dead nodes
  std::vector<int32_t> leave_;  // postorder number in the tree, -1 for dead nodes
};

}  // namespace stitch::ir
