// Shape rules of data-movement and shape ops: Expand, Transpose, Reshape, Flatten,
// Squeeze, Unsqueeze, Concat, Split, Slice, Pad, Tile, Trilu and CumSum (the constant
// sources are in shape_rules_sources.cc, the indexing ops Gather, GatherElements and
// ScatterND in shape_rules_indexing.cc). Most
// of them also propagate the values of small integer tensors, which turns exporters' Shape ->
// Gather -> Unsqueeze -> Concat -> Reshape chains into static shapes.
#include <algorithm>
#include <cmath>

#include "ir/core/integer_arithmetic.h"
#include "ir/shapes/shape_rules.h"
#include "support/escape.h"

namespace stitch::ir::shape_rules {
namespace {

// Axes given by an attribute (before `input_opset`) or by input `input_index`.
struct Axes {
  bool given = false;                          // the node specifies axes at all
  std::optional<std::vector<int64_t>> values;  // known values
  int64_t count = -1;                          // number of axes when known
};

Axes read_axes(const Context& ctx, int64_t input_opset, size_t input_index,
               std::string_view attribute_name = "axes") {
  Axes axes;
  if (ctx.opset < input_opset) {
    const Attribute* attribute = ctx.node.find_attribute(attribute_name);
    if (attribute != nullptr) {
      axes.given = true;
      axes.values = attribute->ints;
    }
  } else if (has_input(ctx, input_index)) {
    axes.given = true;
    axes.values = input_ints(ctx, input_index);
    const TensorType* type = input_type(ctx, input_index);
    if (type->is_static() && type->rank() == 1) axes.count = type->dims[0];
  }
  if (axes.values) axes.count = static_cast<int64_t>(axes.values->size());
  return axes;
}

// Normalizes every axis into [0, rank); error on out-of-range or repeated axes.
Result<std::vector<int64_t>> normalize_axes(const Context& ctx, std::vector<int64_t> axes,
                                            int64_t rank, std::string_view source) {
  for (int64_t& axis : axes) {
    STITCH_ASSIGN_OR_RETURN(axis, normalize_axis(ctx, axis, rank, source));
  }
  std::vector<int64_t> sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    return ctx.error("axes " + values_string(axes) + " repeat an axis; list each axis once in " +
                     std::string(source));
  }
  return axes;
}

std::optional<std::vector<int64_t>> values_if_small(const Context& ctx, size_t index,
                                                    const TensorType& output) {
  if (!small_enough(output)) return std::nullopt;
  return input_ints(ctx, index);
}

RuleResult expand_rule(const Context& ctx) {
  STITCH_RETURN_IF_ERROR(check_type_class(ctx, 1, TypeClass::kInteger));
  const TensorType& input = *input_type(ctx, 0);
  const TensorType& shape_type = *input_type(ctx, 1);
  ShapeInferenceResult result = make_result(ctx);
  std::optional<std::vector<int64_t>> shape = input_ints(ctx, 1);
  if (!input.has_shape) {
    result.output_types[0] = unknown_type(input.dtype);
    return result;
  }
  if (!shape) {
    int64_t rank = shape_type.is_static() && shape_type.rank() == 1
                       ? std::max<int64_t>(shape_type.dims[0], input.rank())
                       : -1;
    result.output_types[0] = unknown_dims(input.dtype, rank);
    return result;
  }
  std::optional<std::vector<int64_t>> dims = broadcast_dims(input.dims, *shape);
  if (!dims) {
    return ctx.error(input_label(ctx, 0) + " " + to_string(input) + " cannot be expanded to " +
                     values_string(*shape) +
                     "; fix the shape input so each pair of trailing dims is equal or 1");
  }
  result.output_types[0] = TensorType::make(input.dtype, std::move(*dims));
  std::optional<std::vector<int64_t>> values = input_ints(ctx, 0);
  if (values) {
    result.output_int_values[0] = broadcast_eval(
        {&input}, {&*values}, result.output_types[0],
        [](const std::vector<int64_t>& v) -> std::optional<int64_t> { return v[0]; });
  }
  return result;
}

RuleResult transpose_rule(const Context& ctx) {
  const TensorType& input = *input_type(ctx, 0);
  ShapeInferenceResult result = make_result(ctx);
  if (!input.has_shape) {
    result.output_types[0] = unknown_type(input.dtype);
    return result;
  }
  int64_t rank = input.rank();
  std::vector<int64_t> perm;
  if (const Attribute* attribute = ctx.node.find_attribute("perm")) {
    perm = attribute->ints;
  } else {
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  }
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  bool valid = static_cast<int64_t>(perm.size()) == rank;
  for (int64_t& axis : perm) {
    if (!valid) break;
    if (axis < 0) axis += rank;
    valid = axis >= 0 && axis < rank && !seen[static_cast<size_t>(axis)];
    if (valid) seen[static_cast<size_t>(axis)] = true;
  }
  if (!valid) {
    return ctx.error("perm " + values_string(ctx.node.ints_attribute("perm", {})) +
                     " is not a permutation of the " + std::to_string(rank) + " axes of " +
                     input_label(ctx, 0) + " " + to_string(input) +
                     "; list every axis exactly once");
  }
  std::vector<int64_t> dims;
  dims.reserve(perm.size());
  for (int64_t axis : perm) dims.push_back(input.dims[static_cast<size_t>(axis)]);
  result.output_types[0] = TensorType::make(input.dtype, std::move(dims));
  if (rank <= 1) result.output_int_values[0] = values_if_small(ctx, 0, result.output_types[0]);
  return result;
}

RuleResult reshape_rule(const Context& ctx) {
  STITCH_RETURN_IF_ERROR(check_type_class(ctx, 1, TypeClass::kInteger));
  const TensorType& input = *input_type(ctx, 0);
  const TensorType& shape_type = *input_type(ctx, 1);
  ShapeInferenceResult result = make_result(ctx);
  std::optional<std::vector<int64_t>> shape = input_ints(ctx, 1);
  if (!shape) {
    int64_t rank = shape_type.is_static() && shape_type.rank() == 1 ? shape_type.dims[0] : -1;
    result.output_types[0] = unknown_dims(input.dtype, rank);
    return result;
  }
  bool allow_zero = ctx.opset >= 14 && ctx.node.int_attribute("allowzero", 0) != 0;
  std::vector<int64_t> dims(shape->size());
  int64_t inferred = -1;
  bool has_zero = false;
  for (size_t i = 0; i < shape->size(); ++i) {
    int64_t v = (*shape)[i];
    if (v == 0 && !allow_zero) {
      if (input.has_shape && static_cast<int64_t>(i) >= input.rank()) {
        return ctx.error("shape " + values_string(*shape) +
                         " has 0 (copy the input dim) at index " + std::to_string(i) + " but " +
                         input_label(ctx, 0) + " is " + to_string(input) +
                         "; give that dim explicitly");
      }
      dims[i] = input.has_shape ? input.dims[i] : kUnknownDim;
    } else if (v == -1) {
      if (inferred >= 0) {
        return ctx.error("shape " + values_string(*shape) +
                         " has more than one -1; give every dim but one explicitly");
      }
      inferred = static_cast<int64_t>(i);
      dims[i] = kUnknownDim;
    } else if (v < -1) {
      return ctx.error("shape " + values_string(*shape) + " has the invalid dim " +
                       std::to_string(v) + "; use -1 to infer a dim or a size >= 0");
    } else {
      has_zero = has_zero || v == 0;
      dims[i] = v;
    }
  }
  if (allow_zero && has_zero && inferred >= 0) {
    return ctx.error("shape " + values_string(*shape) +
                     " has both 0 and -1 with allowzero=1; give the dims explicitly");
  }
  int64_t total = input.num_elements();
  if (inferred >= 0) {
    dims[static_cast<size_t>(inferred)] = kUnknownDim;
    int64_t known = 1;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (static_cast<int64_t>(i) == inferred) continue;
      known = dims[i] < 0 || known < 0 ? -1 : known * dims[i];
    }
    if (total == 0 && known == 0) {
      // A 0 beside the -1 (copied from an empty input dim: allowzero's literal 0 is
      // refused above): every size of the -1 dim fits.
      return ctx.error("shape " + values_string(*shape) + " leaves dim " +
                       std::to_string(inferred) +
                       " (-1) to infer, but the other dims multiply to 0, so every size fits the 0 "
                       "elements of " +
                       input_label(ctx, 0) + " " + to_string(input) +
                       "; give that dim explicitly instead of -1");
    }
    if (total >= 0 && known > 0) {
      if (total % known != 0) {
        return ctx.error("cannot reshape " + input_label(ctx, 0) + " " + to_string(input) + " (" +
                         std::to_string(total) + " elements) to " + values_string(*shape) + ": " +
                         std::to_string(total) + " is not a multiple of " + std::to_string(known) +
                         "; fix the shape input so the element counts match");
      }
      dims[static_cast<size_t>(inferred)] = total / known;
    }
  } else {
    int64_t count = product(dims, 0, dims.size());
    if (total >= 0 && count >= 0 && total != count) {
      return ctx.error("cannot reshape " + input_label(ctx, 0) + " " + to_string(input) + " (" +
                       std::to_string(total) + " elements) to " + values_string(*shape) + " (" +
                       std::to_string(count) +
                       " elements); fix the shape input so the element counts match");
    }
  }
  result.output_types[0] = TensorType::make(input.dtype, std::move(dims));
  result.output_int_values[0] = values_if_small(ctx, 0, result.output_types[0]);
  return result;
}

RuleResult flatten_rule(const Context& ctx) {
  const TensorType& input = *input_type(ctx, 0);
  ShapeInferenceResult result = make_result(ctx);
  if (!input.has_shape) {
    result.output_types[0] = unknown_dims(input.dtype, 2);
    return result;
  }
  STITCH_ASSIGN_OR_RETURN(int64_t axis,
                          normalize_axis(ctx, ctx.node.int_attribute("axis", 1), input.rank(),
                                         "the \"axis\" attribute", true));
  auto split = static_cast<size_t>(axis);
  result.output_types[0] = TensorType::make(
      input.dtype, {product(input.dims, 0, split), product(input.dims, split, input.dims.size())});
  result.output_int_values[0] = values_if_small(ctx, 0, result.output_types[0]);
  return result;
}

RuleResult squeeze_rule(const Context& ctx) {
  const TensorType& input = *input_type(ctx, 0);
  ShapeInferenceResult result = make_result(ctx);
  Axes axes = read_axes(ctx, 13, 1);
  if (!input.has_shape || (axes.given && !axes.values)) {
    result.output_types[0] = unknown_type(input.dtype);
    return result;
  }
  std::vector<bool> squeezed(input.dims.size(), false);
  if (axes.given) {
    STITCH_ASSIGN_OR_RETURN(std::vector<int64_t> normalized,
                            normalize_axes(ctx, *axes.values, input.rank(), "the axes"));
    for (int64_t axis : normalized) {
      int64_t dim = input.dims[static_cast<size_t>(axis)];
      if (dim >= 0 && dim != 1) {
        return ctx.error("cannot squeeze axis " + std::to_string(axis) + " of " +
                         input_label(ctx, 0) + " " + to_string(input) + ": its size is " +
                         std::to_string(dim) + ", not 1; remove the axis from the axes");
      }
      squeezed[static_cast<size_t>(axis)] = true;
    }
  } else {
    for (size_t i = 0; i < input.dims.size(); ++i) {
      if (input.dims[i] < 0) {
        // Whether an unknown dim is 1 decides the rank.
        result.output_types[0] = unknown_type(input.dtype);
        return result;
      }
      squeezed[i] = input.dims[i] == 1;
    }
  }
  std::vector<int64_t> dims;
  for (size_t i = 0; i < input.dims.size(); ++i) {
    if (!squeezed[i]) dims.push_back(input.dims[i]);
  }
  result.output_types[0] = TensorType::make(input.dtype, std::move(dims));
  result.output_int_values[0] = values_if_small(ctx, 0, result.output_types[0]);
  return result;
}

RuleResult unsqueeze_rule(const Context& ctx) {
  const TensorType& input = *input_type(ctx, 0);
  ShapeInferenceResult result = make_result(ctx);
  Axes axes = read_axes(ctx, 13, 1);
  if (!axes.given) {
    if (ctx.opset < 13) return missing_attribute(ctx, "axes");
    return missing_input(ctx, 1, "axes");
  }
  if (!input.has_shape || !axes.values) {
    result.output_types[0] = unknown_dims(
        input.dtype, input.has_shape && axes.count >= 0 ? input.rank() + axes.count : -1);
    return result;
  }
  int64_t rank = input.rank() + axes.count;
  STITCH_ASSIGN_OR_RETURN(std::vector<int64_t> normalized,
                          normalize_axes(ctx, *axes.values, rank, "the axes"));
  std::vector<bool> inserted(static_cast<size_t>(rank), false);
  for (int64_t axis : normalized) inserted[static_cast<size_t>(axis)] = true;
  std::vector<int64_t> dims;
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i) {
    dims.push_back(inserted[static_cast<size_t>(i)] ? 1 : input.dims[next++]);
  }
  result.output_types[0] = TensorType::make(input.dtype, std::move(dims));
  result.output_int_values[0] = values_if_small(ctx, 0, result.output_types[0]);
  return result;
}

RuleResult concat_rule(const Context& ctx) {
  const Attribute* axis_attribute = ctx.node.find_attribute("axis");
  if (axis_attribute == nullptr) return missing_attribute(ctx, "axis");
  size_t count = ctx.input_types.size();
  const TensorType* ranked = nullptr;
  for (size_t i = 0; i < count; ++i) {
    if (!has_input(ctx, i)) return missing_input(ctx, i, "operand");
    STITCH_RETURN_IF_ERROR(check_same_dtype(ctx, i, 0));
    if (ranked == nullptr && ctx.input_types[i]->has_shape) ranked = ctx.input_types[i];
  }
  DType dtype = first_dtype(ctx, {0});
  for (size_t i = 1; dtype == DType::kUndefined && i < count; ++i)
    dtype = ctx.input_types[i]->dtype;
  ShapeInferenceResult result = make_result(ctx);
  if (ranked == nullptr) {
    result.output_types[0] = unknown_type(dtype);
    return result;
  }
  int64_t rank = ranked->rank();
  STITCH_ASSIGN_OR_RETURN(int64_t axis,
                          normalize_axis(ctx, axis_attribute->i, rank, "the \"axis\" attribute"));
  std::vector<int64_t> dims = ranked->dims;
  dims[static_cast<size_t>(axis)] = 0;
  for (size_t i = 0; i < count; ++i) {
    const TensorType& type = *ctx.input_types[i];
    if (!type.has_shape) {
      dims[static_cast<size_t>(axis)] = kUnknownDim;
      continue;
    }
    if (type.rank() != rank) {
      return ctx.error(input_label(ctx, i) + " " + to_string(type) + " has rank " +
                       std::to_string(type.rank()) + " but " + input_label(ctx, 0) + " has rank " +
                       std::to_string(rank) + "; give every input of Concat the same rank");
    }
    for (int64_t d = 0; d < rank; ++d) {
      int64_t dim = type.dims[static_cast<size_t>(d)];
      int64_t& out = dims[static_cast<size_t>(d)];
      if (d == axis) {
        out = out < 0 || dim < 0 ? kUnknownDim : out + dim;
      } else if (out < 0) {
        out = dim;
      } else if (dim >= 0 && dim != out) {
        return ctx.error(input_label(ctx, i) + " " + to_string(type) + " differs from " +
                         to_string(*ranked) + " in dim " + std::to_string(d) +
                         ", which is not the concatenation axis " + std::to_string(axis) +
                         "; make every dim but the axis equal");
      }
    }
  }
  result.output_types[0] = TensorType::make(dtype, dims);
  if (!small_enough(result.output_types[0])) return result;
  // Values: copy blocks of `inner` elements from each input in turn.
  std::vector<std::vector<int64_t>> values;
  for (size_t i = 0; i < count; ++i) {
    std::optional<std::vector<int64_t>> v = input_ints(ctx, i);
    if (!v || !ctx.input_types[i]->is_static()) return result;
    values.push_back(std::move(*v));
  }
  int64_t outer = product(dims, 0, static_cast<size_t>(axis));
  std::vector<int64_t> out;
  for (int64_t o = 0; o < outer; ++o) {
    for (size_t i = 0; i < count; ++i) {
      int64_t block = product(ctx.input_types[i]->dims, static_cast<size_t>(axis), dims.size());
      auto begin = values[i].begin() + o * block;
      out.insert(out.end(), begin, begin + block);
    }
  }
  result.output_int_values[0] = std::move(out);
  return result;
}

RuleResult split_rule(const Context& ctx) {
  const TensorType& input = *input_type(ctx, 0);
  ShapeInferenceResult result = make_result(ctx);
  auto outputs = static_cast<int64_t>(ctx.node.outputs.size());
  if (!input.has_shape) {
    for (TensorType& type : result.output_types) type = unknown_type(input.dtype);
    return result;
  }
  STITCH_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx, ctx.node.int_attribute("axis", 0),
                                                       input.rank(), "the \"axis\" attribute"));
  int64_t dim = input.dims[static_cast<size_t>(axis)];
  Axes split = read_axes(ctx, 13, 1, "split");
  std::vector<int64_t> sizes(static_cast<size_t>(outputs), kUnknownDim);
  if (split.values) {
    if (static_cast<int64_t>(split.values->size()) != outputs) {
      return ctx.error("split " + values_string(*split.values) + " has " +
                       std::to_string(split.values->size()) + " sizes but the node has " +
                       std::to_string(outputs) + " outputs; give one size per output");
    }
    int64_t sum = 0;
    for (int64_t size : *split.values) {
      if (size < 0) {
        return ctx.error("split " + values_string(*split.values) +
                         " has a negative size; give sizes >= 0");
      }
      sum += size;
    }
    if (dim >= 0 && sum != dim) {
      return ctx.error("split " + values_string(*split.values) + " sums to " + std::to_string(sum) +
                       " but axis " + std::to_string(axis) + " of " + input_label(ctx, 0) + " " +
                       to_string(input) + " has size " + std::to_string(dim) +
                       "; make the sizes add up to the axis");
    }
    sizes = *split.values;
  } else if (!split.given && dim >= 0) {
    const Attribute* num_outputs = ctx.node.find_attribute("num_outputs");
    if (ctx.opset >= 18 && num_outputs != nullptr) {
      if (num_outputs->i != outputs || outputs <= 0) {
        return ctx.error("attribute num_outputs is " + std::to_string(num_outputs->i) +
                         " but the node has " + std::to_string(outputs) +
                         " outputs; make them agree");
      }
      // From opset 18 the last chunk may be smaller.
      int64_t chunk = (dim + outputs - 1) / outputs;
      for (int64_t i = 0; i < outputs; ++i) {
        sizes[static_cast<size_t>(i)] = std::max<int64_t>(0, std::min(chunk, dim - i * chunk));
      }
    } else {
      if (outputs <= 0 || dim % outputs != 0) {
        return ctx.error("axis " + std::to_string(axis) + " of " + input_label(ctx, 0) + " " +
                         to_string(input) + " (size " + std::to_string(dim) +
                         ") does not split evenly into " + std::to_string(outputs) +
                         " outputs; give the split sizes explicitly");
      }
      std::fill(sizes.begin(), sizes.end(), dim / outputs);
    }
  }
  std::optional<std::vector<int64_t>> values;
  if (input.rank() == 1 && input.is_static()) values = input_ints(ctx, 0);
  int64_t offset = 0;
  for (int64_t i = 0; i < outputs; ++i) {
    std::vector<int64_t> dims = input.dims;
    int64_t size = sizes[static_cast<size_t>(i)];
    dims[static_cast<size_t>(axis)] = size;
    result.output_types[static_cast<size_t>(i)] = TensorType::make(input.dtype, std::move(dims));
    if (values && size >= 0 && offset >= 0) {
      result.output_int_values[static_cast<size_t>(i)] =
          std::vector<int64_t>(values->begin() + offset, values->begin() + offset + size);
    }
    offset = size < 0 || offset < 0 ? -1 : offset + size;
  }
  return result;
}

// One sliced axis: the output length for `dim` (known) and the first index.
struct SliceRange {
  int64_t start;
  int64_t length;
};

SliceRange clamp_slice(int64_t start, int64_t end, int64_t step, int64_t dim) {
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  int64_t length;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    length = end > start ? (end - start + step - 1) / step : 0;
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    length = start > end ? (start - end + (-step) - 1) / (-step) : 0;
  }
  return {start, length};
}

RuleResult slice_rule(const Context& ctx) {
  const TensorType& input = *input_type(ctx, 0);
  ShapeInferenceResult result = make_result(ctx);
  std::optional<std::vector<int64_t>> starts;
  std::optional<std::vector<int64_t>> ends;
  std::optional<std::vector<int64_t>> axes;
  std::optional<std::vector<int64_t>> steps;
  bool axes_given;
  if (ctx.opset < 10) {
    const Attribute* starts_attribute = ctx.node.find_attribute("starts");
    const Attribute* ends_attribute = ctx.node.find_attribute("ends");
    if (starts_attribute == nullptr) return missing_attribute(ctx, "starts");
    if (ends_attribute == nullptr) return missing_attribute(ctx, "ends");
    starts = starts_attribute->ints;
    ends = ends_attribute->ints;
    const Attribute* axes_attribute = ctx.node.find_attribute("axes");
    axes_given = axes_attribute != nullptr;
    if (axes_given) axes = axes_attribute->ints;
  } else {
    STITCH_RETURN_IF_ERROR(require_input(ctx, 1, "starts"));
    STITCH_RETURN_IF_ERROR(require_input(ctx, 2, "ends"));
    for (size_t i = 1; i < 5; ++i)
      STITCH_RETURN_IF_ERROR(check_type_class(ctx, i, TypeClass::kInteger));
    starts = input_ints(ctx, 1);
    ends = input_ints(ctx, 2);
    axes_given = has_input(ctx, 3);
    if (axes_given) axes = input_ints(ctx, 3);
    if (has_input(ctx, 4)) steps = input_ints(ctx, 4);
  }
  if (!input.has_shape) {
    result.output_types[0] = unknown_type(input.dtype);
    return result;
  }
  int64_t rank = input.rank();
  std::vector<int64_t> dims = input.dims;
  bool steps_known = steps.has_value() || !has_input(ctx, 4) || ctx.opset < 10;
  if (axes_given && !axes) {
    result.output_types[0] = unknown_dims(input.dtype, rank);
    return result;
  }
  if (!starts || !ends || !steps_known) {
    if (axes) {
      STITCH_ASSIGN_OR_RETURN(std::vector<int64_t> normalized,
                              normalize_axes(ctx, *axes, rank, "the axes"));
      for (int64_t axis : normalized) dims[static_cast<size_t>(axis)] = kUnknownDim;
      result.output_types[0] = TensorType::make(input.dtype, std::move(dims));
    } else {
      result.output_types[0] = unknown_dims(input.dtype, rank);
    }
    return result;
  }
  size_t count = starts->size();
  if (!axes) {
    axes.emplace();
    for (size_t i = 0; i < count; ++i) axes->push_back(static_cast<int64_t>(i));
  }
  if (!steps) steps = std::vector<int64_t>(count, 1);
  if (ends->size() != count || axes->size() != count || steps->size() != count) {
    return ctx.error("starts " + values_string(*starts) + ", ends " + values_string(*ends) +
                     ", axes " + values_string(*axes) + " and steps " + values_string(*steps) +
                     " differ in length; give one entry per sliced axis in each");
  }
  STITCH_ASSIGN_OR_RETURN(std::vector<int64_t> normalized,
                          normalize_axes(ctx, *axes, rank, "the axes"));
  std::vector<SliceRange> ranges(static_cast<size_t>(rank), SliceRange{0, -1});
  for (size_t i = 0; i < count; ++i) {
    int64_t step = (*steps)[i];
    if (step == 0) return ctx.error("a step is 0; use a non-zero step");
    auto axis = static_cast<size_t>(normalized[i]);
    if (dims[axis] < 0) continue;
    SliceRange range = clamp_slice((*starts)[i], (*ends)[i], step, dims[axis]);
    dims[axis] = range.length;
    if (rank == 1) ranges[0] = range;
  }
  result.output_types[0] = TensorType::make(input.dtype, dims);
  if (rank == 1 && count == 1 && small_enough(result.output_types[0]) && input.is_static()) {
    std::optional<std::vector<int64_t>> values = input_ints(ctx, 0);
    if (values) {
      std::vector<int64_t> out;
      for (int64_t k = 0; k < dims[0]; ++k) {
        out.push_back((*values)[static_cast<size_t>(ranges[0].start + k * (*steps)[0])]);
      }
      result.output_int_values[0] = std::move(out);
    }
  }
  return result;
}

// Pad: pads (and the constant) are attributes before opset 11 and inputs after;
// axes (opset 18) limits the padded axes.
RuleResult pad_rule(const Context& ctx) {
  const TensorType& input = *input_type(ctx, 0);
  ShapeInferenceResult result = make_result(ctx);
  std::optional<std::vector<int64_t>> pads;
  Axes axes;
  if (ctx.opset < 11) {
    const Attribute* attribute = ctx.node.find_attribute("pads");
    if (attribute == nullptr) return missing_attribute(ctx, "pads");
    pads = attribute->ints;
  } else {
    STITCH_RETURN_IF_ERROR(require_input(ctx, 1, "pads"));
    STITCH_RETURN_IF_ERROR(check_type_class(ctx, 1, TypeClass::kInteger));
    STITCH_RETURN_IF_ERROR(check_same_dtype(ctx, 2, 0));
    pads = input_ints(ctx, 1);
    if (ctx.opset >= 18) axes = read_axes(ctx, 18, 3);
  }
  if (!input.has_shape) {
    result.output_types[0] = unknown_type(input.dtype);
    return result;
  }
  int64_t rank = input.rank();
  std::vector<int64_t> padded_axes;
  if (axes.given) {
    if (!axes.values) {
      result.output_types[0] = unknown_dims(input.dtype, rank);
      return result;
    }
    STITCH_ASSIGN_OR_RETURN(padded_axes, normalize_axes(ctx, *axes.values, rank, "the axes"));
  } else {
    for (int64_t a = 0; a < rank; ++a) padded_axes.push_back(a);
  }
  const TensorType* pads_type = ctx.opset < 11 ? nullptr : input_type(ctx, 1);
  if (!pads && pads_type != nullptr && pads_type->is_static() && pads_type->rank() == 1 &&
      pads_type->dims[0] != 2 * static_cast<int64_t>(padded_axes.size())) {
    // Too long to read (or computed), but its length is known and wrong.
    return ctx.error(input_label(ctx, 1) + " " + to_string(*pads_type) + " has " +
                     std::to_string(pads_type->dims[0]) + " entries but " +
                     std::to_string(padded_axes.size()) +
                     " axes are padded; give a begin and an end pad per axis (" +
                     std::to_string(2 * padded_axes.size()) + " entries)");
  }
  if (!pads) {
    std::vector<int64_t> dims = input.dims;
    for (int64_t axis : padded_axes) dims[static_cast<size_t>(axis)] = kUnknownDim;
    result.output_types[0] = TensorType::make(input.dtype, std::move(dims));
    return result;
  }
  size_t count = padded_axes.size();
  if (pads->size() != 2 * count) {
    return ctx.error("pads " + values_string(*pads) + " has " + std::to_string(pads->size()) +
                     " entries but " + std::to_string(count) +
                     " axes are padded; give a begin and an end pad per axis (" +
                     std::to_string(2 * count) + " entries)");
  }
  const std::string mode = ctx.node.string_attribute("mode", "constant");
  std::vector<int64_t> dims = input.dims;
  for (size_t i = 0; i < count; ++i) {
    int64_t& dim = dims[static_cast<size_t>(padded_axes[i])];
    if (dim < 0) continue;
    const bool empty = dim == 0;
    if (__builtin_add_overflow(dim, (*pads)[i], &dim) ||
        __builtin_add_overflow(dim, (*pads)[i + count], &dim)) {
      return ctx.error("pads " + values_string(*pads) + " make axis " +
                       std::to_string(padded_axes[i]) +
                       " longer than 2^63 elements; use smaller pads");
    }
    // As the reference evaluation: edge, reflect and wrap have nothing to copy from.
    if (empty && dim > 0 && mode != "constant") {
      return ctx.error("pads an empty axis in mode " + support::quote_bounded(mode) +
                       "; use mode constant");
    }
    if (dim < 0) {
      return ctx.error("pads " + values_string(*pads) + " remove more than axis " +
                       std::to_string(padded_axes[i]) + " holds; use smaller negative pads");
    }
  }
  result.output_types[0] = TensorType::make(input.dtype, std::move(dims));
  return result;
}

RuleResult tile_rule(const Context& ctx) {
  STITCH_RETURN_IF_ERROR(check_type_class(ctx, 1, TypeClass::kInteger));
  const TensorType& input = *input_type(ctx, 0);
  ShapeInferenceResult result = make_result(ctx);
  std::optional<std::vector<int64_t>> repeats = input_ints(ctx, 1);
  if (!input.has_shape) {
    result.output_types[0] = unknown_type(input.dtype);
    return result;
  }
  if (!repeats) {
    result.output_types[0] = unknown_dims(input.dtype, input.rank());
    return result;
  }
  if (static_cast<int64_t>(repeats->size()) != input.rank()) {
    return ctx.error("repeats " + values_string(*repeats) + " has " +
                     std::to_string(repeats->size()) + " entries but " + input_label(ctx, 0) + " " +
                     to_string(input) + " has rank " + std::to_string(input.rank()) +
                     "; give one repeat count per axis");
  }
  std::vector<int64_t> dims = input.dims;
  for (size_t i = 0; i < dims.size(); ++i) {
    if ((*repeats)[i] < 0)
      return ctx.error("repeats " + values_string(*repeats) +
                       " has a negative count; use counts >= 0");
    if (dims[i] >= 0) dims[i] *= (*repeats)[i];
  }
  result.output_types[0] = TensorType::make(input.dtype, std::move(dims));
  if (small_enough(result.output_types[0]) && input.is_static()) {
    std::optional<std::vector<int64_t>> values = input_ints(ctx, 0);
    if (values) {
      std::vector<int64_t> out(static_cast<size_t>(result.output_types[0].num_elements()));
      const std::vector<int64_t>& out_dims = result.output_types[0].dims;
      for (int64_t flat = 0; flat < static_cast<int64_t>(out.size()); ++flat) {
        int64_t rest = flat;
        int64_t source = 0;
        int64_t stride = 1;
        for (size_t d = out_dims.size(); d-- > 0;) {
          int64_t coordinate = rest % out_dims[d];
          rest /= out_dims[d];
          source += (coordinate % input.dims[d]) * stride;
          stride *= input.dims[d];
        }
        out[static_cast<size_t>(flat)] = (*values)[static_cast<size_t>(source)];
      }
      result.output_int_values[0] = std::move(out);
    }
  }
  return result;
}

RuleResult trilu_rule(const Context& ctx) {
  const TensorType& input = *input_type(ctx, 0);
  STITCH_RETURN_IF_ERROR(check_type_class(ctx, 1, TypeClass::kInteger));
  if (input.has_shape && input.rank() < 2) {
    return ctx.error(input_label(ctx, 0) + " " + to_string(input) + " has rank " +
                     std::to_string(input.rank()) +
                     " but Trilu needs rank >= 2; reshape the input to a matrix");
  }
  ShapeInferenceResult result = make_result(ctx);
  result.output_types[0] = input;
  return result;
}

// CumSum: the output is the input's type; a constant axis (a scalar or one element)
// must name an axis of the input, as the reference evaluation requires.
RuleResult cumsum_rule(const Context& ctx) {
  STITCH_RETURN_IF_ERROR(check_type_class(ctx, 0, TypeClass::kNumeric));
  STITCH_RETURN_IF_ERROR(check_type_class(ctx, 1, TypeClass::kInteger));
  const TensorType& input = *input_type(ctx, 0);
  const TensorType& axis_type = *input_type(ctx, 1);
  if (axis_type.is_static() && axis_type.num_elements() != 1) {
    return ctx.error(input_label(ctx, 1) + " is " + to_string(axis_type) +
                     " but CumSum's axis is one value; pass a scalar axis");
  }
  std::optional<std::vector<int64_t>> axis = input_ints(ctx, 1);
  if (axis && axis->size() == 1 && input.has_shape) {
    STITCH_RETURN_IF_ERROR(
        normalize_axis(ctx, (*axis)[0], input.rank(), input_label(ctx, 1)).status());
  }
  ShapeInferenceResult result = make_result(ctx);
  result.output_types[0] = input;
  return result;
}

constexpr int kVariadic = -1;

}  // namespace

void add_shape_op_schemas(std::vector<OpSchema>& schemas) {
  schemas.push_back({"Expand", OpKind::kBroadcast, 8, 2, 2, 1, 1, expand_rule});
  schemas.push_back({"Transpose", OpKind::kInjective, 7, 1, 1, 1, 1, transpose_rule});
  schemas.push_back({"Concat", OpKind::kInjective, 7, 1, kVariadic, 1, 1, concat_rule});
  schemas.push_back({"Split", OpKind::kInjective, 7, 1, 2, 1, kVariadic, split_rule});
  schemas.push_back({"Slice", OpKind::kInjective, 7, 1, 5, 1, 1, slice_rule});
  schemas.push_back({"Pad", OpKind::kInjective, 7, 1, 4, 1, 1, pad_rule});
  schemas.push_back({"Tile", OpKind::kInjective, 7, 2, 2, 1, 1, tile_rule});
  schemas.push_back({"Trilu", OpKind::kInjective, 14, 1, 2, 1, 1, trilu_rule});
  schemas.push_back({"Reshape", OpKind::kView, 7, 2, 2, 1, 1, reshape_rule});
  schemas.push_back({"Flatten", OpKind::kView, 7, 1, 1, 1, 1, flatten_rule});
  schemas.push_back({"Squeeze", OpKind::kView, 7, 1, 2, 1, 1, squeeze_rule});
  schemas.push_back({"Unsqueeze", OpKind::kView, 7, 1, 2, 1, 1, unsqueeze_rule});
  schemas.push_back({"CumSum", OpKind::kOpaque, 11, 2, 2, 1, 1, cumsum_rule});
}

}  // namespace stitch::ir::shape_rules

namespace stitch::ir {

std::pair<int64_t, int64_t> shape_op_range(const Node& node, int64_t opset, int64_t rank) {
  int64_t start = opset >= 15 ? node.int_attribute("start", 0) : 0;
  int64_t end = opset >= 15 ? node.int_attribute("end", rank) : rank;
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  return {std::clamp<int64_t>(start, 0, rank), std::clamp<int64_t>(end, 0, rank)};
}

}  // namespace stitch::ir
