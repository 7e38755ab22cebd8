// Shape rules of the library-call and Opaque neural-network ops: MatMul, Gemm,
// Conv, pooling, Resize, TopK, Einsum and LSTM.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>

#include "ir/core/window.h"
#include "ir/shapes/shape_rules.h"
#include "support/escape.h"

namespace stitch::ir::shape_rules {
namespace {

RuleResult matmul_rule(const Context& ctx) {
  STITCH_RETURN_IF_ERROR(check_type_class(ctx, 0, TypeClass::kNumeric));
  STITCH_RETURN_IF_ERROR(check_same_dtype(ctx, 1, 0));
  const TensorType& a = *input_type(ctx, 0);
  const TensorType& b = *input_type(ctx, 1);
  DType dtype = first_dtype(ctx, {0, 1});
  ShapeInferenceResult result = make_result(ctx);
  if (!a.has_shape || !b.has_shape) {
    result.output_types[0] = unknown_type(dtype);
    return result;
  }
  for (size_t i = 0; i < 2; ++i) {
    if (input_type(ctx, i)->rank() == 0) {
      return ctx.error(input_label(ctx, i) +
                       " is a scalar but MatMul needs rank >= 1; use Mul "
                       "for scalars");
    }
  }
  // 1-D operands: A [K] is [1,K] and B [K] is [K,1], and that dim is dropped again.
  std::vector<int64_t> a_dims = a.dims;
  std::vector<int64_t> b_dims = b.dims;
  bool a_vector = a_dims.size() == 1;
  bool b_vector = b_dims.size() == 1;
  if (a_vector) a_dims.insert(a_dims.begin(), 1);
  if (b_vector) b_dims.push_back(1);
  int64_t a_inner = a_dims.back();
  int64_t b_inner = b_dims[b_dims.size() - 2];
  if (a_inner >= 0 && b_inner >= 0 && a_inner != b_inner) {
    return ctx.error("inner dimensions differ: " + input_label(ctx, 0) + " " + to_string(a) +
                     " has " + std::to_string(a_inner) + " columns but " + input_label(ctx, 1) +
                     " " + to_string(b) + " has " + std::to_string(b_inner) +
                     " rows; fix the operand shapes or insert a Transpose");
  }
  std::vector<int64_t> a_batch(a_dims.begin(), a_dims.end() - 2);
  std::vector<int64_t> b_batch(b_dims.begin(), b_dims.end() - 2);
  std::optional<std::vector<int64_t>> dims = broadcast_dims(a_batch, b_batch);
  if (!dims) {
    return ctx.error("batch dims of " + input_label(ctx, 0) + " " + to_string(a) + " and " +
                     input_label(ctx, 1) + " " + to_string(b) +
                     " cannot be broadcast; fix the shapes so each pair of batch dims is equal "
                     "or 1");
  }
  if (!a_vector) dims->push_back(a_dims[a_dims.size() - 2]);
  if (!b_vector) dims->push_back(b_dims.back());
  result.output_types[0] = TensorType::make(dtype, std::move(*dims));
  return result;
}

// Gemm: Y = alpha * A' * B' + beta * C with A' [M,K], B' [K,N] after the optional
// transposes; C (optional from opset 11) broadcasts to [M,N].
RuleResult gemm_rule(const Context& ctx) {
  if (ctx.opset < 11) STITCH_RETURN_IF_ERROR(require_input(ctx, 2, "C"));
  STITCH_RETURN_IF_ERROR(check_type_class(ctx, 0, TypeClass::kNumeric));
  STITCH_RETURN_IF_ERROR(check_same_dtype(ctx, 1, 0));
  STITCH_RETURN_IF_ERROR(check_same_dtype(ctx, 2, 0));
  const TensorType& a = *input_type(ctx, 0);
  const TensorType& b = *input_type(ctx, 1);
  DType dtype = first_dtype(ctx, {0, 1});
  ShapeInferenceResult result = make_result(ctx);
  for (size_t i = 0; i < 2; ++i) {
    const TensorType& type = *input_type(ctx, i);
    if (type.has_shape && type.rank() != 2) {
      return ctx.error(input_label(ctx, i) + " " + to_string(type) + " has rank " +
                       std::to_string(type.rank()) +
                       " but Gemm needs rank 2; reshape the input to 2-D or use MatMul");
    }
  }
  bool trans_a = ctx.node.int_attribute("transA", 0) != 0;
  bool trans_b = ctx.node.int_attribute("transB", 0) != 0;
  int64_t m = a.has_shape ? a.dims[trans_a ? 1 : 0] : kUnknownDim;
  int64_t k_a = a.has_shape ? a.dims[trans_a ? 0 : 1] : kUnknownDim;
  int64_t k_b = b.has_shape ? b.dims[trans_b ? 1 : 0] : kUnknownDim;
  int64_t n = b.has_shape ? b.dims[trans_b ? 0 : 1] : kUnknownDim;
  if (k_a >= 0 && k_b >= 0 && k_a != k_b) {
    return ctx.error("inner dimensions differ: " + input_label(ctx, 0) + " " + to_string(a) +
                     (trans_a ? " transposed" : "") + " has " + std::to_string(k_a) +
                     " columns but " + input_label(ctx, 1) + " " + to_string(b) +
                     (trans_b ? " transposed" : "") + " has " + std::to_string(k_b) +
                     " rows; fix the operand shapes or the transA/transB attributes");
  }
  TensorType output = TensorType::make(dtype, {m, n});
  const TensorType* c = input_type(ctx, 2);
  if (c != nullptr && c->has_shape) {
    std::optional<std::vector<int64_t>> dims = broadcast_dims(output.dims, c->dims);
    bool fits = dims && dims->size() == 2;
    for (size_t i = 0; fits && i < 2; ++i) {
      if (output.dims[i] >= 0 && (*dims)[i] >= 0 && (*dims)[i] != output.dims[i]) fits = false;
    }
    if (!fits) {
      return ctx.error(input_label(ctx, 2) + " " + to_string(*c) + " does not broadcast to the " +
                       "result " + dims_string(output.dims) +
                       "; give C a shape that broadcasts to [M,N]");
    }
  }
  result.output_types[0] = std::move(output);
  return result;
}

// Spatial output dims of Conv and the pools: SAME_* pads so that the output is
// ceil(in / stride) (ir::auto_pads); explicit pads beside an auto_pad other than
// NOTSET are refused unless they are the ones it gives (ir/core/window.h: ONNX's shape
// inference and ONNX Runtime read such a node differently). With ceil_mode, a last window that
// would start in the end padding is dropped, as the ONNX spec and PyTorch say (and as the reference
// interpreter computes). onnxruntime 1.20 keeps such a window and fills it with
// -FLT_MAX (MaxPool) or 0 (AveragePool): garbage we do not copy.
Result<std::vector<int64_t>> conv_pool_dims(const Context& ctx, const TensorType& input,
                                            const std::vector<int64_t>& kernel) {
  size_t n = kernel.size();
  if (input.rank() != static_cast<int64_t>(n) + 2) {
    return ctx.error(input_label(ctx, 0) + " " + to_string(input) + " has rank " +
                     std::to_string(input.rank()) + " but the kernel has " + std::to_string(n) +
                     " spatial dims; give the input the layout N x C x D1 ... Dn");
  }
  auto list = [&](std::string_view name, size_t size,
                  int64_t fallback) -> Result<std::vector<int64_t>> {
    const Attribute* attribute = ctx.node.find_attribute(name);
    if (attribute == nullptr) return std::vector<int64_t>(size, fallback);
    if (attribute->ints.size() != size) {
      return ctx.error("attribute \"" + std::string(name) + "\" has " +
                       std::to_string(attribute->ints.size()) + " values but " +
                       std::to_string(size) + " are needed for " + std::to_string(n) +
                       " spatial dims; give one value per spatial dim" +
                       (name == "pads" ? " at the begin and at the end" : ""));
    }
    return attribute->ints;
  };
  STITCH_ASSIGN_OR_RETURN(std::vector<int64_t> strides, list("strides", n, 1));
  STITCH_ASSIGN_OR_RETURN(std::vector<int64_t> dilations, list("dilations", n, 1));
  for (size_t i = 0; i < n; ++i) {
    if (strides[i] <= 0 || dilations[i] <= 0 || kernel[i] <= 0) {
      return ctx.error("kernel_shape " + values_string(kernel) + ", strides " +
                       values_string(strides) + " and dilations " + values_string(dilations) +
                       " must be positive; fix the attributes");
    }
  }
  std::string auto_pad = ctx.node.string_attribute("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" &&
      auto_pad != "SAME_LOWER") {
    return ctx.error("auto_pad " + support::quote_bounded(auto_pad) +
                     " is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER; fix the attribute");
  }
  // ceil_mode rounds explicit padding's windows only: VALID's and SAME's outputs are
  // defined by the spec whatever it says (as ir::sliding_window computes them).
  bool ceil_mode = auto_pad == "NOTSET" && ctx.node.int_attribute("ceil_mode", 0) != 0;
  std::vector<int64_t> pads(2 * n, 0);
  bool explicit_pads = ctx.node.find_attribute("pads") != nullptr;
  if (explicit_pads) {
    STITCH_ASSIGN_OR_RETURN(pads, list("pads", 2 * n, 0));
  }
  std::vector<int64_t> dims;
  for (size_t i = 0; i < n; ++i) {
    int64_t in = input.dims[i + 2];
    if (in < 0) {
      dims.push_back(kUnknownDim);
      continue;
    }
    // A dilation or pad near 2^63 overflows these sums: that window fits no input.
    int64_t effective_kernel = 0;
    if (__builtin_mul_overflow(kernel[i] - 1, dilations[i], &effective_kernel) ||
        __builtin_add_overflow(effective_kernel, 1, &effective_kernel)) {
      return ctx.error("kernel_shape " + values_string(kernel) + " with dilations " +
                       values_string(dilations) + " spans more than 2^63 elements of spatial dim " +
                       std::to_string(i) + "; fix the attributes");
    }
    int64_t stride = strides[i];
    if (std::optional<AxisPads> automatic = auto_pads(auto_pad, in, effective_kernel, stride)) {
      if (explicit_pads && (pads[i] != automatic->begin || pads[i + n] != automatic->end)) {
        return ctx.error("has pads " + values_string(pads) + " and auto_pad " + auto_pad +
                         ", which pads spatial dim " + std::to_string(i) + " by [" +
                         std::to_string(automatic->begin) + "," + std::to_string(automatic->end) +
                         "]; ONNX forbids using both (its shape inference takes the pads, ONNX "
                         "Runtime auto_pad): remove one of the two attributes");
      }
      pads[i] = automatic->begin;
      pads[i + n] = automatic->end;
    }
    int64_t padded = 0;
    if (__builtin_add_overflow(in, pads[i], &padded) ||
        __builtin_add_overflow(padded, pads[i + n], &padded)) {
      return ctx.error("pads " + values_string(pads) + " make spatial dim " + std::to_string(i) +
                       " longer than 2^63 elements; fix the attribute");
    }
    if (padded < effective_kernel) {
      return ctx.error("the kernel (" + std::to_string(effective_kernel) +
                       " with dilation) is larger than spatial dim " + std::to_string(i) + " of " +
                       input_label(ctx, 0) + " " + to_string(input) + " (" +
                       std::to_string(padded) +
                       " with padding); use a smaller kernel or pad "
                       "the input");
    }
    int64_t count = (padded - effective_kernel + (ceil_mode ? stride - 1 : 0)) / stride + 1;
    if (ceil_mode && (count - 1) * stride >= in + pads[i]) --count;
    dims.push_back(count);
  }
  return dims;
}

RuleResult conv_rule(const Context& ctx) {
  STITCH_RETURN_IF_ERROR(check_type_class(ctx, 0, TypeClass::kFloat));
  STITCH_RETURN_IF_ERROR(check_same_dtype(ctx, 1, 0));
  STITCH_RETURN_IF_ERROR(check_same_dtype(ctx, 2, 0));
  const TensorType& x = *input_type(ctx, 0);
  const TensorType& w = *input_type(ctx, 1);
  DType dtype = first_dtype(ctx, {0, 1});
  ShapeInferenceResult result = make_result(ctx);
  std::vector<int64_t> kernel = ctx.node.ints_attribute("kernel_shape", {});
  if (kernel.empty() && w.has_shape && w.rank() >= 3) {
    kernel.assign(w.dims.begin() + 2, w.dims.end());
  }
  int64_t rank = x.has_shape ? x.rank() : (w.has_shape ? w.rank() : -1);
  if (!x.has_shape || !w.has_shape) {
    result.output_types[0] = unknown_dims(dtype, rank);
    return result;
  }
  if (x.rank() < 3) {
    return ctx.error(input_label(ctx, 0) + " " + to_string(x) + " has rank " +
                     std::to_string(x.rank()) +
                     " but Conv needs N x C x D1 ... Dn; reshape the input");
  }
  if (w.rank() != x.rank()) {
    return ctx.error(input_label(ctx, 1) + " " + to_string(w) + " has rank " +
                     std::to_string(w.rank()) + " but " + input_label(ctx, 0) + " " + to_string(x) +
                     " has rank " + std::to_string(x.rank()) +
                     "; give W the layout M x C/group x k1 ... kn");
  }
  int64_t group = ctx.node.int_attribute("group", 1);
  if (x.dims[1] >= 0 && w.dims[1] >= 0 && x.dims[1] != w.dims[1] * group) {
    return ctx.error(input_label(ctx, 0) + " " + to_string(x) + " has " +
                     std::to_string(x.dims[1]) + " channels but " + input_label(ctx, 1) + " " +
                     to_string(w) + " expects " + std::to_string(w.dims[1]) + " x group " +
                     std::to_string(group) + "; fix the weight shape or the group attribute");
  }
  std::vector<int64_t> dims = {x.dims[0], w.dims[0]};
  bool kernel_known = std::all_of(kernel.begin(), kernel.end(), [](int64_t k) { return k >= 0; });
  if (!kernel_known) {
    dims.resize(static_cast<size_t>(x.rank()), kUnknownDim);
  } else {
    STITCH_ASSIGN_OR_RETURN(std::vector<int64_t> spatial, conv_pool_dims(ctx, x, kernel));
    dims.insert(dims.end(), spatial.begin(), spatial.end());
  }
  result.output_types[0] = TensorType::make(dtype, std::move(dims));
  return result;
}

// MaxPool (optional int64 Indices output) and AveragePool.
ShapeRule pool_rule(bool max_pool) {
  return [max_pool](const Context& ctx) -> RuleResult {
    STITCH_RETURN_IF_ERROR(
        check_type_class(ctx, 0, max_pool ? TypeClass::kNumeric : TypeClass::kFloat));
    const Attribute* kernel = ctx.node.find_attribute("kernel_shape");
    if (kernel == nullptr) return missing_attribute(ctx, "kernel_shape");
    const TensorType& x = *input_type(ctx, 0);
    ShapeInferenceResult result = make_result(ctx);
    TensorType output = unknown_dims(x.dtype, x.rank());
    if (x.has_shape) {
      STITCH_ASSIGN_OR_RETURN(std::vector<int64_t> spatial, conv_pool_dims(ctx, x, kernel->ints));
      output.dims = {x.dims[0], x.dims[1]};
      output.dims.insert(output.dims.end(), spatial.begin(), spatial.end());
    }
    if (result.output_types.size() > 1) {
      result.output_types[1] = output;
      result.output_types[1].dtype = DType::kInt64;
    }
    result.output_types[0] = std::move(output);
    return result;
  };
}

RuleResult global_pool_rule(const Context& ctx) {
  STITCH_RETURN_IF_ERROR(check_type_class(ctx, 0, TypeClass::kFloat));
  const TensorType& x = *input_type(ctx, 0);
  ShapeInferenceResult result = make_result(ctx);
  TensorType output = x;
  if (x.has_shape) {
    if (x.rank() < 2) {
      return ctx.error(input_label(ctx, 0) + " " + to_string(x) + " has rank " +
                       std::to_string(x.rank()) +
                       " but global pooling needs N x C x D1 ...; reshape the input");
    }
    std::fill(output.dims.begin() + 2, output.dims.end(), 1);
  }
  result.output_types[0] = std::move(output);
  return result;
}

// "0.5", "nan", "-inf", "1e+30": a float from the model, for messages.
std::string float_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

// "[1,1,0.5,nan]", bounded as values_string.
std::string floats_string(const std::vector<double>& values) {
  return support::list_text(values.size(), [&](size_t i) { return float_text(values[i]); });
}

// Float values of a constant input (Resize's scales), or nullopt.
std::optional<std::vector<double>> input_floats(const Context& ctx, size_t index) {
  if (index >= ctx.input_values.size() || ctx.input_values[index] == nullptr) return std::nullopt;
  const Tensor& tensor = *ctx.input_values[index];
  if (tensor.external || static_cast<int64_t>(tensor.bytes.size()) !=
                             tensor.num_elements() * dtype_size(tensor.dtype)) {
    return std::nullopt;
  }
  std::vector<double> values;
  for (int64_t i = 0; i < tensor.num_elements(); ++i) values.push_back(tensor.float_at(i));
  return values;
}

// Resize: scales is input 1 at opset 10 and input 2 from 11 (roi is input 1), sizes
// is input 3; from 18 "axes" limits the resized axes and keep_aspect_ratio_policy
// adjusts sizes.
RuleResult resize_rule(const Context& ctx) {
  const TensorType& x = *input_type(ctx, 0);
  ShapeInferenceResult result = make_result(ctx);
  size_t scales_index = ctx.opset >= 11 ? 2 : 1;
  if (ctx.opset < 13) STITCH_RETURN_IF_ERROR(require_input(ctx, scales_index, "scales"));
  if (!x.has_shape) {
    result.output_types[0] = unknown_type(x.dtype);
    return result;
  }
  int64_t rank = x.rank();
  std::vector<int64_t> axes;
  if (ctx.opset >= 18 && ctx.node.find_attribute("axes") != nullptr) {
    for (int64_t axis : ctx.node.ints_attribute("axes", {})) {
      STITCH_ASSIGN_OR_RETURN(int64_t normalized, normalize_axis(ctx, axis, rank, "the axes"));
      axes.push_back(normalized);
    }
  } else {
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  }
  std::vector<int64_t> dims = x.dims;
  std::optional<std::vector<int64_t>> sizes;
  if (ctx.opset >= 11 && has_input(ctx, 3)) sizes = input_ints(ctx, 3);
  std::optional<std::vector<double>> scales = input_floats(ctx, scales_index);
  if (sizes && sizes->empty()) sizes.reset();
  if (scales && scales->empty()) scales.reset();
  bool crop =
      ctx.node.string_attribute("coordinate_transformation_mode", "") == "tf_crop_and_resize";
  // Constant scales are checked even where sizes decide the shape: the reference
  // evaluation refuses a scale that is not positive and finite.
  if (scales) {
    for (size_t i = 0; i < scales->size(); ++i) {
      const double scale = (*scales)[i];
      if (!(scale > 0) || !std::isfinite(scale)) {
        return ctx.error(input_label(ctx, scales_index) + " " + floats_string(*scales) +
                         " has the scale " + float_text(scale) + " at index " + std::to_string(i) +
                         "; give positive, finite scales");
      }
    }
  }
  if (sizes) {
    for (size_t i = 0; i < sizes->size(); ++i) {
      if ((*sizes)[i] < 0) {
        return ctx.error(input_label(ctx, 3) + " " + values_string(*sizes) + " has the size " +
                         std::to_string((*sizes)[i]) + " at index " + std::to_string(i) +
                         "; give sizes >= 0");
      }
    }
    if (sizes->size() != axes.size()) {
      return ctx.error("sizes " + values_string(*sizes) + " has " + std::to_string(sizes->size()) +
                       " entries for " + std::to_string(axes.size()) +
                       " resized axes; give one size per axis");
    }
    std::string policy = ctx.node.string_attribute("keep_aspect_ratio_policy", "stretch");
    if (ctx.opset < 18 || policy == "stretch") {
      for (size_t i = 0; i < axes.size(); ++i) dims[static_cast<size_t>(axes[i])] = (*sizes)[i];
    } else {
      double scale = policy == "not_larger" ? 1e300 : 0.0;
      bool known = true;
      for (size_t i = 0; i < axes.size(); ++i) {
        int64_t in = x.dims[static_cast<size_t>(axes[i])];
        if (in <= 0) {
          known = false;
          break;
        }
        double ratio = static_cast<double>((*sizes)[i]) / static_cast<double>(in);
        scale = policy == "not_larger" ? std::min(scale, ratio) : std::max(scale, ratio);
      }
      for (int64_t axis : axes) {
        int64_t& dim = dims[static_cast<size_t>(axis)];
        dim = known ? static_cast<int64_t>(std::floor(scale * static_cast<double>(dim) + 0.5))
                    : kUnknownDim;
      }
    }
  } else if (scales && !crop) {
    if (scales->size() != axes.size()) {
      return ctx.error("scales has " + std::to_string(scales->size()) + " entries for " +
                       std::to_string(axes.size()) + " resized axes; give one scale per axis");
    }
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t& dim = dims[static_cast<size_t>(axes[i])];
      if (dim < 0) continue;
      const double resized = std::floor(static_cast<double>(dim) * (*scales)[i]);
      // Past 2^62 the conversion to int64 would overflow; no tensor is that long.
      if (resized >= 0x1p62) {
        return ctx.error("the scale " + float_text((*scales)[i]) + " makes axis " +
                         std::to_string(axes[i]) + " (size " + std::to_string(dim) + ") " +
                         float_text(resized) + " elements long; give a smaller scale");
      }
      dim = static_cast<int64_t>(resized);
    }
  } else {
    for (int64_t axis : axes) dims[static_cast<size_t>(axis)] = kUnknownDim;
  }
  // Nothing to sample from: the reference evaluation refuses it, so the model is
  // refused here, before anything is compiled.
  for (size_t a = 0; a < x.dims.size(); ++a) {
    if (x.dims[a] == 0 && dims[a] > 0) {
      return ctx.error("resizes an empty axis " + std::to_string(a) + " to " +
                       std::to_string(dims[a]) + "; give a non-empty input");
    }
  }
  result.output_types[0] = TensorType::make(x.dtype, std::move(dims));
  return result;
}

// TopK: k is an attribute before opset 10 and a 1-element input after.
RuleResult topk_rule(const Context& ctx) {
  STITCH_RETURN_IF_ERROR(check_type_class(ctx, 0, TypeClass::kNumeric));
  const TensorType& x = *input_type(ctx, 0);
  std::optional<int64_t> k;
  if (ctx.opset < 10) {
    const Attribute* attribute = ctx.node.find_attribute("k");
    if (attribute == nullptr) return missing_attribute(ctx, "k");
    k = attribute->i;
  } else {
    STITCH_RETURN_IF_ERROR(require_input(ctx, 1, "K"));
    STITCH_RETURN_IF_ERROR(check_type_class(ctx, 1, TypeClass::kInteger));
    std::optional<std::vector<int64_t>> values = input_ints(ctx, 1);
    if (values && values->size() == 1) k = (*values)[0];
  }
  ShapeInferenceResult result = make_result(ctx);
  TensorType values_type = unknown_type(x.dtype);
  if (x.has_shape) {
    STITCH_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx, ctx.node.int_attribute("axis", -1),
                                                         x.rank(), "the \"axis\" attribute"));
    values_type = x;
    int64_t& dim = values_type.dims[static_cast<size_t>(axis)];
    if (k && (*k < 0 || (dim >= 0 && *k > dim))) {
      return ctx.error("k " + std::to_string(*k) + " is outside [0, " + std::to_string(dim) +
                       "] for axis " + std::to_string(axis) + " of " + input_label(ctx, 0) + " " +
                       to_string(x) + "; use a k no larger than the axis");
    }
    dim = k ? *k : kUnknownDim;
  }
  result.output_types[0] = values_type;
  if (result.output_types.size() > 1) {
    values_type.dtype = DType::kInt64;
    result.output_types[1] = std::move(values_type);
  }
  return result;
}

// Ops whose output size depends on tensor values: the dims that do are unknown (the
// report's unknown_type_roots names them as data-dependent), the others are typed.
// NonZero: i64[rank(x), ?].
RuleResult nonzero_rule(const Context& ctx) {
  const TensorType& x = *input_type(ctx, 0);
  ShapeInferenceResult result = make_result(ctx);
  result.output_types[0] = x.has_shape ? TensorType::make(DType::kInt64, {x.rank(), kUnknownDim})
                                       : unknown_dims(DType::kInt64, 2);
  return result;
}

// Compress: x with the selected axis of unknown size, or a vector without an axis.
RuleResult compress_rule(const Context& ctx) {
  STITCH_RETURN_IF_ERROR(check_type_class(ctx, 1, TypeClass::kBool));
  const TensorType& x = *input_type(ctx, 0);
  ShapeInferenceResult result = make_result(ctx);
  const Attribute* axis_attribute = ctx.node.find_attribute("axis");
  if (axis_attribute == nullptr) {
    result.output_types[0] = unknown_dims(x.dtype, 1);
  } else if (x.has_shape) {
    STITCH_ASSIGN_OR_RETURN(
        int64_t axis, normalize_axis(ctx, axis_attribute->i, x.rank(), "the \"axis\" attribute"));
    result.output_types[0] = x;
    result.output_types[0].dims[static_cast<size_t>(axis)] = kUnknownDim;
  } else {
    result.output_types[0] = unknown_type(x.dtype);
  }
  return result;
}

// Einsum: the output shape from the equation's labels, implicit form included
// (ellipsis dims, then the labels used once, alphabetically).
RuleResult einsum_rule(const Context& ctx) {
  const Attribute* equation_attribute = ctx.node.find_attribute("equation");
  if (equation_attribute == nullptr) return missing_attribute(ctx, "equation");
  std::string equation;
  for (char c : equation_attribute->s) {
    if (c != ' ') equation += c;
  }
  DType dtype = first_dtype(ctx, {0});
  for (size_t i = 1; i < ctx.input_types.size(); ++i) {
    STITCH_RETURN_IF_ERROR(check_same_dtype(ctx, i, 0));
  }
  auto bad = [&](const std::string& why) {
    return ctx.error("equation " + support::quote_bounded(equation_attribute->s) + " " + why +
                     "; write it as e.g. \"bij,bjk->bik\"");
  };
  size_t arrow = equation.find("->");
  std::string lhs = equation.substr(0, arrow);
  std::vector<std::string> terms;
  size_t begin = 0;
  while (true) {
    size_t comma = lhs.find(',', begin);
    terms.push_back(
        lhs.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  if (terms.size() != ctx.input_types.size()) {
    return bad("has " + std::to_string(terms.size()) + " operand terms but the node has " +
               std::to_string(ctx.input_types.size()) + " inputs");
  }
  std::map<char, int64_t> label_dims;
  std::map<char, int> label_counts;
  std::optional<std::vector<int64_t>> ellipsis_dims = std::vector<int64_t>{};
  bool any_ellipsis = false;
  for (size_t t = 0; t < terms.size(); ++t) {
    const std::string& term = terms[t];
    size_t dots = term.find("...");
    std::string labels = term;
    if (dots != std::string::npos) labels.erase(dots, 3);
    for (char c : labels) {
      if (!std::isalpha(static_cast<unsigned char>(c)))
        return bad("has the character '" + std::string(1, c) + "'");
      ++label_counts[c];
    }
    const TensorType& type = *input_type(ctx, t);
    if (!type.has_shape) {
      if (dots != std::string::npos) ellipsis_dims.reset();
      continue;
    }
    auto label_count = static_cast<int64_t>(labels.size());
    int64_t ellipsis_rank = type.rank() - label_count;
    if ((dots == std::string::npos && ellipsis_rank != 0) || ellipsis_rank < 0) {
      return bad("gives term " + std::to_string(t) + " " + support::quote_bounded(term) + " " +
                 std::to_string(label_count) + " labels but " + input_label(ctx, t) + " is " +
                 to_string(type));
    }
    size_t dim_index = 0;
    std::vector<int64_t> operand_ellipsis;
    for (size_t pos = 0; pos < term.size();) {
      if (term.compare(pos, 3, "...") == 0) {
        any_ellipsis = true;
        for (int64_t e = 0; e < ellipsis_rank; ++e)
          operand_ellipsis.push_back(type.dims[dim_index++]);
        pos += 3;
        continue;
      }
      int64_t dim = type.dims[dim_index++];
      auto [it, inserted] = label_dims.emplace(term[pos], dim);
      int64_t& known = it->second;
      if (!inserted && dim != known) {
        // A size-1 label broadcasts against the others (as numpy's einsum does).
        if (dim < 0) {
          if (known == 1) known = kUnknownDim;
        } else if (known < 0 || known == 1) {
          if (dim != 1 || known == 1) known = dim;
        } else if (dim != 1) {
          return bad("uses label '" + std::string(1, term[pos]) + "' for sizes " +
                     std::to_string(known) + " and " + std::to_string(dim));
        }
      }
      ++pos;
    }
    if (ellipsis_dims) {
      std::optional<std::vector<int64_t>> merged = broadcast_dims(*ellipsis_dims, operand_ellipsis);
      if (!merged) return bad("has '...' dims that cannot be broadcast");
      ellipsis_dims = std::move(merged);
    }
  }
  std::string output;
  if (arrow != std::string::npos) {
    output = equation.substr(arrow + 2);
  } else {
    if (any_ellipsis) output = "...";
    for (const auto& [label, count] : label_counts) {
      if (count == 1) output += label;
    }
  }
  ShapeInferenceResult result = make_result(ctx);
  std::vector<int64_t> dims;
  for (size_t pos = 0; pos < output.size();) {
    if (output.compare(pos, 3, "...") == 0) {
      if (!ellipsis_dims) {
        result.output_types[0] = unknown_type(dtype);
        return result;
      }
      dims.insert(dims.end(), ellipsis_dims->begin(), ellipsis_dims->end());
      pos += 3;
      continue;
    }
    char label = output[pos++];
    if (!label_counts.contains(label)) {
      return bad("has the output label '" + std::string(1, label) + "' that no operand uses");
    }
    auto it = label_dims.find(label);
    dims.push_back(it == label_dims.end() ? kUnknownDim : it->second);
  }
  result.output_types[0] = TensorType::make(dtype, std::move(dims));
  return result;
}

// LSTM: Y is [seq, dirs, batch, hidden] (layout 0) or [batch, seq, dirs, hidden]
// (layout 1, opset 14); Y_h and Y_c are [dirs, batch, hidden] or [batch, dirs, hidden].
// LSTM, GRU and RNN: Y [seq, directions, batch, hidden] and the last states
// [directions, batch, hidden] (batch first with layout=1, opset 14).
RuleResult recurrent_rule(const Context& ctx) {
  STITCH_RETURN_IF_ERROR(check_type_class(ctx, 0, TypeClass::kFloat));
  for (size_t i : {1, 2, 3, 5, 6, 7}) STITCH_RETURN_IF_ERROR(check_same_dtype(ctx, i, 0));
  STITCH_RETURN_IF_ERROR(check_type_class(ctx, 4, TypeClass::kInteger));
  const TensorType& x = *input_type(ctx, 0);
  const TensorType& r = *input_type(ctx, 2);
  std::string direction = ctx.node.string_attribute("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
    return ctx.error("direction " + support::quote_bounded(direction) +
                     " is not forward, reverse or bidirectional; fix the attribute");
  }
  int64_t directions = direction == "bidirectional" ? 2 : 1;
  bool batch_first = ctx.opset >= 14 && ctx.node.int_attribute("layout", 0) != 0;
  if (x.has_shape && x.rank() != 3) {
    return ctx.error(input_label(ctx, 0) + " " + to_string(x) + " has rank " +
                     std::to_string(x.rank()) + " but " + ctx.node.op_type +
                     " needs [seq_length, batch_size, input_size]; reshape the input");
  }
  int64_t seq = x.has_shape ? x.dims[batch_first ? 1 : 0] : kUnknownDim;
  int64_t batch = x.has_shape ? x.dims[batch_first ? 0 : 1] : kUnknownDim;
  int64_t hidden = ctx.node.int_attribute("hidden_size", kUnknownDim);
  if (hidden < 0 && r.has_shape && r.rank() == 3) hidden = r.dims[2];
  DType dtype = x.dtype;
  ShapeInferenceResult result = make_result(ctx);
  std::vector<int64_t> y = batch_first ? std::vector<int64_t>{batch, seq, directions, hidden}
                                       : std::vector<int64_t>{seq, directions, batch, hidden};
  std::vector<int64_t> state = batch_first ? std::vector<int64_t>{batch, directions, hidden}
                                           : std::vector<int64_t>{directions, batch, hidden};
  for (size_t i = 0; i < result.output_types.size(); ++i) {
    result.output_types[i] = TensorType::make(dtype, i == 0 ? y : state);
  }
  return result;
}

constexpr int kVariadic = -1;

}  // namespace

void add_nn_schemas(std::vector<OpSchema>& schemas) {
  schemas.push_back({"MatMul", OpKind::kGemm, 7, 2, 2, 1, 1, matmul_rule});
  schemas.push_back({"Gemm", OpKind::kGemm, 7, 2, 3, 1, 1, gemm_rule});
  schemas.push_back({"Conv", OpKind::kConv, 7, 2, 3, 1, 1, conv_rule});
  schemas.push_back({"MaxPool", OpKind::kStencil, 7, 1, 1, 1, 2, pool_rule(true)});
  schemas.push_back({"AveragePool", OpKind::kStencil, 7, 1, 1, 1, 1, pool_rule(false)});
  schemas.push_back({"GlobalAveragePool", OpKind::kOpaque, 7, 1, 1, 1, 1, global_pool_rule});
  schemas.push_back({"GlobalMaxPool", OpKind::kOpaque, 7, 1, 1, 1, 1, global_pool_rule});
  schemas.push_back({"Resize", OpKind::kOpaque, 10, 1, 4, 1, 1, resize_rule});
  schemas.push_back({"TopK", OpKind::kOpaque, 7, 1, 2, 2, 2, topk_rule});
  schemas.push_back({"NonZero", OpKind::kOpaque, 9, 1, 1, 1, 1, nonzero_rule});
  schemas.push_back({"Compress", OpKind::kOpaque, 9, 2, 2, 1, 1, compress_rule});
  schemas.push_back({"Einsum", OpKind::kOpaque, 12, 1, kVariadic, 1, 1, einsum_rule});
  schemas.push_back({"LSTM", OpKind::kOpaque, 7, 3, 8, 0, 3, recurrent_rule});
  schemas.push_back({"GRU", OpKind::kOpaque, 7, 3, 6, 0, 2, recurrent_rule});
  schemas.push_back({"RNN", OpKind::kOpaque, 7, 3, 6, 0, 2, recurrent_rule});
}

}  // namespace stitch::ir::shape_rules
