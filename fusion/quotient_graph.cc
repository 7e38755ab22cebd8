// Live-node successor lists and quotient-graph cycles (see quotient_graph.h).
#include "fusion/quotient_graph.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <utility>

#include "ir/core/analysis.h"

namespace stitch::fusion {

using ir::NodeId;

Result<NodeGraph> build_node_graph(const ir::Graph& graph) {
  STITCH_ASSIGN_OR_RETURN(std::vector<NodeId> order, ir::topological_order(graph));
  NodeGraph result;
  const int32_t capacity = graph.node_capacity();
  result.position.assign(static_cast<size_t>(capacity), -1);
  for (size_t i = 0; i < order.size(); ++i) {
    result.position[static_cast<size_t>(order[i])] = static_cast<int32_t>(i);
  }
  result.successor_begin.assign(static_cast<size_t>(capacity) + 1, 0);
  std::vector<NodeId> scratch;
  for (NodeId node = 0; node < capacity; ++node) {
    result.successor_begin[static_cast<size_t>(node)] =
        static_cast<int32_t>(result.successors.size());
    if (graph.node(node).dead) continue;
    scratch.clear();
    for (ir::ValueId output : graph.node(node).outputs) {
      if (output == ir::kNoId) continue;
      for (const ir::Use& use : graph.value(output).users) {
        if (use.node != node && !graph.node(use.node).dead) scratch.push_back(use.node);
      }
    }
    std::sort(scratch.begin(), scratch.end());
    scratch.erase(std::unique(scratch.begin(), scratch.end()), scratch.end());
    result.successors.insert(result.successors.end(), scratch.begin(), scratch.end());
  }
  result.successor_begin[static_cast<size_t>(capacity)] =
      static_cast<int32_t>(result.successors.size());
  result.order = std::move(order);
  return result;
}

QuotientCycles find_quotient_cycles(const NodeGraph& nodes,
                                    const std::vector<std::vector<NodeId>>& groups) {
  const size_t capacity = static_cast<size_t>(nodes.capacity());
  QuotientCycles result;
  result.vertex_of.resize(capacity);
  std::iota(result.vertex_of.begin(), result.vertex_of.end(), 0);
  result.group_of.assign(capacity, -1);
  for (size_t g = 0; g < groups.size(); ++g) {
    for (NodeId node : groups[g]) {
      result.vertex_of[static_cast<size_t>(node)] = groups[g].front();
      result.group_of[static_cast<size_t>(node)] = static_cast<int>(g);
    }
  }
  // Quotient edges as CSR over vertex ids.
  std::vector<std::pair<NodeId, NodeId>> edges;
  for (NodeId node : nodes.order) {
    NodeId from = result.vertex_of[static_cast<size_t>(node)];
    for (const NodeId* s = nodes.successors_begin(node); s != nodes.successors_end(node); ++s) {
      NodeId to = result.vertex_of[static_cast<size_t>(*s)];
      if (from != to) edges.emplace_back(from, to);
    }
  }
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  std::vector<int32_t> begin(capacity + 1, 0);
  for (const auto& edge : edges) ++begin[static_cast<size_t>(edge.first) + 1];
  for (size_t v = 0; v < capacity; ++v) begin[v + 1] += begin[v];
  auto target = [&](int32_t e) { return edges[static_cast<size_t>(e)].second; };

  // Tarjan's strongly connected components, iterative, roots in topological order.
  std::vector<int32_t> index(capacity, -1);
  std::vector<int32_t> low(capacity, 0);
  std::vector<char> on_stack(capacity, 0);
  std::vector<int32_t> component_of(capacity, -1);
  std::vector<NodeId> stack;
  std::vector<std::pair<NodeId, int32_t>> calls;  // (vertex, next edge)
  std::vector<std::vector<NodeId>> components;
  int32_t counter = 0;
  for (NodeId root : nodes.order) {
    if (result.vertex_of[static_cast<size_t>(root)] != root ||
        index[static_cast<size_t>(root)] >= 0)
      continue;
    index[static_cast<size_t>(root)] = low[static_cast<size_t>(root)] = counter++;
    stack.push_back(root);
    on_stack[static_cast<size_t>(root)] = 1;
    calls.emplace_back(root, begin[static_cast<size_t>(root)]);
    while (!calls.empty()) {
      NodeId vertex = calls.back().first;
      int32_t edge = calls.back().second;
      if (edge < begin[static_cast<size_t>(vertex) + 1]) {
        ++calls.back().second;
        NodeId next = target(edge);
        if (index[static_cast<size_t>(next)] < 0) {
          index[static_cast<size_t>(next)] = low[static_cast<size_t>(next)] = counter++;
          stack.push_back(next);
          on_stack[static_cast<size_t>(next)] = 1;
          calls.emplace_back(next, begin[static_cast<size_t>(next)]);
        } else if (on_stack[static_cast<size_t>(next)]) {
          low[static_cast<size_t>(vertex)] =
              std::min(low[static_cast<size_t>(vertex)], index[static_cast<size_t>(next)]);
        }
        continue;
      }
      if (low[static_cast<size_t>(vertex)] == index[static_cast<size_t>(vertex)]) {
        std::vector<NodeId> members;
        NodeId popped;
        do {
          popped = stack.back();
          stack.pop_back();
          on_stack[static_cast<size_t>(popped)] = 0;
          members.push_back(popped);
        } while (popped != vertex);
        if (members.size() >= 2) {
          for (NodeId member : members) {
            component_of[static_cast<size_t>(member)] = static_cast<int32_t>(components.size());
          }
          components.push_back(std::move(members));
        }
      }
      calls.pop_back();
      if (!calls.empty()) {
        NodeId parent = calls.back().first;
        low[static_cast<size_t>(parent)] =
            std::min(low[static_cast<size_t>(parent)], low[static_cast<size_t>(vertex)]);
      }
    }
  }

  // A shortest cycle through each component's lowest-indexed group (breadth-first
  // search inside the component). Every such component holds a group: the graph
  // itself is acyclic.
  std::vector<NodeId> parent(capacity, ir::kNoId);
  std::vector<int32_t> seen(capacity, -1);
  std::sort(components.begin(), components.end(),
            [&](const std::vector<NodeId>& a, const std::vector<NodeId>& b) {
              auto first_group = [&](const std::vector<NodeId>& members) {
                int best = std::numeric_limits<int>::max();
                for (NodeId m : members) {
                  int g = result.group_of[static_cast<size_t>(m)];
                  if (g >= 0) best = std::min(best, g);
                }
                return best;
              };
              return first_group(a) < first_group(b);
            });
  for (size_t c = 0; c < components.size(); ++c) {
    const std::vector<NodeId>& members = components[c];
    const int32_t id = component_of[static_cast<size_t>(members.front())];
    NodeId start = ir::kNoId;
    for (NodeId m : members) {
      int g = result.group_of[static_cast<size_t>(m)];
      if (g >= 0 && (start == ir::kNoId || g < result.group_of[static_cast<size_t>(start)])) {
        start = m;
      }
    }
    STITCH_CHECK(start != ir::kNoId) << "a quotient cycle without a group";
    std::vector<NodeId> queue{start};
    seen[static_cast<size_t>(start)] = static_cast<int32_t>(c);
    NodeId last = ir::kNoId;  // the vertex with an edge back to start
    for (size_t head = 0; head < queue.size() && last == ir::kNoId; ++head) {
      NodeId vertex = queue[head];
      for (int32_t e = begin[static_cast<size_t>(vertex)];
           e < begin[static_cast<size_t>(vertex) + 1]; ++e) {
        NodeId next = target(e);
        if (component_of[static_cast<size_t>(next)] != id) continue;
        if (next == start) {
          last = vertex;
          break;
        }
        if (seen[static_cast<size_t>(next)] == static_cast<int32_t>(c)) continue;
        seen[static_cast<size_t>(next)] = static_cast<int32_t>(c);
        parent[static_cast<size_t>(next)] = vertex;
        queue.push_back(next);
      }
    }
    STITCH_CHECK(last != ir::kNoId) << "no cycle inside a strongly connected component";
    std::vector<NodeId> cycle;
    for (NodeId v = last; v != start; v = parent[static_cast<size_t>(v)]) cycle.push_back(v);
    cycle.push_back(start);
    std::reverse(cycle.begin(), cycle.end());
    result.cycles.push_back(std::move(cycle));
  }
  return result;
}

}  // namespace stitch::fusion
