// The pass interface of the simplification pipeline (DESIGN.md, ir/passes/).
//
// A pass is a class with a name, a one-line summary and `run`, which rewrites the
// graph in place and returns whether it changed anything. Passes keep the graph
// valid for ir::verify after every run: graph input and output names never change,
// dead nodes are removed with Graph::remove_node, and values nothing reads any more
// are removed with Graph::remove_value (DCE sweeps what a pass leaves behind).
//
// Provenance: a node a pass creates carries in Node::origin the original ONNX node
// names of the nodes it stands for (use `inherit_origin`), so later stages can name
// them in the report and in generated CUDA comments.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"

namespace stitch::ir {

struct PassContext {
  int64_t default_opset = 0;     // the model's default-domain opset
  std::string model_path;        // for messages
  // Constant folding never creates a constant larger than this, so weights are not
  // duplicated (e.g. by folding Transpose(W) into a second copy of W).
  int64_t max_folded_constant_bytes = 1 << 20;
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string_view name() const = 0;
  // One line for --list-passes.
  virtual std::string_view summary() const = 0;
  // Rewrites `graph`; true when anything changed.
  virtual Result<bool> run(Graph& graph, PassContext& context) = 0;
};

// The data of `value` when it is known at compile time: an initializer that is not
// also a graph input (the runtime may override those defaults) or the `value` of a
// Constant node, numeric, with all its bytes in memory. Null otherwise, and for kNoId.
const Tensor* constant_data(const Graph& graph, ValueId value);

// Appends the origins of `sources` to `target`'s origin, without duplicates, keeping
// first-seen order.
void inherit_origin(Graph& graph, NodeId target, const std::vector<NodeId>& sources);

}  // namespace stitch::ir
