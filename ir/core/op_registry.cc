// The op registry table, the helpers every shape rule shares, and reduction
// classification.
//
// Kind choices beyond DESIGN.md's list:
//  - Softmax, LogSoftmax and the normalizations (Layer, Batch, Instance, Group) are
//    Reduction-kind compound ops: each reduces over some axes and broadcasts the
//    result back; the decomposition pass opens them into Reduce* plus elementwise ops.
//  - Shape, Size, Constant, ConstantOfShape and Range are Opaque: they are constant
//    sources (folded by the simplification passes), not data movement of an input.
//  - MaxPool, AveragePool and grouped Convs are Stencil-kind: windows over their input
//    that the emitter generates (ir/core/window.h); a dense Conv stays Conv-kind.
//  - Registry ops of any kind, Opaque included, run their shape rule; only ops the
//    registry does not know keep the model's types.
#include "ir/core/op_registry.h"

#include <algorithm>
#include <sstream>
#include <unordered_map>

#include "ir/core/reduction_axes.h"
#include "ir/shapes/shape_rules.h"
#include "support/escape.h"

namespace stitch::ir {

std::string_view op_kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::kElementwise:
      return "elementwise";
    case OpKind::kBroadcast:
      return "broadcast";
    case OpKind::kInjective:
      return "injective";
    case OpKind::kView:
      return "view";
    case OpKind::kReduction:
      return "reduction";
    case OpKind::kGemm:
      return "gemm";
    case OpKind::kConv:
      return "conv";
    case OpKind::kStencil:
      return "stencil";
    case OpKind::kOpaque:
      return "opaque";
  }
  return "opaque";
}

std::string_view reduction_kind_name(ReductionKind kind) {
  switch (kind) {
    case ReductionKind::kNone:
      return "none";
    case ReductionKind::kRow:
      return "row";
    case ReductionKind::kColumn:
      return "column";
    case ReductionKind::kAll:
      return "all";
  }
  return "none";
}

Status ShapeInferenceContext::error(const std::string& what) const {
  std::string message;
  message.reserve(model_path.size() + node.name.size() + node.op_type.size() + what.size() + 24);
  if (!model_path.empty()) message += model_path + ": ";
  message += "node ";
  if (node.name.empty()) {
    message += "<unnamed>";
  } else {
    message += support::quote_bounded(node.name);
  }
  message += " (" + node.op_type + "): " + what;
  return Status::invalid_input(std::move(message));
}

namespace {

struct Arity {
  int64_t min_opset;
  int min_inputs;
  int max_inputs;
  int min_outputs;
  int max_outputs;
};

std::string count_range(int min, int max, std::string_view noun) {
  std::string text = min == max ? std::to_string(min)
                     : max < 0  ? "at least " + std::to_string(min)
                                : std::to_string(min) + " to " + std::to_string(max);
  return text + " " + std::string(noun);
}

Status check_arity(const Arity& arity, const ShapeInferenceContext& ctx) {
  const Node& node = ctx.node;
  if (ctx.opset < arity.min_opset) {
    return ctx.error(node.op_type + " exists from opset " + std::to_string(arity.min_opset) +
                     " but the model imports opset " + std::to_string(ctx.opset) +
                     "; raise the model's opset to " + std::to_string(arity.min_opset) +
                     " or replace the node");
  }
  auto inputs = static_cast<int>(ctx.input_types.size());
  if (inputs < arity.min_inputs || (arity.max_inputs >= 0 && inputs > arity.max_inputs)) {
    return ctx.error("has " + std::to_string(inputs) + " inputs but " + node.op_type + " takes " +
                     count_range(arity.min_inputs, arity.max_inputs, "inputs") +
                     "; fix the node's inputs");
  }
  for (int i = 0; i < arity.min_inputs; ++i) {
    if (ctx.input_types[static_cast<size_t>(i)] == nullptr) {
      return shape_rules::missing_input(ctx, static_cast<size_t>(i), "required");
    }
  }
  auto outputs = static_cast<int>(node.outputs.size());
  if (outputs < arity.min_outputs || (arity.max_outputs >= 0 && outputs > arity.max_outputs)) {
    return ctx.error("has " + std::to_string(outputs) + " outputs but " + node.op_type + " has " +
                     count_range(arity.min_outputs, arity.max_outputs, "outputs") +
                     "; fix the node's outputs");
  }
  return Status::ok();
}

const std::vector<OpSchema>& schema_table() {
  static const std::vector<OpSchema> table = [] {
    std::vector<OpSchema> schemas;
    shape_rules::add_elementwise_schemas(schemas);
    shape_rules::add_shape_op_schemas(schemas);
    shape_rules::add_indexing_schemas(schemas);
    shape_rules::add_source_op_schemas(schemas);
    shape_rules::add_reduction_schemas(schemas);
    shape_rules::add_nn_schemas(schemas);
    std::sort(schemas.begin(), schemas.end(),
              [](const OpSchema& a, const OpSchema& b) { return a.op_type < b.op_type; });
    for (size_t i = 1; i < schemas.size(); ++i) {
      STITCH_CHECK(schemas[i - 1].op_type != schemas[i].op_type)
          << "op registered twice: " << schemas[i].op_type;
    }
    // Every rule first checks the opset and the input/output counts, so rules may
    // dereference their required inputs.
    for (OpSchema& schema : schemas) {
      schema.infer = [arity = Arity{schema.min_opset, schema.min_inputs, schema.max_inputs,
                                    schema.min_outputs, schema.max_outputs},
                      rule = std::move(schema.infer)](const ShapeInferenceContext& ctx) {
        Status status = check_arity(arity, ctx);
        if (!status.is_ok()) return Result<ShapeInferenceResult>(std::move(status));
        return rule(ctx);
      };
    }
    return schemas;
  }();
  return table;
}

}  // namespace

bool is_default_domain(std::string_view domain) { return domain.empty() || domain == "ai.onnx"; }

const OpSchema* find_op_schema(std::string_view domain, std::string_view op_type) {
  if (!is_default_domain(domain)) return nullptr;
  // Planning asks for the kind of every node of every candidate pattern (millions
  // of lookups on a 10k-node graph): one hash and one compare instead of a binary
  // search over strings.
  static const std::unordered_map<std::string_view, const OpSchema*> index = [] {
    std::unordered_map<std::string_view, const OpSchema*> map;
    for (const OpSchema& schema : schema_table()) map.emplace(schema.op_type, &schema);
    return map;
  }();
  auto it = index.find(op_type);
  return it == index.end() ? nullptr : it->second;
}

std::vector<std::string_view> registered_op_types() {
  std::vector<std::string_view> types;
  for (const OpSchema& schema : schema_table()) types.push_back(schema.op_type);
  return types;
}

OpKind op_kind(const Node& node) {
  const OpSchema* schema = find_op_schema(node.domain, node.op_type);
  if (schema == nullptr) return OpKind::kOpaque;
  if (schema->kind == OpKind::kConv && node.int_attribute("group", 1) > 1) return OpKind::kStencil;
  return schema->kind;
}

std::optional<std::vector<int64_t>> reduced_axes(const Graph& graph, const Node& node,
                                                 int64_t rank) {
  const std::string& op = node.op_type;
  int64_t opset = node.opset_or(21);  // unset: the newest semantics
  std::vector<int64_t> axes;
  auto range_from = [&](int64_t first) {
    if (first < 0) first += rank;
    if (first < 0 || first > rank) return false;
    for (int64_t a = first; a < rank; ++a) axes.push_back(a);
    return true;
  };
  if (op == "Softmax" || op == "LogSoftmax") {
    int64_t axis = node.int_attribute("axis", opset >= 13 ? -1 : 1);
    if (opset >= 13) {
      axes.push_back(axis);
    } else if (!range_from(axis)) {
      return std::nullopt;
    }
  } else if (op == "LayerNormalization") {
    if (!range_from(node.int_attribute("axis", -1))) return std::nullopt;
  } else if (op == "InstanceNormalization" || op == "GroupNormalization") {
    // GroupNormalization reduces each (n, group) over its channels and spatial dims:
    // contiguous, like InstanceNormalization's spatial rows.
    if (!range_from(op == "GroupNormalization" ? 1 : 2)) return std::nullopt;
  } else if (op == "BatchNormalization") {
    if (node.int_attribute("training_mode", 0) == 0) return std::nullopt;
    for (int64_t a = 0; a < rank; ++a) {
      if (a != 1) axes.push_back(a);
    }
  } else {
    // Reduce*, ArgMax, ArgMin: the one reader of their axes (reduction_axes.h); axes
    // that are no constant, out of range or none at all (an Identity) are not known.
    bool noop = false;
    Result<std::vector<int64_t>> read = reduction_axes(graph, node, &noop);
    if (!read.is_ok() || noop) return std::nullopt;
    return *std::move(read);
  }
  for (int64_t& axis : axes) {
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return std::nullopt;
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}

ReductionKind classify_reduction(const Graph& graph, const Node& node) {
  if (op_kind(node) != OpKind::kReduction || node.inputs.empty() || node.inputs[0] == kNoId) {
    return ReductionKind::kNone;
  }
  const TensorType& type = graph.value(node.inputs[0]).type;
  if (!type.has_shape) return ReductionKind::kNone;
  int64_t rank = type.rank();
  std::optional<std::vector<int64_t>> axes = reduced_axes(graph, node, rank);
  if (!axes) return ReductionKind::kNone;
  // Walk the dims that are not 1, merging runs of reduced / kept axes; unknown dims
  // count as not 1.
  std::vector<bool> groups;  // true: a reduced run
  for (int64_t a = 0; a < rank; ++a) {
    if (type.dims[static_cast<size_t>(a)] == 1) continue;
    bool reduced = std::binary_search(axes->begin(), axes->end(), a);
    if (groups.empty() || groups.back() != reduced) groups.push_back(reduced);
  }
  if (groups.empty() || (groups.size() == 1 && groups[0])) return ReductionKind::kAll;
  // Reducing only size-1 axes yields rows of length 1: still a row reduction.
  if (std::find(groups.begin(), groups.end(), true) == groups.end()) return ReductionKind::kRow;
  return groups.back() ? ReductionKind::kRow : ReductionKind::kColumn;
}

// ---- helpers shared by the rule files -------------------------------------------

namespace shape_rules {

const TensorType* input_type(const Context& ctx, size_t index) {
  return index < ctx.input_types.size() ? ctx.input_types[index] : nullptr;
}

bool has_input(const Context& ctx, size_t index) { return input_type(ctx, index) != nullptr; }

std::string input_label(const Context& ctx, size_t index) {
  std::string label = "input " + std::to_string(index);
  if (index < ctx.input_names.size() && !ctx.input_names[index].empty()) {
    label += " \"";
    label += ctx.input_names[index];
    label += "\"";
  }
  return label;
}

std::optional<std::vector<int64_t>> input_ints(const Context& ctx, size_t index) {
  if (index < ctx.input_int_values.size() && ctx.input_int_values[index]) {
    return ctx.input_int_values[index];
  }
  if (index < ctx.input_values.size() && ctx.input_values[index] != nullptr) {
    const Tensor& tensor = *ctx.input_values[index];
    // Big integer tensors (index tables) are not shape-like: leave them alone.
    if ((dtype_is_integer(tensor.dtype) || tensor.dtype == DType::kBool) &&
        !tensor.external.has_value() && tensor.num_elements() <= kMaxConstantElements &&
        static_cast<int64_t>(tensor.bytes.size()) ==
            tensor.num_elements() * dtype_size(tensor.dtype)) {
      return tensor.to_int64_vector();
    }
  }
  return std::nullopt;
}

Status missing_input(const Context& ctx, size_t index, std::string_view what) {
  return ctx.error("input " + std::to_string(index) + " (" + std::string(what) +
                   ") is missing but " + ctx.node.op_type + " at opset " +
                   std::to_string(ctx.opset) + " needs it; connect a value to input " +
                   std::to_string(index));
}

Status require_input(const Context& ctx, size_t index, std::string_view what) {
  if (has_input(ctx, index)) return Status::ok();
  return missing_input(ctx, index, what);
}

Status missing_attribute(const Context& ctx, std::string_view attribute_name) {
  return ctx.error("required attribute \"" + std::string(attribute_name) + "\" is missing; add it");
}

namespace {

bool in_class(DType dtype, TypeClass type_class) {
  switch (type_class) {
    case TypeClass::kAny:
      return true;
    case TypeClass::kFloat:
      return dtype_is_float(dtype);
    case TypeClass::kNumeric:
      return dtype_is_float(dtype) || dtype_is_integer(dtype);
    case TypeClass::kSignedNumeric:
      return dtype_is_signed(dtype);
    case TypeClass::kBool:
      return dtype == DType::kBool;
    case TypeClass::kInteger:
      return dtype_is_integer(dtype);
  }
  return true;
}

std::string_view class_description(TypeClass type_class) {
  switch (type_class) {
    case TypeClass::kAny:
      return "any type";
    case TypeClass::kFloat:
      return "a floating-point type (f16, bf16, f32, f64)";
    case TypeClass::kNumeric:
      return "a numeric type";
    case TypeClass::kSignedNumeric:
      return "a signed numeric type";
    case TypeClass::kBool:
      return "bool";
    case TypeClass::kInteger:
      return "an integer type (i32 or i64)";
  }
  return "any type";
}

std::string_view class_fix(TypeClass type_class) {
  switch (type_class) {
    case TypeClass::kFloat:
      return "insert a Cast to a float type";
    case TypeClass::kBool:
      return "insert a Cast to bool or a comparison";
    case TypeClass::kInteger:
      return "insert a Cast to int64";
    default:
      return "insert a Cast to a supported type";
  }
}

}  // namespace

Status check_type_class(const Context& ctx, size_t index, TypeClass type_class) {
  const TensorType* type = input_type(ctx, index);
  if (type == nullptr || type->dtype == DType::kUndefined || in_class(type->dtype, type_class)) {
    return Status::ok();
  }
  return ctx.error(input_label(ctx, index) + " is " + std::string(dtype_name(type->dtype)) +
                   " but " + ctx.node.op_type + " needs " +
                   std::string(class_description(type_class)) + "; " +
                   std::string(class_fix(type_class)));
}

Status check_same_dtype(const Context& ctx, size_t index, size_t reference) {
  const TensorType* type = input_type(ctx, index);
  const TensorType* ref = input_type(ctx, reference);
  if (type == nullptr || ref == nullptr || type->dtype == DType::kUndefined ||
      ref->dtype == DType::kUndefined || type->dtype == ref->dtype) {
    return Status::ok();
  }
  return ctx.error(input_label(ctx, index) + " is " + std::string(dtype_name(type->dtype)) +
                   " but " + input_label(ctx, reference) + " is " +
                   std::string(dtype_name(ref->dtype)) +
                   "; insert a Cast so both inputs have one type");
}

DType first_dtype(const Context& ctx, std::initializer_list<size_t> indices) {
  for (size_t index : indices) {
    const TensorType* type = input_type(ctx, index);
    if (type != nullptr && type->dtype != DType::kUndefined) return type->dtype;
  }
  return DType::kUndefined;
}

TensorType unknown_type(DType dtype) { return TensorType{dtype, false, {}}; }

TensorType unknown_dims(DType dtype, int64_t rank) {
  if (rank < 0) return unknown_type(dtype);
  return TensorType::make(dtype, std::vector<int64_t>(static_cast<size_t>(rank), kUnknownDim));
}

ShapeInferenceResult make_result(const Context& ctx) {
  ShapeInferenceResult result;
  result.output_types.resize(ctx.node.outputs.size());
  result.output_int_values.resize(ctx.node.outputs.size());
  return result;
}

std::optional<std::vector<int64_t>> broadcast_dims(const std::vector<int64_t>& a,
                                                   const std::vector<int64_t>& b) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> dims(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x == 1) {
      dims[i] = y;
    } else if (y == 1) {
      dims[i] = x;
    } else if (x < 0) {
      dims[i] = y;  // y is known and not 1, or also unknown
    } else if (y < 0 || x == y) {
      dims[i] = x;
    } else {
      return std::nullopt;
    }
  }
  return dims;
}

Result<TensorType> broadcast_inputs(const Context& ctx, const TensorType& accumulated, size_t index,
                                    DType result_dtype) {
  const TensorType* type = input_type(ctx, index);
  if (type == nullptr || !type->has_shape || !accumulated.has_shape) {
    return unknown_type(result_dtype);
  }
  std::optional<std::vector<int64_t>> dims = broadcast_dims(accumulated.dims, type->dims);
  if (!dims) {
    std::string left = index == 1 ? input_label(ctx, 0) + " " + to_string(accumulated)
                                  : "the broadcast of inputs 0.." + std::to_string(index - 1) +
                                        " " + to_string(accumulated);
    return ctx.error(left + " and " + input_label(ctx, index) + " " + to_string(*type) +
                     " cannot be broadcast; fix the shapes so each pair of trailing dims is "
                     "equal or 1");
  }
  return TensorType::make(result_dtype, std::move(*dims));
}

Result<int64_t> normalize_axis(const Context& ctx, int64_t axis, int64_t rank,
                               std::string_view source, bool inclusive_end) {
  int64_t last = inclusive_end ? rank : rank - 1;
  int64_t normalized = axis < 0 ? axis + rank : axis;
  if (normalized < 0 || normalized > last) {
    return ctx.error("axis " + std::to_string(axis) + " is out of range for rank " +
                     std::to_string(rank) + " (valid: " + std::to_string(-rank) + ".." +
                     std::to_string(last) + "); fix " + std::string(source));
  }
  return normalized;
}

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t count = 1;
  for (size_t i = begin; i < end; ++i) {
    if (dims[i] < 0) return -1;
    count *= dims[i];
  }
  return count;
}

std::string dims_string(const std::vector<int64_t>& dims) {
  return support::list_text(dims.size(),
                            [&](size_t i) { return dims[i] < 0 ? "?" : std::to_string(dims[i]); });
}

std::string values_string(const std::vector<int64_t>& values) {
  return support::list_text(values.size(), [&](size_t i) { return std::to_string(values[i]); });
}

bool small_enough(const TensorType& type) {
  int64_t count = type.num_elements();
  return count >= 0 && count <= kMaxPropagatedElements;
}

int64_t broadcast_source_index(const std::vector<int64_t>& output_dims,
                               const std::vector<int64_t>& operand_dims, int64_t flat) {
  int64_t index = 0;
  int64_t stride = 1;
  size_t offset = output_dims.size() - operand_dims.size();
  for (size_t i = output_dims.size(); i-- > 0;) {
    int64_t coordinate = flat % output_dims[i];
    flat /= output_dims[i];
    if (i < offset) continue;
    int64_t dim = operand_dims[i - offset];
    if (dim != 1) index += coordinate * stride;
    stride *= dim;
  }
  return index;
}

}  // namespace shape_rules
}  // namespace stitch::ir
