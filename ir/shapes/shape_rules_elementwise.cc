// Shape rules of elementwise ops: unary math and activations, broadcasting binary
// and variadic ops, comparisons, logic, Where, Cast, Clip, PRelu, Dropout.
#include <cmath>

#include "ir/core/integer_arithmetic.h"
#include "ir/shapes/shape_rules.h"

namespace stitch::ir::shape_rules {
namespace {

// Same type and shape as input 0, checked against a type class; `output_dtype`
// overrides the result dtype (IsNaN -> bool).
ShapeRule unary_rule(TypeClass type_class, DType output_dtype = DType::kUndefined) {
  return [type_class, output_dtype](const Context& ctx) -> RuleResult {
    STITCH_RETURN_IF_ERROR(check_type_class(ctx, 0, type_class));
    ShapeInferenceResult result = make_result(ctx);
    TensorType type = *input_type(ctx, 0);
    if (output_dtype != DType::kUndefined) type.dtype = output_dtype;
    result.output_types[0] = std::move(type);
    return result;
  };
}

// Relu accepts signed integers from opset 14.
RuleResult relu_rule(const Context& ctx) {
  STITCH_RETURN_IF_ERROR(
      check_type_class(ctx, 0, ctx.opset >= 14 ? TypeClass::kSignedNumeric : TypeClass::kFloat));
  ShapeInferenceResult result = make_result(ctx);
  result.output_types[0] = *input_type(ctx, 0);
  return result;
}

// Identity: same type, and the values pass through.
RuleResult identity_rule(const Context& ctx) {
  ShapeInferenceResult result = make_result(ctx);
  result.output_types[0] = *input_type(ctx, 0);
  if (small_enough(result.output_types[0])) result.output_int_values[0] = input_ints(ctx, 0);
  return result;
}

// How a broadcasting op types its inputs and result.
struct BroadcastSpec {
  TypeClass type_class;
  bool same_dtype;                         // every input has input 0's dtype
  DType output_dtype = DType::kUndefined;  // kUndefined: input 0's dtype
};

// Broadcasts every present input from `first`; checks types.
Result<TensorType> broadcast_all(const Context& ctx, size_t first, const BroadcastSpec& spec) {
  for (size_t i = first; i < ctx.input_types.size(); ++i) {
    STITCH_RETURN_IF_ERROR(check_type_class(ctx, i, spec.type_class));
    if (spec.same_dtype && i > first) STITCH_RETURN_IF_ERROR(check_same_dtype(ctx, i, first));
  }
  DType dtype = spec.output_dtype;
  for (size_t i = first; dtype == DType::kUndefined && i < ctx.input_types.size(); ++i) {
    if (has_input(ctx, i)) dtype = ctx.input_types[i]->dtype;
  }
  const TensorType* start = input_type(ctx, first);
  if (start == nullptr) return missing_input(ctx, first, "operand");
  TensorType accumulated = *start;
  accumulated.dtype = dtype;
  for (size_t i = first + 1; i < ctx.input_types.size(); ++i) {
    if (!has_input(ctx, i)) return missing_input(ctx, i, "operand");
    STITCH_ASSIGN_OR_RETURN(accumulated, broadcast_inputs(ctx, accumulated, i, dtype));
  }
  return accumulated;
}

// Integer value propagation through a broadcasting op.
template <typename Fn>
void propagate_broadcast(const Context& ctx, ShapeInferenceResult& result, Fn fn) {
  std::vector<const TensorType*> types;
  std::vector<std::optional<std::vector<int64_t>>> storage(ctx.input_types.size());
  std::vector<const std::vector<int64_t>*> values;
  for (size_t i = 0; i < ctx.input_types.size(); ++i) {
    storage[i] = input_ints(ctx, i);
    if (!storage[i]) return;
    types.push_back(ctx.input_types[i]);
    values.push_back(&*storage[i]);
  }
  result.output_int_values[0] = broadcast_eval(types, values, result.output_types[0], fn);
}

bool propagates_ints(DType dtype) {
  return dtype == DType::kInt64 || dtype == DType::kInt32 || dtype == DType::kBool;
}

ShapeRule binary_rule(BroadcastSpec spec, char arithmetic) {
  return [spec, arithmetic](const Context& ctx) -> RuleResult {
    STITCH_ASSIGN_OR_RETURN(TensorType type, broadcast_all(ctx, 0, spec));
    ShapeInferenceResult result = make_result(ctx);
    result.output_types[0] = std::move(type);
    DType operand_dtype = first_dtype(ctx, {0});
    if (arithmetic != 0 && propagates_ints(operand_dtype)) {
      // The arithmetic of the reference interpreter (ir/core/integer_arithmetic.h): wrapping,
      // x / 0 == 0; int32 results wrap to int32 as the stored tensor would.
      const bool int32 = operand_dtype == DType::kInt32;
      auto stored = [int32](int64_t value) {
        return int32 ? static_cast<int64_t>(static_cast<int32_t>(value)) : value;
      };
      propagate_broadcast(
          ctx, result,
          [arithmetic, stored](const std::vector<int64_t>& v) -> std::optional<int64_t> {
            switch (arithmetic) {
              case '+':
                return stored(wrapping_add(v[0], v[1]));
              case '-':
                return stored(wrapping_subtract(v[0], v[1]));
              case '*':
                return stored(wrapping_multiply(v[0], v[1]));
              case '/':
                return stored(integer_divide(v[0], v[1]));
              case '=':
                return v[0] == v[1] ? 1 : 0;
              case '<':
                return v[0] < v[1] ? 1 : 0;
              case '>':
                return v[0] > v[1] ? 1 : 0;
              case 'l':
                return v[0] <= v[1] ? 1 : 0;
              case 'g':
                return v[0] >= v[1] ? 1 : 0;
              default:
                return std::nullopt;
            }
          });
    }
    return result;
  };
}

// Pow: the exponent's type may differ from the base's from opset 12.
RuleResult pow_rule(const Context& ctx) {
  if (ctx.opset < 12) {
    BroadcastSpec spec{TypeClass::kFloat, true};
    STITCH_ASSIGN_OR_RETURN(TensorType type, broadcast_all(ctx, 0, spec));
    ShapeInferenceResult result = make_result(ctx);
    result.output_types[0] = std::move(type);
    return result;
  }
  BroadcastSpec spec{TypeClass::kNumeric, false, first_dtype(ctx, {0})};
  STITCH_ASSIGN_OR_RETURN(TensorType type, broadcast_all(ctx, 0, spec));
  ShapeInferenceResult result = make_result(ctx);
  result.output_types[0] = std::move(type);
  return result;
}

// Where(condition, X, Y): X and Y share a type; the condition is bool.
RuleResult where_rule(const Context& ctx) {
  STITCH_RETURN_IF_ERROR(check_type_class(ctx, 0, TypeClass::kBool));
  STITCH_RETURN_IF_ERROR(check_same_dtype(ctx, 2, 1));
  DType dtype = first_dtype(ctx, {1, 2});
  BroadcastSpec spec{TypeClass::kAny, false, dtype};
  STITCH_ASSIGN_OR_RETURN(TensorType type, broadcast_all(ctx, 0, spec));
  ShapeInferenceResult result = make_result(ctx);
  result.output_types[0] = std::move(type);
  if (propagates_ints(dtype)) {
    propagate_broadcast(ctx, result, [](const std::vector<int64_t>& v) -> std::optional<int64_t> {
      return v[0] != 0 ? v[1] : v[2];
    });
  }
  return result;
}

// Sum/Mean take floats; Max/Min numeric types from opset 12 (floats before).
ShapeRule variadic_rule(bool numeric_from_12) {
  return [numeric_from_12](const Context& ctx) -> RuleResult {
    TypeClass type_class =
        numeric_from_12 && ctx.opset >= 12 ? TypeClass::kNumeric : TypeClass::kFloat;
    STITCH_ASSIGN_OR_RETURN(TensorType type,
                            broadcast_all(ctx, 0, BroadcastSpec{type_class, true}));
    ShapeInferenceResult result = make_result(ctx);
    result.output_types[0] = std::move(type);
    return result;
  };
}

// PRelu: slope broadcasts to X (unidirectionally); the result is X's shape.
RuleResult prelu_rule(const Context& ctx) {
  STITCH_RETURN_IF_ERROR(
      check_type_class(ctx, 0, ctx.opset >= 16 ? TypeClass::kNumeric : TypeClass::kFloat));
  STITCH_RETURN_IF_ERROR(check_same_dtype(ctx, 1, 0));
  const TensorType& x = *input_type(ctx, 0);
  const TensorType* slope = input_type(ctx, 1);
  if (x.has_shape && slope->has_shape) {
    std::optional<std::vector<int64_t>> dims = broadcast_dims(x.dims, slope->dims);
    bool unidirectional = dims && dims->size() == x.dims.size();
    for (size_t i = 0; unidirectional && i < x.dims.size(); ++i) {
      if (x.dims[i] >= 0 && (*dims)[i] >= 0 && x.dims[i] != (*dims)[i]) unidirectional = false;
    }
    if (!unidirectional) {
      return ctx.error(input_label(ctx, 1) + " " + to_string(*slope) + " does not broadcast to " +
                       input_label(ctx, 0) + " " + to_string(x) +
                       "; give the slope a shape that broadcasts to X (e.g. [C,1,1])");
    }
  }
  ShapeInferenceResult result = make_result(ctx);
  result.output_types[0] = x;
  return result;
}

// Clip: min/max are attributes before opset 11 and optional scalar inputs after.
RuleResult clip_rule(const Context& ctx) {
  STITCH_RETURN_IF_ERROR(
      check_type_class(ctx, 0, ctx.opset >= 12 ? TypeClass::kNumeric : TypeClass::kFloat));
  if (ctx.opset < 11 && ctx.input_types.size() > 1) {
    return ctx.error("has " + std::to_string(ctx.input_types.size()) +
                     " inputs but Clip before opset 11 takes min/max as attributes; move them "
                     "to the \"min\"/\"max\" attributes or raise the opset to 11");
  }
  for (size_t i = 1; i < ctx.input_types.size(); ++i) {
    STITCH_RETURN_IF_ERROR(check_same_dtype(ctx, i, 0));
    const TensorType* bound = input_type(ctx, i);
    if (bound != nullptr && bound->is_static() && bound->num_elements() != 1) {
      return ctx.error(input_label(ctx, i) + " is " + to_string(*bound) +
                       " but Clip's min/max must be scalars; pass a scalar (shape [])");
    }
  }
  ShapeInferenceResult result = make_result(ctx);
  result.output_types[0] = *input_type(ctx, 0);
  return result;
}

// Cast values of small integer tensors to an integer or bool type.
std::optional<std::vector<int64_t>> cast_ints(const Context& ctx, DType to,
                                              const TensorType& type) {
  if (!propagates_ints(to) || !small_enough(type)) return std::nullopt;
  std::optional<std::vector<int64_t>> values = input_ints(ctx, 0);
  if (!values) return std::nullopt;
  for (int64_t& v : *values) {
    if (to == DType::kBool) {
      v = v != 0 ? 1 : 0;
    } else if (to == DType::kInt32) {
      v = static_cast<int32_t>(v);
    }
  }
  return values;
}

RuleResult cast_rule(const Context& ctx) {
  const Attribute* to = ctx.node.find_attribute("to");
  if (to == nullptr) return missing_attribute(ctx, "to");
  if (to->kind != AttributeKind::kInt || !dtype_is_valid_onnx(static_cast<int32_t>(to->i))) {
    return ctx.error(
        "attribute \"to\" is not a valid ONNX data type; set it to a "
        "TensorProto.DataType value such as 1 (float)");
  }
  ShapeInferenceResult result = make_result(ctx);
  TensorType type = *input_type(ctx, 0);
  type.dtype = static_cast<DType>(to->i);
  result.output_int_values[0] = cast_ints(ctx, type.dtype, type);
  result.output_types[0] = std::move(type);
  return result;
}

RuleResult cast_like_rule(const Context& ctx) {
  ShapeInferenceResult result = make_result(ctx);
  TensorType type = *input_type(ctx, 0);
  type.dtype = input_type(ctx, 1)->dtype;
  result.output_int_values[0] = cast_ints(ctx, type.dtype, type);
  result.output_types[0] = std::move(type);
  return result;
}

// Dropout: ratio is an attribute before 12 and an input after; the optional mask
// output has X's type before opset 10 and bool from 10.
RuleResult dropout_rule(const Context& ctx) {
  STITCH_RETURN_IF_ERROR(check_type_class(ctx, 0, TypeClass::kFloat));
  if (ctx.opset < 12 && ctx.input_types.size() > 1) {
    return ctx.error("has " + std::to_string(ctx.input_types.size()) +
                     " inputs but Dropout before opset 12 takes ratio as an attribute; use "
                     "the \"ratio\" attribute or raise the opset to 12");
  }
  STITCH_RETURN_IF_ERROR(check_type_class(ctx, 1, TypeClass::kFloat));
  STITCH_RETURN_IF_ERROR(check_type_class(ctx, 2, TypeClass::kBool));
  ShapeInferenceResult result = make_result(ctx);
  const TensorType& x = *input_type(ctx, 0);
  result.output_types[0] = x;
  if (result.output_types.size() > 1) {
    TensorType mask = x;
    if (ctx.opset >= 10) mask.dtype = DType::kBool;
    result.output_types[1] = std::move(mask);
  }
  return result;
}

constexpr int kVariadic = -1;

}  // namespace

void add_elementwise_schemas(std::vector<OpSchema>& schemas) {
  const OpKind kind = OpKind::kElementwise;
  struct Unary {
    std::string_view op;
    int64_t min_opset;
    TypeClass type_class;
  };
  const Unary unary_ops[] = {
      {"Abs", 7, TypeClass::kNumeric},       {"Acos", 7, TypeClass::kFloat},
      {"Acosh", 9, TypeClass::kFloat},       {"Asin", 7, TypeClass::kFloat},
      {"Asinh", 9, TypeClass::kFloat},       {"Atan", 7, TypeClass::kFloat},
      {"Atanh", 9, TypeClass::kFloat},       {"Ceil", 7, TypeClass::kFloat},
      {"Celu", 12, TypeClass::kFloat},       {"Cos", 7, TypeClass::kFloat},
      {"Cosh", 9, TypeClass::kFloat},        {"Elu", 7, TypeClass::kFloat},
      {"Erf", 9, TypeClass::kNumeric},       {"Exp", 7, TypeClass::kFloat},
      {"Floor", 7, TypeClass::kFloat},       {"Gelu", 20, TypeClass::kFloat},
      {"HardSigmoid", 7, TypeClass::kFloat}, {"HardSwish", 14, TypeClass::kFloat},
      {"LeakyRelu", 7, TypeClass::kFloat},   {"Log", 7, TypeClass::kFloat},
      {"Mish", 18, TypeClass::kFloat},       {"Neg", 7, TypeClass::kSignedNumeric},
      {"Not", 7, TypeClass::kBool},          {"Reciprocal", 7, TypeClass::kFloat},
      {"Round", 11, TypeClass::kFloat},      {"Selu", 7, TypeClass::kFloat},
      {"Sigmoid", 7, TypeClass::kFloat},     {"Sign", 9, TypeClass::kNumeric},
      {"Sin", 7, TypeClass::kFloat},         {"Sinh", 9, TypeClass::kFloat},
      {"Softplus", 7, TypeClass::kFloat},    {"Softsign", 7, TypeClass::kFloat},
      {"Sqrt", 7, TypeClass::kFloat},        {"Tan", 7, TypeClass::kFloat},
      {"Tanh", 7, TypeClass::kFloat},        {"ThresholdedRelu", 10, TypeClass::kFloat},
  };
  for (const Unary& op : unary_ops) {
    schemas.push_back({op.op, kind, op.min_opset, 1, 1, 1, 1, unary_rule(op.type_class)});
  }
  schemas.push_back({"Relu", kind, 7, 1, 1, 1, 1, relu_rule});
  schemas.push_back({"IsNaN", kind, 9, 1, 1, 1, 1, unary_rule(TypeClass::kFloat, DType::kBool)});
  schemas.push_back({"IsInf", kind, 10, 1, 1, 1, 1, unary_rule(TypeClass::kFloat, DType::kBool)});
  schemas.push_back({"Identity", OpKind::kView, 7, 1, 1, 1, 1, identity_rule});
  schemas.push_back({"Cast", kind, 7, 1, 1, 1, 1, cast_rule});
  schemas.push_back({"CastLike", kind, 15, 2, 2, 1, 1, cast_like_rule});
  schemas.push_back({"Clip", kind, 7, 1, 3, 1, 1, clip_rule});
  schemas.push_back({"Dropout", kind, 7, 1, 3, 1, 2, dropout_rule});
  schemas.push_back({"PRelu", kind, 7, 2, 2, 1, 1, prelu_rule});

  const BroadcastSpec arithmetic{TypeClass::kNumeric, true};
  schemas.push_back({"Add", kind, 7, 2, 2, 1, 1, binary_rule(arithmetic, '+')});
  schemas.push_back({"Sub", kind, 7, 2, 2, 1, 1, binary_rule(arithmetic, '-')});
  schemas.push_back({"Mul", kind, 7, 2, 2, 1, 1, binary_rule(arithmetic, '*')});
  schemas.push_back({"Div", kind, 7, 2, 2, 1, 1, binary_rule(arithmetic, '/')});
  schemas.push_back({"Mod", kind, 10, 2, 2, 1, 1, binary_rule(arithmetic, 0)});
  schemas.push_back({"Pow", kind, 7, 2, 2, 1, 1, pow_rule});
  const BroadcastSpec compare{TypeClass::kNumeric, true, DType::kBool};
  schemas.push_back({"Equal", kind, 7, 2, 2, 1, 1,
                     binary_rule(BroadcastSpec{TypeClass::kAny, true, DType::kBool}, '=')});
  schemas.push_back({"Less", kind, 7, 2, 2, 1, 1, binary_rule(compare, '<')});
  schemas.push_back({"Greater", kind, 7, 2, 2, 1, 1, binary_rule(compare, '>')});
  schemas.push_back({"LessOrEqual", kind, 12, 2, 2, 1, 1, binary_rule(compare, 'l')});
  schemas.push_back({"GreaterOrEqual", kind, 12, 2, 2, 1, 1, binary_rule(compare, 'g')});
  const BroadcastSpec logic{TypeClass::kBool, true, DType::kBool};
  schemas.push_back({"And", kind, 7, 2, 2, 1, 1, binary_rule(logic, 0)});
  schemas.push_back({"Or", kind, 7, 2, 2, 1, 1, binary_rule(logic, 0)});
  schemas.push_back({"Xor", kind, 7, 2, 2, 1, 1, binary_rule(logic, 0)});
  schemas.push_back({"Where", kind, 9, 3, 3, 1, 1, where_rule});
  schemas.push_back({"Sum", kind, 7, 1, kVariadic, 1, 1, variadic_rule(false)});
  schemas.push_back({"Mean", kind, 7, 1, kVariadic, 1, 1, variadic_rule(false)});
  schemas.push_back({"Max", kind, 7, 1, kVariadic, 1, 1, variadic_rule(true)});
  schemas.push_back({"Min", kind, 7, 1, kVariadic, 1, 1, variadic_rule(true)});
}

}  // namespace stitch::ir::shape_rules
