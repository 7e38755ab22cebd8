// Whole-graph type and shape inference with the registry's per-op rules.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

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

// Whether `value`'s type is fully static with a known dtype.
bool has_static_type(const Graph& graph, ValueId value);

// Outputs of live nodes whose type is not static.
int64_t count_unknown_types(const Graph& graph);

// Where unknown types start: nodes with a non-static output whose inputs are all
// static, in topological order, at most `limit`. `reason` is "data-dependent" (the
// op's shape rule needs tensor values not known at compile time: NonZero, Unique,
// TopK's k, a shape or count computed from the inputs' values) or "no shape rule".
struct UnknownTypeRoot {
  std::string node;
  std::string op_type;
  std::string reason;
  std::string display_name;  // `"name" (OpType)`, for messages
};
Result<std::vector<UnknownTypeRoot>> unknown_type_roots(const Graph& graph, size_t limit);

}  // namespace stitch::ir
