// The pass interface of the simplification pipeline.
#include "ir/passes/pass.h"

#include <algorithm>

namespace stitch::ir {

const Tensor* constant_data(const Graph& graph, ValueId id) {
  if (id == kNoId) return nullptr;
  const Value& value = graph.value(id);
  const Tensor* tensor = nullptr;
  if (value.is_initializer() && !value.is_graph_input) {
    tensor = value.constant.get();
  } else if (value.producer != kNoId) {
    const Node& producer = graph.node(value.producer);
    const Attribute* attribute = producer.find_attribute("value");
    if (producer.op_type == "Constant" && producer.domain.empty() && attribute != nullptr) {
      tensor = attribute->tensor.get();
    }
  }
  if (tensor == nullptr || dtype_size(tensor->dtype) == 0) return nullptr;
  if (static_cast<int64_t>(tensor->bytes.size()) !=
      tensor->num_elements() * dtype_size(tensor->dtype)) {
    return nullptr;
  }
  return tensor;
}

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
