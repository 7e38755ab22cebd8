// Private to the op registry: helpers shared by the per-group shape rule files
// (shape_rules_*.cc) and the functions that add each group's schemas.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/core/op_registry.h"

namespace stitch::ir::shape_rules {

using Context = ShapeInferenceContext;
using RuleResult = Result<ShapeInferenceResult>;

// Data propagation covers integer tensors up to this many elements.
constexpr int64_t kMaxPropagatedElements = 64;
// Rules read constant integer inputs (shapes, pads, axes) up to this many elements.
constexpr int64_t kMaxConstantElements = 4096;

// Each group appends its ops to the registry table (op_registry.cc sorts it).
void add_elementwise_schemas(std::vector<OpSchema>& schemas);
void add_shape_op_schemas(std::vector<OpSchema>& schemas);
void add_indexing_schemas(std::vector<OpSchema>& schemas);
void add_source_op_schemas(std::vector<OpSchema>& schemas);
void add_reduction_schemas(std::vector<OpSchema>& schemas);
void add_nn_schemas(std::vector<OpSchema>& schemas);

// ---- inputs --------------------------------------------------------------------

// The input's type, or null when the input is omitted (or past the end).
const TensorType* input_type(const Context& ctx, size_t index);
bool has_input(const Context& ctx, size_t index);
// `input 1 "b"` (or `input 1` when the name is not known).
std::string input_label(const Context& ctx, size_t index);
// The input's integer values when known: propagated values first, then constant
// data of an integer (or bool) tensor of any size. Null when not known.
std::optional<std::vector<int64_t>> input_ints(const Context& ctx, size_t index);
// Error for an omitted input the op needs at this opset.
Status missing_input(const Context& ctx, size_t index, std::string_view what);
// Error unless input `index` is present.
Status require_input(const Context& ctx, size_t index, std::string_view what);
Status missing_attribute(const Context& ctx, std::string_view attribute_name);

// ---- dtypes --------------------------------------------------------------------

enum class TypeClass {
  kAny,
  kFloat,          // f16, bf16, f32, f64
  kNumeric,        // integers and floats
  kSignedNumeric,  // floats and signed integers
  kBool,
  kInteger,  // i32 / i64 index tensors (any integer accepted)
};
// OK when the input is omitted, its dtype is undefined, or it is in the class.
Status check_type_class(const Context& ctx, size_t index, TypeClass type_class);
// OK when both dtypes are defined and equal, or either is undefined/omitted.
Status check_same_dtype(const Context& ctx, size_t index, size_t reference);
// The first defined dtype among the given inputs, else kUndefined.
DType first_dtype(const Context& ctx, std::initializer_list<size_t> indices);

// ---- shapes --------------------------------------------------------------------

TensorType unknown_type(DType dtype);
TensorType unknown_dims(DType dtype, int64_t rank);
// Result with one (unknown) entry per node output.
ShapeInferenceResult make_result(const Context& ctx);
// Numpy multidirectional broadcasting of two shapes; error naming the two inputs.
// Either input unknown-rank gives an unknown-rank result.
Result<TensorType> broadcast_inputs(const Context& ctx, const TensorType& accumulated, size_t index,
                                    DType result_dtype);
// Plain shape broadcasting without a node (Expand's target shape): nullopt when the
// shapes are incompatible.
std::optional<std::vector<int64_t>> broadcast_dims(const std::vector<int64_t>& a,
                                                   const std::vector<int64_t>& b);
// Normalizes `axis` into [0, rank) (or [0, rank] with inclusive_end); error naming
// the attribute (or input) it came from when it is out of range.
Result<int64_t> normalize_axis(const Context& ctx, int64_t axis, int64_t rank,
                               std::string_view source, bool inclusive_end = false);
// Product of dims; -1 when any is unknown.
int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end);
// For messages, both bounded (support::list_text: the first 16 items and the count):
// dims with unknown ones as "?" ("[2,?,3]"), and integer values as they are ("[-1,0]":
// a Reshape target, axes, pads, a perm).
std::string dims_string(const std::vector<int64_t>& dims);
std::string values_string(const std::vector<int64_t>& values);
bool small_enough(const TensorType& type);  // static with <= kMaxPropagatedElements

// ---- data propagation ----------------------------------------------------------

// Index of flat output element `flat` in an operand of `operand_dims` broadcast to
// `output_dims` (ranks right-aligned).
int64_t broadcast_source_index(const std::vector<int64_t>& output_dims,
                               const std::vector<int64_t>& operand_dims, int64_t flat);

// Broadcasting elementwise evaluation of integer values: `fn` maps one operand value
// per input to the result (nullopt: not computable). Nullopt when any operand value or
// shape is unknown or the result is bigger than kMaxPropagatedElements.
template <typename Fn>
std::optional<std::vector<int64_t>> broadcast_eval(
    const std::vector<const TensorType*>& types,
    const std::vector<const std::vector<int64_t>*>& values, const TensorType& output, Fn fn) {
  if (!small_enough(output)) return std::nullopt;
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i] == nullptr || values[i] == nullptr || !types[i]->is_static()) return std::nullopt;
    if (static_cast<int64_t>(values[i]->size()) != types[i]->num_elements()) return std::nullopt;
  }
  int64_t count = output.num_elements();
  std::vector<int64_t> result(static_cast<size_t>(count));
  std::vector<int64_t> operands(types.size());
  for (int64_t flat = 0; flat < count; ++flat) {
    for (size_t i = 0; i < types.size(); ++i) {
      operands[i] = (*values[i])[static_cast<size_t>(
          broadcast_source_index(output.dims, types[i]->dims, flat))];
    }
    std::optional<int64_t> value = fn(operands);
    if (!value) return std::nullopt;
    result[static_cast<size_t>(flat)] = *value;
  }
  return result;
}

}  // namespace stitch::ir::shape_rules
