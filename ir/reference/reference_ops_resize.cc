// Reference kernel of Resize: nearest and (multi)linear with the coordinate
// transformations ONNX defines, in float where ONNX Runtime computes in float.
// The kernel is three steps: read the parameters (output dims and per-axis scales
// from sizes or scales), then either map every output index to its nearest source
// index, or interpolate one axis at a time (separable, equal to multilinear).
#include <algorithm>
#include <cmath>
#include <optional>

#include "ir/reference/reference_ops.h"

namespace stitch::ir::reference {
namespace {

// coordinate_transformation_mode, read once: the per-index code compares no strings.
enum class Transform {
  kHalfPixel,
  kAsymmetric,
  kAlignCorners,
  kPytorchHalfPixel,
  kHalfPixelSymmetric
};

// nearest_mode, read once.
enum class Rounding { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kSimple, kUnknown };

// What Resize does, read from the node: the mode, the transformation of output to
// source coordinates, the rounding of nearest, and per axis the scale and output dim.
struct ResizeParameters {
  std::string mode;
  Transform transform = Transform::kHalfPixel;
  std::string nearest_mode;
  std::vector<float> scales;
  std::vector<int64_t> out_dims;
};

std::optional<Transform> transform_named(const std::string& name) {
  if (name == "half_pixel") return Transform::kHalfPixel;
  if (name == "asymmetric") return Transform::kAsymmetric;
  if (name == "align_corners") return Transform::kAlignCorners;
  if (name == "pytorch_half_pixel") return Transform::kPytorchHalfPixel;
  if (name == "half_pixel_symmetric") return Transform::kHalfPixelSymmetric;
  return std::nullopt;
}

Rounding rounding_named(const std::string& name) {
  if (name == "round_prefer_floor") return Rounding::kRoundPreferFloor;
  if (name == "round_prefer_ceil") return Rounding::kRoundPreferCeil;
  if (name == "floor") return Rounding::kFloor;
  if (name == "ceil") return Rounding::kCeil;
  if (name == "simple") return Rounding::kSimple;
  return Rounding::kUnknown;
}

// Sets `parameters.out_dims` and `.scales` from the sizes input on `axes`.
Status read_sizes(const KernelContext& ctx, const Tensor& x, const Tensor& sizes_tensor,
                  const std::vector<int64_t>& axes, ResizeParameters& parameters) {
  const auto rank = static_cast<int64_t>(x.dims.size());
  std::vector<int64_t> sizes = sizes_tensor.to_int64_vector();
  if (sizes.size() != axes.size()) {
    return ctx.error("sizes has " + std::to_string(sizes.size()) + " entries for " +
                     std::to_string(axes.size()) + " axes; give one per axis");
  }
  for (size_t k = 0; k < axes.size(); ++k) {
    int64_t axis = 0;
    if (!normalize_axis(axes[k], rank, &axis)) return ctx.error("axes attribute out of range");
    auto a = static_cast<size_t>(axis);
    parameters.out_dims[a] = sizes[k];
    parameters.scales[a] = static_cast<float>(sizes[k]) / static_cast<float>(x.dims[a]);
  }
  return Status::ok();
}

// Sets `parameters.out_dims` and `.scales` from the scales input on `axes`.
Status read_scales(const KernelContext& ctx, const Tensor& x, const Tensor& scales_tensor,
                   const std::vector<int64_t>& axes, ResizeParameters& parameters) {
  const auto rank = static_cast<int64_t>(x.dims.size());
  if (!dtype_is_float(scales_tensor.dtype)) return ctx.unsupported_dtype(ctx.opset >= 11 ? 2 : 1);
  if (static_cast<size_t>(scales_tensor.num_elements()) != axes.size()) {
    return ctx.error("scales has " + std::to_string(scales_tensor.num_elements()) +
                     " entries for " + std::to_string(axes.size()) + " axes; give one per axis");
  }
  for (size_t k = 0; k < axes.size(); ++k) {
    int64_t axis = 0;
    if (!normalize_axis(axes[k], rank, &axis)) return ctx.error("axes attribute out of range");
    auto a = static_cast<size_t>(axis);
    float& scale = parameters.scales[a];
    scale = static_cast<float>(scales_tensor.float_at(static_cast<int64_t>(k)));
    if (scale <= 0) return ctx.error("has a scale <= 0; scales must be positive");
    parameters.out_dims[a] =
        static_cast<int64_t>(std::floor(scale * static_cast<float>(x.dims[a])));
  }
  return Status::ok();
}

Result<ResizeParameters> read_parameters(const KernelContext& ctx, const Tensor& x) {
  const auto rank = static_cast<int64_t>(x.dims.size());
  ResizeParameters parameters;
  parameters.mode = ctx.node.string_attribute("mode", "nearest");
  const std::string transform =
      ctx.opset >= 11 ? ctx.node.string_attribute("coordinate_transformation_mode", "half_pixel")
                      : "asymmetric";
  parameters.nearest_mode =
      ctx.opset >= 11 ? ctx.node.string_attribute("nearest_mode", "round_prefer_floor") : "simple";
  if (parameters.mode != "nearest" && parameters.mode != "linear") {
    return ctx.error("has mode \"" + parameters.mode +
                     "\", which has no reference evaluation; use nearest or linear");
  }
  if (ctx.node.int_attribute("antialias", 0) != 0) {
    return ctx.error("antialias=1 has no reference evaluation; use antialias=0");
  }
  if (ctx.node.string_attribute("keep_aspect_ratio_policy", "stretch") != "stretch") {
    return ctx.error("keep_aspect_ratio_policy other than stretch has no reference evaluation");
  }
  const Tensor* scales_tensor = ctx.opset >= 11 ? ctx.input(2) : ctx.input(1);
  const Tensor* sizes_tensor = ctx.opset >= 11 ? ctx.input(3) : nullptr;
  std::vector<int64_t> axes = ctx.node.ints_attribute("axes", {});
  if (axes.empty()) {
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  }
  parameters.scales.assign(static_cast<size_t>(rank), 1.0f);
  parameters.out_dims = x.dims;
  if (sizes_tensor != nullptr && sizes_tensor->num_elements() > 0) {
    STITCH_RETURN_IF_ERROR(read_sizes(ctx, x, *sizes_tensor, axes, parameters));
  } else if (scales_tensor != nullptr && scales_tensor->num_elements() > 0) {
    STITCH_RETURN_IF_ERROR(read_scales(ctx, x, *scales_tensor, axes, parameters));
  } else {
    return ctx.error("has neither scales nor sizes; give one of them");
  }
  STITCH_RETURN_IF_ERROR(ctx.check_output_dims(parameters.out_dims));
  for (size_t a = 0; a < x.dims.size(); ++a) {
    if (x.dims[a] == 0 && parameters.out_dims[a] > 0) {
      return ctx.error("resizes an empty axis " + std::to_string(a) + " to " +
                       std::to_string(parameters.out_dims[a]) + "; give a non-empty input");
    }
  }
  std::optional<Transform> known = transform_named(transform);
  if (!known) {
    return ctx.error("has coordinate_transformation_mode \"" + transform +
                     "\", which has no reference evaluation; use half_pixel, asymmetric, "
                     "align_corners, pytorch_half_pixel or half_pixel_symmetric");
  }
  parameters.transform = *known;
  return parameters;
}

// Source coordinate of output index i on axis a, in float as ONNX Runtime computes it.
float source_coordinate(const ResizeParameters& parameters, const Tensor& x, size_t a, int64_t i) {
  const float scale = parameters.scales[a];
  const auto in = static_cast<float>(x.dims[a]);
  const auto out = static_cast<float>(parameters.out_dims[a]);
  const auto index = static_cast<float>(i);
  switch (parameters.transform) {
    case Transform::kAsymmetric:
      return index / scale;
    case Transform::kAlignCorners:
      return out <= 1 ? 0.0f : index * (in - 1) / (out - 1);
    case Transform::kPytorchHalfPixel:
      return out > 1 ? (index + 0.5f) / scale - 0.5f : 0.0f;
    case Transform::kHalfPixelSymmetric: {
      const float adjustment = out / (scale * in);
      const float center = in / 2;
      const float offset = center * (1 - adjustment);
      return offset + (index + 0.5f) / scale - 0.5f;
    }
    case Transform::kHalfPixel:
      break;
  }
  return (index + 0.5f) / scale - 0.5f;
}

KernelResult resize_nearest(const KernelContext& ctx, const Tensor& x,
                            const ResizeParameters& parameters) {
  const Rounding rounding = rounding_named(parameters.nearest_mode);
  std::vector<std::vector<int64_t>> maps(x.dims.size());
  for (size_t a = 0; a < x.dims.size(); ++a) {
    maps[a].resize(static_cast<size_t>(parameters.out_dims[a]));
    for (int64_t i = 0; i < parameters.out_dims[a]; ++i) {
      float position = source_coordinate(parameters, x, a, i);
      int64_t index = 0;
      switch (rounding) {
        case Rounding::kRoundPreferFloor:
          index = position == std::floor(position) + 0.5f
                      ? static_cast<int64_t>(std::floor(position))
                      : static_cast<int64_t>(std::round(position));
          break;
        case Rounding::kRoundPreferCeil:
          index = static_cast<int64_t>(std::round(position));
          break;
        case Rounding::kFloor:
          index = static_cast<int64_t>(std::floor(position));
          break;
        case Rounding::kCeil:
          index = static_cast<int64_t>(std::ceil(position));
          break;
        case Rounding::kSimple:
          index = parameters.scales[a] < 1 ? static_cast<int64_t>(std::ceil(position))
                                           : static_cast<int64_t>(position);
          break;
        case Rounding::kUnknown:
          return ctx.error("has nearest_mode \"" + parameters.nearest_mode +
                           "\"; use round_prefer_floor, round_prefer_ceil, floor or ceil");
      }
      maps[a][static_cast<size_t>(i)] = std::clamp<int64_t>(index, 0, x.dims[a] - 1);
    }
  }
  return single(gather_by_axis_maps(x, parameters.out_dims, maps, ""));
}

KernelResult resize_linear(const KernelContext& ctx, const Tensor& x,
                           const ResizeParameters& parameters) {
  if (!dtype_is_float(x.dtype)) return ctx.unsupported_dtype(0);
  const std::vector<int64_t>& out_dims = parameters.out_dims;
  std::vector<double> current = doubles_of(x);
  std::vector<int64_t> dims = x.dims;
  for (size_t a = 0; a < x.dims.size(); ++a) {
    if (out_dims[a] == dims[a] && parameters.scales[a] == 1.0f) continue;
    const int64_t outer = dims_product(dims, 0, a);
    const int64_t inner = dims_product(dims, a + 1, dims.size());
    const int64_t in = dims[a];
    const int64_t out = out_dims[a];
    std::vector<double> next(static_cast<size_t>(outer * out * inner));
    for (int64_t i = 0; i < out; ++i) {
      float position =
          std::clamp(source_coordinate(parameters, x, a, i), 0.0f, static_cast<float>(in - 1));
      auto low = static_cast<int64_t>(position);
      int64_t high = std::min(low + 1, in - 1);
      double high_weight = static_cast<double>(position) - static_cast<double>(low);
      double low_weight = 1.0 - high_weight;
      for (int64_t o = 0; o < outer; ++o) {
        const double* from_low = current.data() + (o * in + low) * inner;
        const double* from_high = current.data() + (o * in + high) * inner;
        double* to = next.data() + (o * out + i) * inner;
        for (int64_t j = 0; j < inner; ++j)
          to[j] = low_weight * from_low[j] + high_weight * from_high[j];
      }
    }
    current = std::move(next);
    dims[a] = out;
  }
  return single(tensor_of_doubles(x.dtype, out_dims, current));
}

KernelResult resize_kernel(const KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  STITCH_ASSIGN_OR_RETURN(ResizeParameters parameters, read_parameters(ctx, x));
  if (parameters.mode == "nearest") return resize_nearest(ctx, x, parameters);
  return resize_linear(ctx, x, parameters);
}

}  // namespace

void add_resize_kernels(KernelTable& table) { table["Resize"] = resize_kernel; }

}  // namespace stitch::ir::reference
