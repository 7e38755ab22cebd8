// The plan verifier: disjoint groups of live nodes, each convex, quotient acyclic.
#include <algorithm>
#include <cstdint>
#include <sstream>
#include <utility>

#include "fusion/plan.h"
#include "fusion/quotient_graph.h"

namespace stitch::fusion {

using ir::NodeId;

Status verify_plan(const ir::Graph& graph, const FusionPlan& plan) {
  const int32_t capacity = graph.node_capacity();
  std::vector<int> owner(static_cast<size_t>(capacity), -1);
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    const std::vector<NodeId>& group = plan.groups[g];
    if (group.empty())
      return Status::internal("fusion plan: group " + std::to_string(g) + " is empty");
    for (NodeId node : group) {
      if (node < 0 || node >= capacity || graph.node(node).dead) {
        return Status::internal("fusion plan: group " + std::to_string(g) + " names node id " +
                                std::to_string(node) + ", which is not a live node");
      }
      int& slot = owner[static_cast<size_t>(node)];
      if (slot >= 0) {
        return Status::internal("fusion plan: groups " + std::to_string(slot) + " and " +
                                std::to_string(g) + " both contain node " +
                                graph.node(node).display_name());
      }
      slot = static_cast<int>(g);
    }
  }
  STITCH_ASSIGN_OR_RETURN(NodeGraph nodes, build_node_graph(graph));

  // Convexity: a path leaving group g and re-entering it climbs in topological
  // position, so it only visits nodes before g's last node.
  std::vector<size_t> mark(static_cast<size_t>(capacity), SIZE_MAX);
  std::vector<std::pair<NodeId, NodeId>> stack;  // (node, where the path left the group)
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    int32_t last = -1;
    for (NodeId node : plan.groups[g])
      last = std::max(last, nodes.position[static_cast<size_t>(node)]);
    stack.clear();
    for (NodeId node : plan.groups[g]) {
      for (const NodeId* s = nodes.successors_begin(node); s != nodes.successors_end(node); ++s) {
        if (owner[static_cast<size_t>(*s)] == static_cast<int>(g)) continue;
        if (nodes.position[static_cast<size_t>(*s)] < last && mark[static_cast<size_t>(*s)] != g) {
          mark[static_cast<size_t>(*s)] = g;
          stack.emplace_back(*s, *s);
        }
      }
    }
    while (!stack.empty()) {
      auto [node, outside] = stack.back();
      stack.pop_back();
      for (const NodeId* s = nodes.successors_begin(node); s != nodes.successors_end(node); ++s) {
        if (owner[static_cast<size_t>(*s)] == static_cast<int>(g)) {
          return Status::internal("fusion plan: group " + std::to_string(g) +
                                  " is not convex: a path leaves it through node " +
                                  graph.node(outside).display_name() + " and re-enters at node " +
                                  graph.node(*s).display_name());
        }
        if (nodes.position[static_cast<size_t>(*s)] < last && mark[static_cast<size_t>(*s)] != g) {
          mark[static_cast<size_t>(*s)] = g;
          stack.emplace_back(*s, outside);
        }
      }
    }
  }

  QuotientCycles quotient = find_quotient_cycles(nodes, plan.groups);
  if (!quotient.cycles.empty()) {
    std::ostringstream message;
    message << "fusion plan: contracting the groups makes a cycle:";
    const std::vector<NodeId>& cycle = quotient.cycles.front();
    for (size_t k = 0; k <= cycle.size(); ++k) {
      NodeId vertex = cycle[k % cycle.size()];
      int group = quotient.group_of[static_cast<size_t>(vertex)];
      message << (k == 0 ? " " : " -> ");
      if (group >= 0) {
        message << "group " << group << " (" << graph.node(vertex).display_name() << ")";
      } else {
        message << "node " << graph.node(vertex).display_name();
      }
    }
    return Status::internal(message.str());
  }
  return Status::ok();
}

}  // namespace stitch::fusion
