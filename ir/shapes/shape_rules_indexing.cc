// Shape rules of the ops that index one tensor by another: Gather, GatherElements and
// ScatterND. Constant indices are checked against the dims they index here, where the
// fact is known, so that a compile refuses what `stitchopt run` would (issue 36 W1);
// Gather also propagates small integer values (the Shape -> Gather chains exporters
// write).
#include <optional>
#include <string>
#include <vector>

#include "ir/shapes/shape_rules.h"

namespace stitch::ir::shape_rules {
namespace {

RuleResult gather_rule(const Context& ctx) {
  STITCH_RETURN_IF_ERROR(check_type_class(ctx, 1, TypeClass::kInteger));
  const TensorType& data = *input_type(ctx, 0);
  const TensorType& indices = *input_type(ctx, 1);
  ShapeInferenceResult result = make_result(ctx);
  if (!data.has_shape || !indices.has_shape) {
    result.output_types[0] = unknown_type(data.dtype);
    return result;
  }
  if (data.rank() == 0) {
    return ctx.error(input_label(ctx, 0) + " is a scalar; Gather needs rank >= 1");
  }
  STITCH_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx, ctx.node.int_attribute("axis", 0),
                                                       data.rank(), "the \"axis\" attribute"));
  auto a = static_cast<size_t>(axis);
  int64_t extent = data.dims[a];
  std::optional<std::vector<int64_t>> index_values = input_ints(ctx, 1);
  if (index_values && extent >= 0) {
    for (int64_t& index : *index_values) {
      if (extent == 0) {
        return ctx.error("takes index " + std::to_string(index) + " of axis " +
                         std::to_string(axis) + " of " + input_label(ctx, 0) + " " +
                         to_string(data) +
                         ", which is empty (size 0) and has no index; give that axis a size "
                         "of at least 1 (check --input-shape)");
      }
      if (index < -extent || index >= extent) {
        return ctx.error("index " + std::to_string(index) + " is out of range for axis " +
                         std::to_string(axis) + " of size " + std::to_string(extent) +
                         "; use indices in [" + std::to_string(-extent) + ", " +
                         std::to_string(extent - 1) + "]");
      }
      if (index < 0) index += extent;
    }
  }
  std::vector<int64_t> dims(data.dims.begin(), data.dims.begin() + axis);
  dims.insert(dims.end(), indices.dims.begin(), indices.dims.end());
  dims.insert(dims.end(), data.dims.begin() + axis + 1, data.dims.end());
  result.output_types[0] = TensorType::make(data.dtype, std::move(dims));
  if (!small_enough(result.output_types[0]) || !index_values || !data.is_static()) return result;
  std::optional<std::vector<int64_t>> values = input_ints(ctx, 0);
  if (!values) return result;
  int64_t outer = product(data.dims, 0, a);
  int64_t inner = product(data.dims, a + 1, data.dims.size());
  std::vector<int64_t> out;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t index : *index_values) {
      auto begin = values->begin() + (o * extent + index) * inner;
      out.insert(out.end(), begin, begin + inner);
    }
  }
  result.output_int_values[0] = std::move(out);
  return result;
}

RuleResult gather_elements_rule(const Context& ctx) {
  STITCH_RETURN_IF_ERROR(check_type_class(ctx, 1, TypeClass::kInteger));
  const TensorType& data = *input_type(ctx, 0);
  const TensorType& indices = *input_type(ctx, 1);
  if (data.has_shape && indices.has_shape) {
    if (data.rank() != indices.rank()) {
      return ctx.error(input_label(ctx, 1) + " " + to_string(indices) + " has rank " +
                       std::to_string(indices.rank()) + " but " + input_label(ctx, 0) + " " +
                       to_string(data) + " has rank " + std::to_string(data.rank()) +
                       "; give indices the rank of data");
    }
    STITCH_RETURN_IF_ERROR(normalize_axis(ctx, ctx.node.int_attribute("axis", 0), data.rank(),
                                          "the \"axis\" attribute")
                               .status());
  }
  ShapeInferenceResult result = make_result(ctx);
  TensorType type = indices;
  type.dtype = data.dtype;
  result.output_types[0] = std::move(type);
  return result;
}

// Checks constant ScatterND indices against data's dims: each index tuple of `depth`
// values must address an element (negative values count from the back), as the
// reference evaluation requires. The whole constant is read, however large: a
// scatter table is not shape-like, but an index out of range is a fact of the model.
Status check_scatter_indices(const Context& ctx, const TensorType& data, int64_t depth) {
  const Tensor* indices = ctx.input_values.size() > 1 ? ctx.input_values[1] : nullptr;
  if (indices == nullptr || depth <= 0 || !data.is_static() || indices->external ||
      static_cast<int64_t>(indices->bytes.size()) != indices->type().num_bytes()) {
    return Status::ok();
  }
  const int64_t count = indices->num_elements();
  for (int64_t flat = 0; flat < count; ++flat) {
    const int64_t index = indices->int_at(flat);
    const int64_t axis = flat % depth;
    const int64_t size = data.dims[static_cast<size_t>(axis)];
    if (index < -size || index >= size) {
      return ctx.error(input_label(ctx, 1) + " holds the index " + std::to_string(index) +
                       " (tuple " + std::to_string(flat / depth) + ") for axis " +
                       std::to_string(axis) + " of " + input_label(ctx, 0) + " " + to_string(data) +
                       ", which has size " + std::to_string(size) +
                       (size == 0 ? "; an empty axis has no index: remove the scatter"
                                  : "; give indices in [" + std::to_string(-size) + ", " +
                                        std::to_string(size - 1) + "]"));
    }
  }
  return Status::ok();
}

// ScatterND: the output is data's type. indices [..., depth] address `depth` leading
// axes of data, and updates must be indices.dims[:-1] + data.dims[depth:].
RuleResult scatter_nd_rule(const Context& ctx) {
  STITCH_RETURN_IF_ERROR(check_type_class(ctx, 1, TypeClass::kInteger));
  STITCH_RETURN_IF_ERROR(check_same_dtype(ctx, 2, 0));
  const TensorType& data = *input_type(ctx, 0);
  const TensorType& indices = *input_type(ctx, 1);
  const TensorType& updates = *input_type(ctx, 2);
  if (data.has_shape && indices.has_shape) {
    if (indices.rank() == 0) {
      return ctx.error(input_label(ctx, 1) + " is a scalar; ScatterND needs indices of rank >= 1");
    }
    const int64_t depth = indices.dims.back();
    if (depth > data.rank()) {
      return ctx.error(input_label(ctx, 1) + " " + to_string(indices) + " addresses " +
                       std::to_string(depth) + " axes (its last dim) but " + input_label(ctx, 0) +
                       " " + to_string(data) + " has rank " + std::to_string(data.rank()) +
                       "; fix the indices' last dim");
    }
    if (depth >= 0 && updates.has_shape) {
      std::vector<int64_t> expected(indices.dims.begin(), indices.dims.end() - 1);
      expected.insert(expected.end(), data.dims.begin() + depth, data.dims.end());
      bool matches = expected.size() == updates.dims.size();
      for (size_t i = 0; matches && i < expected.size(); ++i) {
        matches = expected[i] < 0 || updates.dims[i] < 0 || expected[i] == updates.dims[i];
      }
      if (!matches) {
        return ctx.error(input_label(ctx, 2) + " " + to_string(updates) + " does not match " +
                         input_label(ctx, 1) + " " + to_string(indices) + " and " +
                         input_label(ctx, 0) + " " + to_string(data) + ", which need updates " +
                         dims_string(expected) + "; fix the updates' shape");
      }
    }
    STITCH_RETURN_IF_ERROR(check_scatter_indices(ctx, data, depth));
  }
  ShapeInferenceResult result = make_result(ctx);
  result.output_types[0] = data;
  return result;
}

}  // namespace

void add_indexing_schemas(std::vector<OpSchema>& schemas) {
  schemas.push_back({"Gather", OpKind::kInjective, 7, 2, 2, 1, 1, gather_rule});
  schemas.push_back({"GatherElements", OpKind::kInjective, 11, 2, 2, 1, 1, gather_elements_rule});
  schemas.push_back({"ScatterND", OpKind::kOpaque, 11, 3, 3, 1, 1, scatter_nd_rule});
}

}  // namespace stitch::ir::shape_rules
