// The pass interface of the simplification pipeline.
#include "ir/passes/pass.h"

#include <algorithm>

namespace stitch::ir {

void inherit_origin(Graph& graph, NodeId target, const std::vector<NodeId>& sources) {
  std::vector<std::string> merged = graph.node(target).origin;
  for (NodeId source : sources) {
    for (const std::string& name : graph.node(source).origin) {
      if (std::find(merged.begin(), merged.end(), name) == merged.end()) merged.push_back(name);
    }
  }
  graph.node(target).origin = std::move(merged);
}

}  // namespace stitch::ir
