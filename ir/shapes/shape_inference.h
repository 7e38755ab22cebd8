// Whole-graph type and shape inference with the registry's per-op rules.
#pragma once

#include <string>

#include "ir/core/graph.h"
#include "ir/core/status.h"

namespace stitch::ir {

struct ShapeInferenceOptions {
  std::string model_path;  // named in error messages
};

// Infers the type of every node output in topological order.
// - Registry ops: the rule's result replaces the value's type. When the model gave a
//   fully static type for the value (Value::type_from_model) that disagrees, this is
//   an error naming the node.
// - Opaque ops: outputs keep the type from the model's value_info; where the model
//   gave none, the type stays unknown (dtype undefined or rank unknown), and every
//   op downstream of it gets unknown types too. Never a crash.
// Preconditions: the graph is acyclic (verify first). Graph input shapes are final.
Status infer_shapes(Graph& graph, int64_t default_opset, const ShapeInferenceOptions& options);

}  // namespace stitch::ir
