// The one reader of a reduction's axes (reduction_axes.h).
#include "ir/core/reduction_axes.h"

#include <algorithm>
#include <string>

namespace stitch::ir {

int64_t reduction_axes_input_opset(const Node& node) {
  if (node.op_type == "ArgMax" || node.op_type == "ArgMin") return 0;
  return node.op_type == "ReduceSum" ? 13 : 18;
}

Result<std::vector<int64_t>> reduction_axes(const Graph& graph, const Node& node, bool* noop) {
  STITCH_CHECK(noop != nullptr && !node.inputs.empty() && node.inputs[0] != kNoId)
      << "reduction_axes of " << node.display_name() << " without its input";
  *noop = false;
  const int64_t rank = graph.value(node.inputs[0]).type.rank();
  std::vector<int64_t> axes;
  const int64_t axes_input_from = reduction_axes_input_opset(node);
  if (axes_input_from == 0) {
    axes.push_back(node.int_attribute("axis", 0));
  } else {
    // An unset opset reads as the newest, as everywhere in the registry.
    if (node.opset_or(21) >= axes_input_from) {
      if (node.inputs.size() > 1 && node.inputs[1] != kNoId) {
        const Value& given = graph.value(node.inputs[1]);
        if (given.constant == nullptr) {
          return Status::invalid_input("node " + node.display_name() +
                                       ": the axes input is not a constant; the CUDA emitter "
                                       "needs constant axes (fold the axes computation)");
        }
        axes = given.constant->to_int64_vector();
      }
      if (axes.empty() && node.int_attribute("noop_with_empty_axes", 0) != 0) {
        *noop = true;
        return axes;
      }
    } else {
      axes = node.ints_attribute("axes", {});
    }
    if (axes.empty()) {
      for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
    }
  }
  for (int64_t& axis : axes) {
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) {
      return Status::invalid_input("node " + node.display_name() + ": axis out of range for rank " +
                                   std::to_string(rank) + "; fix the axes");
    }
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}

}  // namespace stitch::ir
