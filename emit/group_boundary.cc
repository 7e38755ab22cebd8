// The boundary of a fused group (see group_boundary.h).
#include "emit/group_boundary.h"

#include <algorithm>

#include "ir/core/analysis.h"
#include "ir/core/status.h"

namespace stitch::emit {

Result<std::vector<int32_t>> topological_positions(const ir::Graph& graph) {
  STITCH_ASSIGN_OR_RETURN(std::vector<ir::NodeId> order, ir::topological_order(graph));
  std::vector<int32_t> position(static_cast<size_t>(graph.node_capacity()), 0);
  for (size_t i = 0; i < order.size(); ++i)
    position[static_cast<size_t>(order[i])] = static_cast<int32_t>(i);
  return position;
}

GroupBoundary group_boundary(const ir::Graph& graph, const std::vector<ir::NodeId>& nodes,
                             const std::vector<int32_t>& topological_position) {
  GroupBoundary boundary;
  boundary.ordered_nodes = nodes;
  std::sort(boundary.ordered_nodes.begin(), boundary.ordered_nodes.end(),
            [&](ir::NodeId a, ir::NodeId b) {
              return topological_position[static_cast<size_t>(a)] <
                     topological_position[static_cast<size_t>(b)];
            });
  // Membership by binary search, not a flag per graph node: the planner asks for
  // the boundary of every candidate (1.6M on a 100k-node chain), and clearing a
  // graph-sized array each time made that quadratic.
  std::vector<ir::NodeId> sorted = nodes;
  std::sort(sorted.begin(), sorted.end());
  auto inside = [&](ir::NodeId id) { return std::binary_search(sorted.begin(), sorted.end(), id); };
  auto produced_inside = [&](ir::ValueId value) {
    ir::NodeId producer = graph.value(value).producer;
    return producer != ir::kNoId && inside(producer);
  };
  for (ir::NodeId id : boundary.ordered_nodes) {
    for (ir::ValueId input : graph.node(id).inputs) {
      if (input == ir::kNoId || produced_inside(input)) continue;
      if (std::find(boundary.inputs.begin(), boundary.inputs.end(), input) ==
          boundary.inputs.end()) {
        boundary.inputs.push_back(input);
      }
    }
  }
  for (ir::NodeId id : boundary.ordered_nodes) {
    for (ir::ValueId output : graph.node(id).outputs) {
      if (output == ir::kNoId) continue;
      const ir::Value& value = graph.value(output);
      bool read_outside = value.is_graph_output ||
                          std::any_of(value.users.begin(), value.users.end(),
                                      [&](const ir::Use& use) { return !inside(use.node); });
      if (read_outside) boundary.outputs.push_back(output);
    }
  }
  return boundary;
}

GroupBoundary group_boundary(const ir::Graph& graph, const std::vector<ir::NodeId>& nodes) {
  Result<std::vector<int32_t>> position = topological_positions(graph);
  STITCH_CHECK(position.is_ok()) << "group_boundary on a cyclic graph";
  return group_boundary(graph, nodes, *position);
}

}  // namespace stitch::emit
