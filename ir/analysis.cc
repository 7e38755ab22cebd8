// Graph analyses: topological order, reachability, dominator and post-dominator trees.
#include "ir/analysis.h"

#include <functional>
#include <queue>

namespace stitch::ir {

Result<std::vector<NodeId>> topological_order(const Graph& graph) {
  std::vector<int32_t> pending(static_cast<size_t>(graph.node_capacity()), 0);
  std::priority_queue<NodeId, std::vector<NodeId>, std::greater<>> ready;
  auto count_inputs = [&](const Node& node) {
    int32_t count = 0;
    auto visit = [&](ValueId input) {
      if (input != kNoId && graph.value(input).producer != kNoId) ++count;
    };
    for (ValueId input : node.inputs) visit(input);
    for (ValueId input : node.implicit_inputs) visit(input);
    return count;
  };
  std::vector<NodeId> live = graph.node_ids();
  for (NodeId id : live) {
    pending[static_cast<size_t>(id)] = count_inputs(graph.node(id));
    if (pending[static_cast<size_t>(id)] == 0) ready.push(id);
  }
  std::vector<NodeId> order;
  order.reserve(live.size());
  while (!ready.empty()) {
    NodeId id = ready.top();
    ready.pop();
    order.push_back(id);
    for (ValueId output : graph.node(id).outputs) {
      if (output == kNoId) continue;
      for (const Use& use : graph.value(output).users) {
        if (--pending[static_cast<size_t>(use.node)] == 0) ready.push(use.node);
      }
    }
  }
  if (order.size() != live.size()) {
    for (NodeId id : live) {
      if (pending[static_cast<size_t>(id)] > 0) {
        return Status::invalid_input("the graph has a cycle through node " +
                                     graph.node(id).display_name() +
                                     "; ONNX graphs must be acyclic: re-export the model");
      }
    }
  }
  return order;
}

}  // namespace stitch::ir
