// The op registry: for every supported ONNX op, its kind and its type/shape rule.
//
// Kinds follow Apollo's dataflow relations and TVM's pattern kinds (DESIGN.md):
// Elementwise, Broadcast, Injective, View, Reduction, Gemm, Conv, Opaque. Ops the
// registry does not know (other domains, ops outside the list) are Opaque: they pass
// through untouched, and their output types come from the model's value_info.
//
// Kind choices beyond DESIGN.md's list: Softmax, LogSoftmax and the Layer, Batch,
// Instance and Group normalizations are Reduction-kind compound ops (the
// decomposition pass opens them); Shape, Size, Constant, ConstantOfShape, Range,
// CumSum, ScatterND, Einsum, TopK, LSTM, Resize and the pools are Opaque. Every
// registry op, Opaque ones included, has a shape rule; infer_shapes runs it.
//
// Shape rules cover opsets 7 to 21 of the default domain, including the places where
// an attribute became an input (Reduce* axes from 18 and ReduceSum from 13, Split
// sizes and Squeeze/Unsqueeze axes from 13, Slice from 10, Pad from 11, Clip from
// 11, TopK k from 10, Dropout ratio from 12, ...) and semantic changes (Softmax's
// coerce-to-2D before 13).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/core/graph.h"
#include "ir/core/status.h"

namespace stitch::ir {

enum class OpKind {
  kElementwise,
  kBroadcast,
  kInjective,
  kView,
  kReduction,
  kGemm,
  kConv,
  kStencil,
  kOpaque,
};
std::string_view op_kind_name(OpKind kind);  // "elementwise", "broadcast", ...

// Layout of a reduction after merging adjacent reduced / kept axes:
// kRow: the innermost axes are reduced (contiguous rows), kColumn: reduced axes
// are not innermost (strided), kAll: every axis is reduced (a scalar result).
enum class ReductionKind { kNone, kRow, kColumn, kAll };
std::string_view reduction_kind_name(ReductionKind kind);

// What a shape rule sees: the node, its input types, and the values of inputs that
// are known at compile time (initializers, Constant outputs, and small integer
// tensors propagated through shape chains such as Shape -> Gather -> Concat).
struct ShapeInferenceContext {
  const Node& node;
  int64_t opset;                               // the version of the node's domain the model imports
  std::vector<const TensorType*> input_types;  // null for omitted inputs
  std::vector<const Tensor*> input_values;     // null when not known
  std::vector<std::optional<std::vector<int64_t>>> input_int_values;  // propagated
  std::string model_path;                                             // for messages
  // Names of the input values ("" for omitted inputs), for messages; may be empty.
  std::vector<std::string_view> input_names;

  // Error naming the model, the node and the fix, for a fact about the input:
  //   model.onnx: node "add_1" (Add): <what>
  // where `what` is "<what is wrong>; <how to fix>". A node without a name reads
  // `node <unnamed> (Add)`; without a model path the "model.onnx: " prefix is left out.
  Status error(const std::string& what) const;
};

struct ShapeInferenceResult {
  std::vector<TensorType> output_types;
  // Values of small integer outputs known at compile time (data propagation), one
  // entry per output; nullopt where not known.
  std::vector<std::optional<std::vector<int64_t>>> output_int_values;
};

// A rule first checks the node against the schema (opset >= min_opset, input and
// output counts, required inputs present), then types its outputs. It never crashes
// on unknown input types: unknown in, unknown (rank or dims) out, dtype kept where
// it can be inferred. Errors are ShapeInferenceContext::error messages.
using ShapeRule = std::function<Result<ShapeInferenceResult>(const ShapeInferenceContext&)>;

struct OpSchema {
  std::string_view op_type;
  OpKind kind;
  int64_t min_opset;  // first opset (of 7..21) this registry entry accepts
  int min_inputs;
  int max_inputs;  // -1: variadic
  int min_outputs;
  int max_outputs;
  ShapeRule infer;
};

// "" or "ai.onnx": the domains whose ops the registry knows.
bool is_default_domain(std::string_view domain);
// The schema for a default-domain op, or null (the op is Opaque).
const OpSchema* find_op_schema(std::string_view domain, std::string_view op_type);
// Every op type the registry knows, sorted.
std::vector<std::string_view> registered_op_types();
// The input dims [start, end) a Shape node returns: from opset 15 its start and end
// attributes, negative ones counted from the back, both clamped to [0, rank]; the
// range is empty when end <= start.
std::pair<int64_t, int64_t> shape_op_range(const Node& node, int64_t opset, int64_t rank);
// The kind of a node: its schema's, Opaque for unknown ops and other domains, and
// Stencil for a grouped Conv (group > 1; ir/core/window.h), whose schema kind is Conv.
OpKind op_kind(const Node& node);
// The reduced axes of a reduction node of input rank `rank` (normalized, sorted),
// or nullopt when they are not known at compile time or the node reduces nothing.
// Reduce*, ArgMax and ArgMin are read by ir::reduction_axes (reduction_axes.h); the
// compound reductions (Softmax, the normalizations) by their own axis rules here.
std::optional<std::vector<int64_t>> reduced_axes(const Graph& graph, const Node& node,
                                                 int64_t rank);
// Row/column/all classification of a Reduction node from its input shape and axes;
// kNone for non-reductions or when shapes are unknown.
ReductionKind classify_reduction(const Graph& graph, const Node& node);

}  // namespace stitch::ir
