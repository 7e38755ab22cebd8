// The boundary of a fused group: the values it reads from outside and the values it
// hands back. One definition shared by the rewritten model (emit/fused_model.h: the
// fused node's inputs and outputs) and the CUDA emitter (the launcher's argument
// order), so the two can never disagree.
//
//  - ordered_nodes: the group's nodes in topological order (ties by id);
//  - inputs: the values the nodes read that no node of the group produces (graph
//    inputs, initializers, other nodes' outputs), in order of first read (nodes in
//    topological order, inputs in slot order), each once;
//  - outputs: the values the group produces that a node outside it reads or that are
//    graph outputs, in order of production.
//
// Example: %t = Mul(%x, %w); %y = Add(%t, %x) with %y read outside:
//   inputs = [%x, %w], outputs = [%y] (%t stays inside).
#pragma once

#include <cstdint>
#include <vector>

#include "ir/core/graph.h"
#include "ir/core/status.h"

namespace stitch::emit {

struct GroupBoundary {
  std::vector<ir::NodeId> ordered_nodes;
  std::vector<ir::ValueId> inputs;
  std::vector<ir::ValueId> outputs;
};

// Position of each node id in ir::topological_order(graph) (0 for dead ids); an error
// when the graph has a cycle.
Result<std::vector<int32_t>> topological_positions(const ir::Graph& graph);

// topological_position: topological_positions(graph).
GroupBoundary group_boundary(const ir::Graph& graph, const std::vector<ir::NodeId>& nodes,
                             const std::vector<int32_t>& topological_position);

// Convenience overload that computes the topological order itself (O(graph)).
GroupBoundary group_boundary(const ir::Graph& graph, const std::vector<ir::NodeId>& nodes);

}  // namespace stitch::emit
