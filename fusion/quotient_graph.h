// The graph views the plan's solver and its verifier share: live nodes with
// successor lists in CSR form, and the cycles of the quotient graph that contracting
// disjoint groups gives (FusionStitching Fig. 3). Internal to fusion/.
//
// Example: A -> B -> C and A -> C with the group {A, C}: the quotient has the
// vertices {A,C} (named A, its smallest node id) and B, edges A -> B and B -> A, so
// find_quotient_cycles returns the one cycle [A, B].
#pragma once

#include <cstdint>
#include <vector>

#include "ir/core/graph.h"
#include "ir/core/status.h"

namespace stitch::fusion {

// Live nodes with deduplicated successor lists (CSR) and topological positions.
struct NodeGraph {
  std::vector<int32_t> successor_begin;  // by node id, size capacity + 1
  std::vector<ir::NodeId> successors;
  std::vector<int32_t> position;  // topological position by node id, -1 for dead nodes
  std::vector<ir::NodeId> order;  // live nodes in topological order

  int32_t capacity() const { return static_cast<int32_t>(position.size()); }
  const ir::NodeId* successors_begin(ir::NodeId node) const {
    return successors.data() + successor_begin[static_cast<size_t>(node)];
  }
  const ir::NodeId* successors_end(ir::NodeId node) const {
    return successors.data() + successor_begin[static_cast<size_t>(node) + 1];
  }
};

// Error when the graph has a cycle.
Result<NodeGraph> build_node_graph(const ir::Graph& graph);

// Cycles of the quotient graph of disjoint `groups`: one per strongly connected
// component with two or more vertices, the shortest through the component's
// lowest-indexed group. Each cycle lists its vertices (representative nodes) in
// path order, starting at that group.
struct QuotientCycles {
  std::vector<ir::NodeId> vertex_of;  // by node id
  std::vector<int> group_of;          // by node id; -1 for an ungrouped node
  std::vector<std::vector<ir::NodeId>> cycles;
};

// Precondition: `groups` are disjoint, non-empty and name live nodes of `nodes`.
QuotientCycles find_quotient_cycles(const NodeGraph& nodes,
                                    const std::vector<std::vector<ir::NodeId>>& groups);

}  // namespace stitch::fusion
