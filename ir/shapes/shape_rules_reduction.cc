// Shape rules of reductions (Reduce*, ArgMax/ArgMin) and of the reduction-kind
// compound ops (Softmax, LogSoftmax and the normalizations).
#include <algorithm>

#include "ir/core/reduction_axes.h"
#include "ir/shapes/shape_rules.h"

namespace stitch::ir::shape_rules {
namespace {

// Reduce*: axes are an attribute before reduction_axes_input_opset (ReduceSum: 13, the
// others: 18; ir/core/reduction_axes.h) and an optional input from it, where
// noop_with_empty_axes also applies. The axes here are propagated values, not only
// constants, so the rule reads them itself, by the same opset rule.
ShapeRule reduce_rule() {
  return [](const Context& ctx) -> RuleResult {
    const int64_t axes_input_opset = reduction_axes_input_opset(ctx.node);
    STITCH_RETURN_IF_ERROR(check_type_class(ctx, 0, TypeClass::kNumeric));
    const TensorType& input = *input_type(ctx, 0);
    ShapeInferenceResult result = make_result(ctx);
    bool keep_dims = ctx.node.int_attribute("keepdims", 1) != 0;
    bool axes_from_input = ctx.opset >= axes_input_opset;
    if (!axes_from_input && ctx.input_types.size() > 1) {
      return ctx.error(ctx.node.op_type + " before opset " + std::to_string(axes_input_opset) +
                       " takes axes as an attribute, not an input; use the \"axes\" attribute "
                       "or raise the opset to " +
                       std::to_string(axes_input_opset));
    }
    std::optional<std::vector<int64_t>> axes;
    bool axes_given;
    if (axes_from_input) {
      STITCH_RETURN_IF_ERROR(check_type_class(ctx, 1, TypeClass::kInteger));
      axes_given = has_input(ctx, 1);
      if (axes_given) axes = input_ints(ctx, 1);
    } else {
      const Attribute* attribute = ctx.node.find_attribute("axes");
      axes_given = attribute != nullptr;
      if (axes_given) axes = attribute->ints;
    }
    if (!input.has_shape || (axes_given && !axes)) {
      result.output_types[0] =
          keep_dims ? unknown_dims(input.dtype, input.rank()) : unknown_type(input.dtype);
      return result;
    }
    int64_t rank = input.rank();
    std::vector<bool> reduced(static_cast<size_t>(rank), false);
    if (!axes || axes->empty()) {
      bool noop = axes_from_input && ctx.node.int_attribute("noop_with_empty_axes", 0) != 0;
      if (noop) {
        result.output_types[0] = input;
        return result;
      }
      std::fill(reduced.begin(), reduced.end(), true);
    } else {
      for (int64_t axis : *axes) {
        STITCH_ASSIGN_OR_RETURN(int64_t normalized, normalize_axis(ctx, axis, rank, "the axes"));
        reduced[static_cast<size_t>(normalized)] = true;
      }
    }
    std::vector<int64_t> dims;
    for (size_t i = 0; i < input.dims.size(); ++i) {
      if (!reduced[i]) {
        dims.push_back(input.dims[i]);
      } else if (keep_dims) {
        dims.push_back(1);
      }
    }
    result.output_types[0] = TensorType::make(input.dtype, std::move(dims));
    return result;
  };
}

RuleResult arg_reduce_rule(const Context& ctx) {
  STITCH_RETURN_IF_ERROR(check_type_class(ctx, 0, TypeClass::kNumeric));
  const TensorType& input = *input_type(ctx, 0);
  ShapeInferenceResult result = make_result(ctx);
  bool keep_dims = ctx.node.int_attribute("keepdims", 1) != 0;
  if (!input.has_shape) {
    result.output_types[0] = unknown_type(DType::kInt64);
    return result;
  }
  STITCH_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx, ctx.node.int_attribute("axis", 0),
                                                       input.rank(), "the \"axis\" attribute"));
  std::vector<int64_t> dims = input.dims;
  if (keep_dims) {
    dims[static_cast<size_t>(axis)] = 1;
  } else {
    dims.erase(dims.begin() + axis);
  }
  TensorType output = TensorType::make(DType::kInt64, std::move(dims));
  // An empty axis has no index to return (ONNX leaves it undefined, ONNX Runtime fails
  // at run time); an output without elements needs none.
  if (input.dims[static_cast<size_t>(axis)] == 0 && output.is_static() &&
      output.num_elements() > 0) {
    return ctx.error("axis " + std::to_string(axis) + " of " + input_label(ctx, 0) + " " +
                     to_string(input) + " is empty, so " + ctx.node.op_type +
                     " has no index to return; give the axis at least one element");
  }
  result.output_types[0] = std::move(output);
  return result;
}

// Softmax/LogSoftmax: the default axis is 1 before opset 13 (coercing the input to
// 2-D at that axis) and -1 from 13; the shape is unchanged either way.
RuleResult softmax_rule(const Context& ctx) {
  STITCH_RETURN_IF_ERROR(check_type_class(ctx, 0, TypeClass::kFloat));
  const TensorType& input = *input_type(ctx, 0);
  if (input.has_shape) {
    int64_t axis = ctx.node.int_attribute("axis", ctx.opset >= 13 ? -1 : 1);
    // Before 13 the axis may equal the rank's bound for coercion ([-r, r-1] from 13).
    STITCH_RETURN_IF_ERROR(
        normalize_axis(ctx, axis, input.rank(), "the \"axis\" attribute", ctx.opset < 13).status());
  }
  ShapeInferenceResult result = make_result(ctx);
  result.output_types[0] = input;
  return result;
}

// LayerNormalization (17): Y like X; Mean and InvStdDev keep X's dims before `axis`
// and are 1 from it, in the stash type (float by default).
RuleResult layer_norm_rule(const Context& ctx) {
  STITCH_RETURN_IF_ERROR(check_type_class(ctx, 0, TypeClass::kFloat));
  STITCH_RETURN_IF_ERROR(check_same_dtype(ctx, 1, 0));
  STITCH_RETURN_IF_ERROR(check_same_dtype(ctx, 2, 0));
  const TensorType& input = *input_type(ctx, 0);
  ShapeInferenceResult result = make_result(ctx);
  result.output_types[0] = input;
  auto stash = static_cast<int32_t>(ctx.node.int_attribute("stash_type", 1));
  DType stash_dtype = dtype_is_valid_onnx(stash) ? static_cast<DType>(stash) : DType::kFloat32;
  TensorType statistics = unknown_type(stash_dtype);
  if (input.has_shape) {
    STITCH_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx, ctx.node.int_attribute("axis", -1),
                                                         input.rank(), "the \"axis\" attribute"));
    statistics = TensorType::make(stash_dtype, input.dims);
    std::fill(statistics.dims.begin() + axis, statistics.dims.end(), 1);
  }
  for (size_t i = 1; i < result.output_types.size(); ++i) result.output_types[i] = statistics;
  return result;
}

// BatchNormalization: inference has one output. Before opset 14 the optional
// outputs are mean, var, saved_mean, saved_var; from 14 running_mean and running_var,
// only with training_mode=1. Statistics are [C].
RuleResult batch_norm_rule(const Context& ctx) {
  STITCH_RETURN_IF_ERROR(check_type_class(ctx, 0, TypeClass::kFloat));
  const TensorType& input = *input_type(ctx, 0);
  ShapeInferenceResult result = make_result(ctx);
  size_t outputs = result.output_types.size();
  if (ctx.opset >= 14 && outputs > 1 && ctx.node.int_attribute("training_mode", 0) == 0) {
    return ctx.error("has " + std::to_string(outputs) +
                     " outputs but training_mode is 0, where BatchNormalization has only Y; "
                     "drop the running mean/var outputs or set training_mode=1");
  }
  for (size_t i = 1; i < 5; ++i) {
    STITCH_RETURN_IF_ERROR(check_type_class(ctx, i, TypeClass::kFloat));
    if (ctx.opset < 15) STITCH_RETURN_IF_ERROR(check_same_dtype(ctx, i, 0));
  }
  if (input.has_shape && input.rank() < 2) {
    return ctx.error(input_label(ctx, 0) + " " + to_string(input) + " has rank " +
                     std::to_string(input.rank()) +
                     " but BatchNormalization needs N x C x ...; reshape the input");
  }
  int64_t channels = input.has_shape ? input.dims[1] : kUnknownDim;
  for (size_t i = 1; i < 5; ++i) {
    const TensorType& statistic = *input_type(ctx, i);
    if (statistic.is_static() && channels >= 0 &&
        (statistic.rank() != 1 || statistic.dims[0] != channels)) {
      return ctx.error(input_label(ctx, i) + " is " + to_string(statistic) + " but " +
                       input_label(ctx, 0) + " has " + std::to_string(channels) +
                       " channels; give scale, B, mean and var the shape [" +
                       std::to_string(channels) + "]");
    }
  }
  result.output_types[0] = input;
  DType statistics_dtype = ctx.opset >= 15 ? first_dtype(ctx, {3, 0}) : input.dtype;
  for (size_t i = 1; i < outputs; ++i) {
    result.output_types[i] = TensorType::make(statistics_dtype, {channels});
  }
  return result;
}

RuleResult instance_norm_rule(const Context& ctx) {
  STITCH_RETURN_IF_ERROR(check_type_class(ctx, 0, TypeClass::kFloat));
  STITCH_RETURN_IF_ERROR(check_same_dtype(ctx, 1, 0));
  STITCH_RETURN_IF_ERROR(check_same_dtype(ctx, 2, 0));
  const TensorType& input = *input_type(ctx, 0);
  if (input.has_shape && input.rank() < 3) {
    return ctx.error(input_label(ctx, 0) + " " + to_string(input) + " has rank " +
                     std::to_string(input.rank()) +
                     " but InstanceNormalization needs N x C x D1 x ...; reshape the input");
  }
  ShapeInferenceResult result = make_result(ctx);
  result.output_types[0] = input;
  return result;
}

RuleResult group_norm_rule(const Context& ctx) {
  STITCH_RETURN_IF_ERROR(check_type_class(ctx, 0, TypeClass::kFloat));
  STITCH_RETURN_IF_ERROR(check_same_dtype(ctx, 1, 0));
  STITCH_RETURN_IF_ERROR(check_same_dtype(ctx, 2, 0));
  const Attribute* groups = ctx.node.find_attribute("num_groups");
  if (groups == nullptr) return missing_attribute(ctx, "num_groups");
  const TensorType& input = *input_type(ctx, 0);
  if (input.has_shape) {
    if (input.rank() < 2) {
      return ctx.error(input_label(ctx, 0) + " " + to_string(input) + " has rank " +
                       std::to_string(input.rank()) +
                       " but GroupNormalization needs N x C x ...; reshape the input");
    }
    int64_t channels = input.dims[1];
    if (groups->i <= 0 || (channels >= 0 && channels % groups->i != 0)) {
      return ctx.error("num_groups " + std::to_string(groups->i) + " does not divide the " +
                       std::to_string(channels) +
                       " channels; set num_groups to a divisor of the channel count");
    }
  }
  ShapeInferenceResult result = make_result(ctx);
  result.output_types[0] = input;
  return result;
}

}  // namespace

void add_reduction_schemas(std::vector<OpSchema>& schemas) {
  const OpKind kind = OpKind::kReduction;
  schemas.push_back({"ReduceSum", kind, 7, 1, 2, 1, 1, reduce_rule()});
  for (std::string_view op : {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                              "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"}) {
    schemas.push_back({op, kind, 7, 1, 2, 1, 1, reduce_rule()});
  }
  schemas.push_back({"ArgMax", kind, 7, 1, 1, 1, 1, arg_reduce_rule});
  schemas.push_back({"ArgMin", kind, 7, 1, 1, 1, 1, arg_reduce_rule});
  schemas.push_back({"Softmax", kind, 7, 1, 1, 1, 1, softmax_rule});
  schemas.push_back({"LogSoftmax", kind, 7, 1, 1, 1, 1, softmax_rule});
  schemas.push_back({"LayerNormalization", kind, 17, 2, 3, 1, 3, layer_norm_rule});
  schemas.push_back({"BatchNormalization", kind, 7, 5, 5, 1, 5, batch_norm_rule});
  schemas.push_back({"InstanceNormalization", kind, 7, 3, 3, 1, 1, instance_norm_rule});
  schemas.push_back({"GroupNormalization", kind, 18, 3, 3, 1, 1, group_norm_rule});
}

}  // namespace stitch::ir::shape_rules
