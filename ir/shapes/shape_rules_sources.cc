// Shape rules of the ops that make constants or read shapes: Shape, Size,
// ConstantOfShape, Constant and Range. Their outputs' values are propagated when
// small, so exporters' Shape -> Gather -> Concat -> Reshape chains end in static
// shapes.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/core/integer_arithmetic.h"
#include "ir/shapes/shape_rules.h"
#include "support/escape.h"

namespace stitch::ir::shape_rules {
namespace {

RuleResult shape_rule(const Context& ctx) {
  const TensorType& input = *input_type(ctx, 0);
  ShapeInferenceResult result = make_result(ctx);
  if (!input.has_shape) {
    result.output_types[0] = unknown_dims(DType::kInt64, 1);
    return result;
  }
  auto [start, end] = shape_op_range(ctx.node, ctx.opset, input.rank());
  int64_t length = std::max<int64_t>(0, end - start);
  result.output_types[0] = TensorType::make(DType::kInt64, {length});
  std::vector<int64_t> dims(input.dims.begin() + start, input.dims.begin() + start + length);
  if (std::all_of(dims.begin(), dims.end(), [](int64_t d) { return d >= 0; })) {
    result.output_int_values[0] = std::move(dims);
  }
  return result;
}

RuleResult size_rule(const Context& ctx) {
  ShapeInferenceResult result = make_result(ctx);
  result.output_types[0] = TensorType::make(DType::kInt64, {});
  int64_t count = input_type(ctx, 0)->num_elements();
  if (count >= 0) result.output_int_values[0] = std::vector<int64_t>{count};
  return result;
}

RuleResult constant_of_shape_rule(const Context& ctx) {
  STITCH_RETURN_IF_ERROR(check_type_class(ctx, 0, TypeClass::kInteger));
  DType dtype = DType::kFloat32;
  bool fill_known = false;
  int64_t fill = 0;
  if (const Attribute* value = ctx.node.find_attribute("value")) {
    if (value->tensor == nullptr || value->tensor->num_elements() != 1) {
      return ctx.error(
          "attribute \"value\" must be a tensor of one element; give a 1-element "
          "tensor");
    }
    dtype = value->tensor->dtype;
    if ((dtype == DType::kInt64 || dtype == DType::kInt32 || dtype == DType::kBool) &&
        static_cast<int64_t>(value->tensor->bytes.size()) == dtype_size(dtype)) {
      fill_known = true;
      fill = value->tensor->int_at(0);
    }
  }
  ShapeInferenceResult result = make_result(ctx);
  const TensorType& shape_type = *input_type(ctx, 0);
  std::optional<std::vector<int64_t>> shape = input_ints(ctx, 0);
  if (!shape) {
    int64_t rank = shape_type.is_static() && shape_type.rank() == 1 ? shape_type.dims[0] : -1;
    result.output_types[0] = unknown_dims(dtype, rank);
    return result;
  }
  for (int64_t dim : *shape) {
    if (dim < 0) {
      return ctx.error("shape " + values_string(*shape) + " has a negative dim; use dims >= 0");
    }
  }
  result.output_types[0] = TensorType::make(dtype, *shape);
  if (fill_known && small_enough(result.output_types[0])) {
    result.output_int_values[0] =
        std::vector<int64_t>(static_cast<size_t>(result.output_types[0].num_elements()), fill);
  }
  return result;
}

RuleResult constant_rule(const Context& ctx) {
  ShapeInferenceResult result = make_result(ctx);
  const Attribute* found = nullptr;
  for (const Attribute& attribute : ctx.node.attributes) {
    if (attribute.name.starts_with("value") || attribute.name == "sparse_value") {
      if (found != nullptr) {
        return ctx.error("has both " + support::quote_bounded(found->name) + " and " +
                         support::quote_bounded(attribute.name) +
                         "; give exactly one value attribute");
      }
      found = &attribute;
    }
  }
  if (found == nullptr) return missing_attribute(ctx, "value");
  const std::string& name = found->name;
  TensorType& type = result.output_types[0];
  std::optional<std::vector<int64_t>>& values = result.output_int_values[0];
  if (name == "value" && found->tensor != nullptr) {
    type = found->tensor->type();
    if ((type.dtype == DType::kInt64 || type.dtype == DType::kInt32) && small_enough(type) &&
        !found->tensor->external &&
        static_cast<int64_t>(found->tensor->bytes.size()) == type.num_bytes()) {
      values = found->tensor->to_int64_vector();
    }
  } else if (name == "value_float") {
    type = TensorType::make(DType::kFloat32, {});
  } else if (name == "value_floats") {
    type = TensorType::make(DType::kFloat32, {static_cast<int64_t>(found->floats.size())});
  } else if (name == "value_int") {
    type = TensorType::make(DType::kInt64, {});
    values = std::vector<int64_t>{found->i};
  } else if (name == "value_ints") {
    type = TensorType::make(DType::kInt64, {static_cast<int64_t>(found->ints.size())});
    if (small_enough(type)) values = found->ints;
  } else if (name == "value_string") {
    type = TensorType::make(DType::kString, {});
  } else if (name == "value_strings") {
    type = TensorType::make(DType::kString, {static_cast<int64_t>(found->strings.size())});
  } else if (name == "sparse_value") {
    // As sparse initializers (onnx_import): no pass, emitter or runtime reads one.
    return ctx.error(
        "attribute \"sparse_value\" holds a sparse tensor, which stitchopt does "
        "not support; give the constant as a dense \"value\" tensor");
  } else {
    return ctx.error("attribute " + support::quote_bounded(name) +
                     " is not a Constant value attribute; use value, "
                     "value_float(s), value_int(s) or value_string(s)");
  }
  return result;
}

RuleResult range_rule(const Context& ctx) {
  for (size_t i = 0; i < 3; ++i) {
    STITCH_RETURN_IF_ERROR(check_type_class(ctx, i, TypeClass::kNumeric));
    STITCH_RETURN_IF_ERROR(check_same_dtype(ctx, i, 0));
    const TensorType& type = *input_type(ctx, i);
    if (type.is_static() && type.num_elements() != 1) {
      return ctx.error(input_label(ctx, i) + " is " + to_string(type) +
                       " but Range's start, limit and delta are scalars; pass scalars");
    }
  }
  DType dtype = first_dtype(ctx, {0, 1, 2});
  ShapeInferenceResult result = make_result(ctx);
  result.output_types[0] = unknown_dims(dtype, 1);
  std::optional<std::vector<int64_t>> ints[3];
  double reals[3];
  bool known = true;
  for (size_t i = 0; i < 3; ++i) {
    ints[i] = input_ints(ctx, i);
    if (ints[i] && ints[i]->size() == 1) {
      reals[i] = static_cast<double>((*ints[i])[0]);
    } else if (i < ctx.input_values.size() && ctx.input_values[i] != nullptr &&
               ctx.input_values[i]->num_elements() == 1 &&
               dtype_is_float(ctx.input_values[i]->dtype)) {
      reals[i] = ctx.input_values[i]->float_at(0);
      ints[i].reset();
    } else {
      known = false;
    }
  }
  if (!known) return result;
  if (reals[2] == 0) return ctx.error("delta is 0; use a non-zero delta");
  // As the reference evaluation: more than 2^31 elements (or NaN) is an error.
  const double estimate = std::ceil((reals[1] - reals[0]) / reals[2]);
  if (!(estimate < 2147483648.0)) {
    return ctx.error("start, limit and delta give more than 2^31 elements (or NaN); fix them");
  }
  int64_t length;
  if (ints[0] && ints[1] && ints[2]) {
    // Exact, in unsigned arithmetic: limit - start may not fit int64.
    const int64_t start = (*ints[0])[0];
    const int64_t limit = (*ints[1])[0];
    const int64_t delta = (*ints[2])[0];
    uint64_t distance = 0;
    uint64_t step = 1;
    if (delta > 0 && limit > start) {
      distance = static_cast<uint64_t>(limit) - static_cast<uint64_t>(start);
      step = static_cast<uint64_t>(delta);
    } else if (delta < 0 && start > limit) {
      distance = static_cast<uint64_t>(start) - static_cast<uint64_t>(limit);
      step = uint64_t{0} - static_cast<uint64_t>(delta);
    }
    length = static_cast<int64_t>(distance / step + (distance % step != 0 ? 1 : 0));
    if (length <= kMaxPropagatedElements && dtype_is_integer(dtype)) {
      std::vector<int64_t> values;
      for (int64_t k = 0; k < length; ++k) {
        values.push_back(wrapping_add(start, wrapping_multiply(k, delta)));
      }
      result.output_int_values[0] = std::move(values);
    }
  } else {
    length = std::max<int64_t>(0, static_cast<int64_t>(estimate));
  }
  result.output_types[0] = TensorType::make(dtype, {length});
  return result;
}

}  // namespace

void add_source_op_schemas(std::vector<OpSchema>& schemas) {
  schemas.push_back({"Shape", OpKind::kOpaque, 7, 1, 1, 1, 1, shape_rule});
  schemas.push_back({"Size", OpKind::kOpaque, 7, 1, 1, 1, 1, size_rule});
  schemas.push_back({"ConstantOfShape", OpKind::kOpaque, 9, 1, 1, 1, 1, constant_of_shape_rule});
  schemas.push_back({"Constant", OpKind::kOpaque, 7, 0, 0, 1, 1, constant_rule});
  schemas.push_back({"Range", OpKind::kOpaque, 11, 3, 3, 1, 1, range_rule});
}

}  // namespace stitch::ir::shape_rules
