// Dead code elimination.
#include "ir/passes/dce.h"

#include <vector>

namespace stitch::ir {

Result<bool> eliminate_dead_code(Graph& graph, PassContext& /*context*/) {
  std::vector<bool> live(static_cast<size_t>(graph.node_capacity()), false);
  std::vector<NodeId> worklist;
  auto mark_producer = [&](ValueId value) {
    if (value == kNoId) return;
    NodeId producer = graph.value(value).producer;
    if (producer == kNoId || live[static_cast<size_t>(producer)]) return;
    live[static_cast<size_t>(producer)] = true;
    worklist.push_back(producer);
  };
  for (ValueId output : graph.graph_outputs()) mark_producer(output);
  while (!worklist.empty()) {
    NodeId id = worklist.back();
    worklist.pop_back();
    const Node& node = graph.node(id);
    for (ValueId input : node.inputs) mark_producer(input);
    for (ValueId input : node.implicit_inputs) mark_producer(input);
  }

  bool changed = false;
  for (NodeId id : graph.node_ids()) {
    if (live[static_cast<size_t>(id)]) continue;
    graph.remove_node(id);
    changed = true;
  }
  for (ValueId id = 0; id < graph.value_capacity(); ++id) {
    changed |= graph.remove_value_if_unused(id);
  }
  return changed;
}

}  // namespace stitch::ir
