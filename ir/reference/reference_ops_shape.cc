// Reference kernels of the data-movement and constant-source ops: Expand, Transpose,
// Reshape, Flatten, Squeeze, Unsqueeze, Concat, Split, Slice, Gather,
// GatherElements, Pad, Tile, Trilu, ScatterND, CumSum, Shape, Size,
// ConstantOfShape, Constant, Range.
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "ir/core/op_registry.h"
#include "ir/reference/reference_ops.h"

namespace stitch::ir::reference {

namespace {

Tensor with_dims(const Tensor& x, std::vector<int64_t> dims) {
  Tensor out;
  out.dtype = x.dtype;
  out.dims = std::move(dims);
  out.bytes = x.bytes;
  out.strings = x.strings;
  return out;
}

Status check_integer(const KernelContext& ctx, size_t index) {
  const Tensor* tensor = ctx.input(index);
  if (tensor != nullptr && tensor->dtype != DType::kInt64 && tensor->dtype != DType::kInt32) {
    return ctx.unsupported_dtype(index);
  }
  return Status::ok();
}

// Normalized, sorted, duplicate-free axes.
Result<std::vector<int64_t>> axes_of(const KernelContext& ctx, const std::vector<int64_t>& axes,
                                     int64_t rank) {
  std::vector<int64_t> normalized;
  for (int64_t axis : axes) {
    STITCH_ASSIGN_OR_RETURN(int64_t a, axis_of(ctx, axis, rank));
    normalized.push_back(a);
  }
  std::sort(normalized.begin(), normalized.end());
  if (std::adjacent_find(normalized.begin(), normalized.end()) != normalized.end()) {
    return ctx.error("repeats an axis in " + dims_string(axes) + "; give each axis once");
  }
  return normalized;
}

KernelResult expand_kernel(const KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  STITCH_RETURN_IF_ERROR(check_integer(ctx, 1));
  std::vector<int64_t> shape = ctx.input(1)->to_int64_vector();
  std::vector<int64_t> dims;
  if (!broadcast_shapes(x.dims, shape, &dims)) {
    return ctx.error("cannot expand " + dims_string(x.dims) + " to " + dims_string(shape) +
                     "; the shapes do not broadcast");
  }
  STITCH_RETURN_IF_ERROR(ctx.check_output_dims(dims));
  std::vector<int64_t> source_dims(dims.size() - x.dims.size(), 1);
  source_dims.insert(source_dims.end(), x.dims.begin(), x.dims.end());
  std::vector<std::vector<int64_t>> maps(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    maps[d].resize(static_cast<size_t>(dims[d]));
    for (int64_t i = 0; i < dims[d]; ++i) {
      maps[d][static_cast<size_t>(i)] = source_dims[d] == 1 ? 0 : i;
    }
  }
  return single(gather_by_axis_maps(with_dims(x, source_dims), dims, maps, ""));
}

KernelResult transpose_kernel(const KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  const auto rank = static_cast<int64_t>(x.dims.size());
  std::vector<int64_t> perm;
  for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  perm = ctx.node.ints_attribute("perm", perm);
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < static_cast<int64_t>(sorted.size()); ++i) {
    if (static_cast<int64_t>(sorted.size()) != rank || sorted[static_cast<size_t>(i)] != i) {
      return ctx.error("perm " + dims_string(perm) + " is not a permutation of the " +
                       std::to_string(rank) + " axes of the input; fix the perm attribute");
    }
  }
  if (static_cast<int64_t>(perm.size()) != rank) {
    return ctx.error("perm " + dims_string(perm) + " is not a permutation of the " +
                     std::to_string(rank) + " axes of the input; fix the perm attribute");
  }
  std::vector<int64_t> in_strides = row_major_strides(x.dims);
  std::vector<int64_t> dims(perm.size());
  std::vector<int64_t> strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    dims[i] = x.dims[static_cast<size_t>(perm[i])];
    strides[i] = in_strides[static_cast<size_t>(perm[i])];
  }
  Tensor out = make_tensor(x.dtype, dims);
  const int64_t size = dtype_size(x.dtype);
  const char* src = x.bytes.data();
  char* dst = out.bytes.data();
  auto copy = [&](auto element) {
    using E = decltype(element);
    for_each_index<1>(dims, {&strides}, {0}, [&](int64_t i, const std::array<int64_t, 1>& off) {
      std::memcpy(dst + i * static_cast<int64_t>(sizeof(E)),
                  src + off[0] * static_cast<int64_t>(sizeof(E)), sizeof(E));
    });
  };
  switch (size) {
    case 1:
      copy(uint8_t{});
      break;
    case 2:
      copy(uint16_t{});
      break;
    case 4:
      copy(uint32_t{});
      break;
    case 8:
      copy(uint64_t{});
      break;
    default:
      return ctx.unsupported_dtype(0);
  }
  return single(std::move(out));
}

KernelResult reshape_kernel(const KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  STITCH_RETURN_IF_ERROR(check_integer(ctx, 1));
  std::vector<int64_t> shape = ctx.input(1)->to_int64_vector();
  bool allow_zero = ctx.opset >= 14 && ctx.node.int_attribute("allowzero", 0) != 0;
  std::vector<int64_t> magnitudes;
  for (int64_t d : shape) magnitudes.push_back(d == -1 ? 1 : d);
  STITCH_RETURN_IF_ERROR(ctx.check_output_dims(magnitudes));
  int64_t infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allow_zero) {
      if (i >= x.dims.size()) {
        return ctx.error("shape " + dims_string(shape) + " copies dim " + std::to_string(i) +
                         " (a 0) but the input " + dims_string(x.dims) +
                         " has no such dim; fix the shape");
      }
      shape[i] = x.dims[i];
    }
    if (shape[i] == -1) {
      if (infer >= 0) {
        return ctx.error("shape " + dims_string(shape) + " has more than one -1; give one at most");
      }
      infer = static_cast<int64_t>(i);
    } else if (shape[i] < 0) {
      return ctx.error("shape " + dims_string(shape) + " has a negative dim; fix the shape");
    } else {
      known *= shape[i];
    }
  }
  const int64_t total = x.num_elements();
  if (infer >= 0) {
    if (known == 0 || total % known != 0) {
      return ctx.error("cannot reshape " + dims_string(x.dims) + " to " + dims_string(shape) +
                       "; the element counts do not match");
    }
    shape[static_cast<size_t>(infer)] = total / known;
  }
  if (element_count(shape) != total) {
    return ctx.error("cannot reshape " + dims_string(x.dims) + " to " + dims_string(shape) +
                     "; the element counts do not match");
  }
  return single(with_dims(x, shape));
}

KernelResult flatten_kernel(const KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  const auto rank = static_cast<int64_t>(x.dims.size());
  int64_t axis = ctx.node.int_attribute("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) {
    return ctx.error("axis " + std::to_string(ctx.node.int_attribute("axis", 1)) +
                     " is out of range for rank " + std::to_string(rank) +
                     "; use an axis in [-rank, rank]");
  }
  auto split = static_cast<size_t>(axis);
  return single(
      with_dims(x, {dims_product(x.dims, 0, split), dims_product(x.dims, split, x.dims.size())}));
}

Result<std::vector<int64_t>> axes_input_or_attribute(const KernelContext& ctx, int64_t input_from,
                                                     size_t input_index, bool* given) {
  *given = false;
  if (ctx.opset >= input_from) {
    const Tensor* axes = ctx.input(input_index);
    if (axes == nullptr) return std::vector<int64_t>{};
    STITCH_RETURN_IF_ERROR(check_integer(ctx, input_index));
    *given = true;
    return axes->to_int64_vector();
  }
  const Attribute* attribute = ctx.node.find_attribute("axes");
  if (attribute == nullptr) return std::vector<int64_t>{};
  *given = true;
  return attribute->ints;
}

KernelResult squeeze_kernel(const KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  bool given = false;
  STITCH_ASSIGN_OR_RETURN(std::vector<int64_t> raw, axes_input_or_attribute(ctx, 13, 1, &given));
  STITCH_ASSIGN_OR_RETURN(std::vector<int64_t> axes,
                          axes_of(ctx, raw, static_cast<int64_t>(x.dims.size())));
  std::vector<int64_t> dims;
  for (size_t d = 0; d < x.dims.size(); ++d) {
    bool listed = std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(d));
    if (listed && x.dims[d] != 1) {
      return ctx.error("cannot squeeze axis " + std::to_string(d) + " of " + dims_string(x.dims) +
                       ", which is not 1; fix the axes");
    }
    bool drop = given && !raw.empty() ? listed : x.dims[d] == 1;
    if (!drop) dims.push_back(x.dims[d]);
  }
  return single(with_dims(x, dims));
}

KernelResult unsqueeze_kernel(const KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  bool given = false;
  STITCH_ASSIGN_OR_RETURN(std::vector<int64_t> raw, axes_input_or_attribute(ctx, 13, 1, &given));
  const auto rank = static_cast<int64_t>(x.dims.size() + raw.size());
  STITCH_ASSIGN_OR_RETURN(std::vector<int64_t> axes, axes_of(ctx, raw, rank));
  std::vector<int64_t> dims;
  size_t next = 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (std::binary_search(axes.begin(), axes.end(), d)) {
      dims.push_back(1);
    } else {
      dims.push_back(x.dims[next++]);
    }
  }
  return single(with_dims(x, dims));
}

KernelResult concat_kernel(const KernelContext& ctx) {
  const Tensor& first = *ctx.input(0);
  const auto rank = static_cast<int64_t>(first.dims.size());
  STITCH_ASSIGN_OR_RETURN(int64_t axis, axis_of(ctx, ctx.node.int_attribute("axis", 0), rank));
  std::vector<int64_t> dims = first.dims;
  dims[static_cast<size_t>(axis)] = 0;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    const Tensor* in = ctx.input(i);
    if (in == nullptr) return ctx.missing_input(i);
    bool same = in->dtype == first.dtype && in->dims.size() == first.dims.size();
    for (size_t d = 0; same && d < in->dims.size(); ++d) {
      same = static_cast<int64_t>(d) == axis || in->dims[d] == first.dims[d];
    }
    if (!same) {
      return ctx.error("input " + std::to_string(i) + " " + to_string(in->type()) +
                       " does not match input 0 " + to_string(first.type()) + " outside axis " +
                       std::to_string(axis) + "; fix the shapes");
    }
    dims[static_cast<size_t>(axis)] += in->dims[static_cast<size_t>(axis)];
  }
  Tensor out = make_tensor(first.dtype, dims);
  const int64_t outer = dims_product(dims, 0, static_cast<size_t>(axis));
  const int64_t size = dtype_size(first.dtype);
  char* dst = out.bytes.data();
  for (int64_t o = 0; o < outer; ++o) {
    for (size_t i = 0; i < ctx.inputs.size(); ++i) {
      const Tensor& in = *ctx.input(i);
      const int64_t block = dims_product(in.dims, static_cast<size_t>(axis), in.dims.size()) * size;
      std::memcpy(dst, in.bytes.data() + o * block, static_cast<size_t>(block));
      dst += block;
    }
  }
  return single(std::move(out));
}

KernelResult split_kernel(const KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  const auto rank = static_cast<int64_t>(x.dims.size());
  STITCH_ASSIGN_OR_RETURN(int64_t axis, axis_of(ctx, ctx.node.int_attribute("axis", 0), rank));
  const int64_t dim = x.dims[static_cast<size_t>(axis)];
  std::vector<int64_t> sizes;
  if (ctx.opset >= 13) {
    if (ctx.input(1) != nullptr) {
      STITCH_RETURN_IF_ERROR(check_integer(ctx, 1));
      sizes = ctx.input(1)->to_int64_vector();
    }
  } else {
    sizes = ctx.node.ints_attribute("split", {});
  }
  const auto outputs = static_cast<int64_t>(ctx.node.outputs.size());
  if (sizes.empty()) {
    int64_t parts = ctx.opset >= 18 ? ctx.node.int_attribute("num_outputs", outputs) : outputs;
    if (parts <= 0 || parts != outputs) {
      return ctx.error("splits into " + std::to_string(parts) + " parts but has " +
                       std::to_string(outputs) + " outputs; make num_outputs match the outputs");
    }
    // Equal parts; from opset 18 the last part may be smaller (ceil division).
    int64_t part = dim % parts == 0 ? dim / parts : (dim + parts - 1) / parts;
    for (int64_t k = 0; k < parts; ++k) {
      sizes.push_back(std::max<int64_t>(0, std::min(part, dim - k * part)));
    }
  }
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0)
      return ctx.error("split sizes " + dims_string(sizes) + " have a negative size; fix them");
    total += s;
  }
  if (static_cast<int64_t>(sizes.size()) != outputs || total != dim) {
    return ctx.error("split sizes " + dims_string(sizes) + " do not cover dim " +
                     std::to_string(dim) + " with " + std::to_string(outputs) +
                     " outputs; fix the split sizes");
  }
  const int64_t outer = dims_product(x.dims, 0, static_cast<size_t>(axis));
  const int64_t inner =
      dims_product(x.dims, static_cast<size_t>(axis) + 1, x.dims.size()) * dtype_size(x.dtype);
  std::vector<Tensor> results;
  int64_t begin = 0;
  for (int64_t s : sizes) {
    std::vector<int64_t> dims = x.dims;
    dims[static_cast<size_t>(axis)] = s;
    Tensor out = make_tensor(x.dtype, dims);
    for (int64_t o = 0; o < outer; ++o) {
      std::memcpy(out.bytes.data() + o * s * inner, x.bytes.data() + (o * dim + begin) * inner,
                  static_cast<size_t>(s * inner));
    }
    begin += s;
    results.push_back(std::move(out));
  }
  return results;
}

KernelResult slice_kernel(const KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  const auto rank = static_cast<int64_t>(x.dims.size());
  std::vector<int64_t> starts;
  std::vector<int64_t> ends;
  std::vector<int64_t> axes;
  std::vector<int64_t> steps;
  if (ctx.opset < 10) {
    starts = ctx.node.ints_attribute("starts", {});
    ends = ctx.node.ints_attribute("ends", {});
    axes = ctx.node.ints_attribute("axes", {});
  } else {
    for (size_t i = 1; i < 5; ++i) STITCH_RETURN_IF_ERROR(check_integer(ctx, i));
    if (ctx.input(1) == nullptr) return ctx.missing_input(1);
    if (ctx.input(2) == nullptr) return ctx.missing_input(2);
    starts = ctx.input(1)->to_int64_vector();
    ends = ctx.input(2)->to_int64_vector();
    if (ctx.input(3) != nullptr) axes = ctx.input(3)->to_int64_vector();
    if (ctx.input(4) != nullptr) steps = ctx.input(4)->to_int64_vector();
  }
  if (axes.empty()) {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    return ctx.error(
        "starts, ends, axes and steps have different lengths; give one entry per "
        "sliced axis in each");
  }
  std::vector<int64_t> dims = x.dims;
  std::vector<std::vector<int64_t>> maps(x.dims.size());
  std::vector<bool> seen(x.dims.size(), false);
  std::vector<int64_t> first(x.dims.size(), 0);
  std::vector<int64_t> step_of(x.dims.size(), 1);
  for (size_t k = 0; k < starts.size(); ++k) {
    STITCH_ASSIGN_OR_RETURN(int64_t axis, axis_of(ctx, axes[k], rank));
    auto a = static_cast<size_t>(axis);
    if (seen[a]) return ctx.error("slices axis " + std::to_string(axis) + " twice; give it once");
    seen[a] = true;
    const int64_t dim = x.dims[a];
    const int64_t step = steps[k];
    if (step == 0) return ctx.error("has a step of 0; steps must be nonzero");
    int64_t start = starts[k];
    int64_t end = ends[k];
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      dims[a] = end > start ? (end - start + step - 1) / step : 0;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      dims[a] = start > end ? (start - end - step - 1) / (-step) : 0;
    }
    first[a] = start;
    step_of[a] = step;
  }
  for (size_t d = 0; d < dims.size(); ++d) {
    maps[d].resize(static_cast<size_t>(dims[d]));
    for (int64_t i = 0; i < dims[d]; ++i)
      maps[d][static_cast<size_t>(i)] = first[d] + i * step_of[d];
  }
  return single(gather_by_axis_maps(x, dims, maps, ""));
}

KernelResult gather_kernel(const KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  const Tensor& indices = *ctx.input(1);
  STITCH_RETURN_IF_ERROR(check_integer(ctx, 1));
  const auto rank = static_cast<int64_t>(x.dims.size());
  STITCH_ASSIGN_OR_RETURN(int64_t axis, axis_of(ctx, ctx.node.int_attribute("axis", 0), rank));
  auto a = static_cast<size_t>(axis);
  std::vector<int64_t> dims(x.dims.begin(), x.dims.begin() + axis);
  dims.insert(dims.end(), indices.dims.begin(), indices.dims.end());
  dims.insert(dims.end(), x.dims.begin() + axis + 1, x.dims.end());
  const int64_t dim = x.dims[a];
  const int64_t outer = dims_product(x.dims, 0, a);
  const int64_t inner = dims_product(x.dims, a + 1, x.dims.size()) * dtype_size(x.dtype);
  std::vector<int64_t> index = indices.to_int64_vector();
  for (int64_t& i : index) {
    if (i < -dim || i >= dim) {
      return ctx.error("index " + std::to_string(i) + " is out of range for axis " +
                       std::to_string(axis) + " of size " + std::to_string(dim) +
                       "; give indices in [-" + std::to_string(dim) + ", " +
                       std::to_string(dim - 1) + "]");
    }
    if (i < 0) i += dim;
  }
  Tensor out = make_tensor(x.dtype, dims);
  char* dst = out.bytes.data();
  for (int64_t o = 0; o < outer; ++o) {
    const char* base = x.bytes.data() + o * dim * inner;
    for (int64_t i : index) {
      std::memcpy(dst, base + i * inner, static_cast<size_t>(inner));
      dst += inner;
    }
  }
  return single(std::move(out));
}

KernelResult gather_elements_kernel(const KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  const Tensor& indices = *ctx.input(1);
  STITCH_RETURN_IF_ERROR(check_integer(ctx, 1));
  const auto rank = static_cast<int64_t>(x.dims.size());
  STITCH_ASSIGN_OR_RETURN(int64_t axis, axis_of(ctx, ctx.node.int_attribute("axis", 0), rank));
  if (indices.dims.size() != x.dims.size()) {
    return ctx.error("indices " + dims_string(indices.dims) + " and data " + dims_string(x.dims) +
                     " have different ranks; give indices of the data's rank");
  }
  std::vector<int64_t> strides = row_major_strides(x.dims);
  const int64_t axis_stride = strides[static_cast<size_t>(axis)];
  const int64_t dim = x.dims[static_cast<size_t>(axis)];
  strides[static_cast<size_t>(axis)] = 0;
  std::vector<int64_t> index = indices.to_int64_vector();
  const int64_t size = dtype_size(x.dtype);
  Tensor out = make_tensor(x.dtype, indices.dims);
  Status status = Status::ok();
  for_each_index<1>(
      indices.dims, {&strides}, {0}, [&](int64_t i, const std::array<int64_t, 1>& off) {
        int64_t k = index[static_cast<size_t>(i)];
        if (k < -dim || k >= dim) {
          if (status.is_ok()) {
            status = ctx.error("index " + std::to_string(k) + " is out of range for axis " +
                               std::to_string(axis) + " of size " + std::to_string(dim) +
                               "; give indices in range");
          }
          return;
        }
        if (k < 0) k += dim;
        std::memcpy(out.bytes.data() + i * size, x.bytes.data() + (off[0] + k * axis_stride) * size,
                    static_cast<size_t>(size));
      });
  STITCH_RETURN_IF_ERROR(status);
  return single(std::move(out));
}

// One element of `dtype` holding `value`.
std::string scalar_bytes(DType dtype, double value) {
  std::string bytes(static_cast<size_t>(dtype_size(dtype)), '\0');
  visit_all(dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    store<S>(bytes.data(), 0, static_cast<ComputeOf<S>>(value));
  });
  return bytes;
}

int64_t positive_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return r < 0 ? r + b : r;
}

KernelResult pad_kernel(const KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  const auto rank = static_cast<int64_t>(x.dims.size());
  std::string mode = ctx.node.string_attribute("mode", "constant");
  std::vector<int64_t> pads;
  std::string fill = scalar_bytes(x.dtype, 0.0);
  std::vector<int64_t> axes;
  if (ctx.opset < 11) {
    pads = ctx.node.ints_attribute("pads", ctx.node.ints_attribute("paddings", {}));
    fill = scalar_bytes(x.dtype, ctx.node.float_attribute("value", 0.0f));
  } else {
    STITCH_RETURN_IF_ERROR(check_integer(ctx, 1));
    if (ctx.input(1) == nullptr) return ctx.missing_input(1);
    pads = ctx.input(1)->to_int64_vector();
    const Tensor* value = ctx.input(2);
    if (value != nullptr && value->num_elements() > 0) {
      if (value->dtype != x.dtype) return ctx.unsupported_dtype(2);
      fill = value->bytes.substr(0, static_cast<size_t>(dtype_size(x.dtype)));
    }
    if (ctx.input(3) != nullptr) {
      STITCH_RETURN_IF_ERROR(check_integer(ctx, 3));
      axes = ctx.input(3)->to_int64_vector();
    }
  }
  if (axes.empty()) {
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  }
  if (pads.size() != 2 * axes.size()) {
    return ctx.error("has " + std::to_string(pads.size()) + " pads for " +
                     std::to_string(axes.size()) + " axes; give a begin and an end per axis");
  }
  std::vector<int64_t> begin(x.dims.size(), 0);
  std::vector<int64_t> end(x.dims.size(), 0);
  for (size_t k = 0; k < axes.size(); ++k) {
    STITCH_ASSIGN_OR_RETURN(int64_t axis, axis_of(ctx, axes[k], rank));
    begin[static_cast<size_t>(axis)] = pads[k];
    end[static_cast<size_t>(axis)] = pads[k + axes.size()];
  }
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap") {
    return ctx.error("has mode \"" + mode + "\"; Pad takes constant, reflect, edge or wrap");
  }
  std::vector<int64_t> dims(x.dims.size());
  std::vector<std::vector<int64_t>> maps(x.dims.size());
  for (size_t d = 0; d < x.dims.size(); ++d) {
    const int64_t dim = x.dims[d];
    dims[d] = dim + begin[d] + end[d];
    if (dims[d] < 0) {
      return ctx.error("pads " + dims_string(pads) + " crop axis " + std::to_string(d) +
                       " below zero; fix the pads");
    }
    if (dim == 0 && mode != "constant" && dims[d] > 0) {
      return ctx.error("pads an empty axis in mode \"" + mode + "\"; use mode constant");
    }
    STITCH_RETURN_IF_ERROR(ctx.check_output_dims({dims[d]}));
    maps[d].resize(static_cast<size_t>(dims[d]));
    for (int64_t i = 0; i < dims[d]; ++i) {
      int64_t s = i - begin[d];
      if (s < 0 || s >= dim) {
        if (mode == "constant") {
          s = -1;
        } else if (mode == "edge") {
          s = std::clamp<int64_t>(s, 0, dim - 1);
        } else if (mode == "wrap") {
          s = positive_mod(s, dim);
        } else if (dim == 1) {
          s = 0;
        } else {
          int64_t period = 2 * (dim - 1);
          s = positive_mod(s, period);
          if (s >= dim) s = period - s;
        }
      }
      maps[d][static_cast<size_t>(i)] = s;
    }
  }
  STITCH_RETURN_IF_ERROR(ctx.check_output_dims(dims));
  return single(gather_by_axis_maps(x, dims, maps, fill));
}

KernelResult tile_kernel(const KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  STITCH_RETURN_IF_ERROR(check_integer(ctx, 1));
  std::vector<int64_t> repeats = ctx.input(1)->to_int64_vector();
  if (repeats.size() != x.dims.size()) {
    return ctx.error("repeats " + dims_string(repeats) + " has " + std::to_string(repeats.size()) +
                     " entries for an input of rank " + std::to_string(x.dims.size()) +
                     "; give one per axis");
  }
  std::vector<int64_t> dims(x.dims.size());
  std::vector<std::vector<int64_t>> maps(x.dims.size());
  for (size_t d = 0; d < x.dims.size(); ++d) {
    if (repeats[d] < 0) return ctx.error("has a negative repeat; repeats must be >= 0");
    STITCH_RETURN_IF_ERROR(ctx.check_output_dims({x.dims[d], repeats[d]}));
    dims[d] = x.dims[d] * repeats[d];
    maps[d].resize(static_cast<size_t>(dims[d]));
    for (int64_t i = 0; i < dims[d]; ++i) maps[d][static_cast<size_t>(i)] = i % x.dims[d];
  }
  STITCH_RETURN_IF_ERROR(ctx.check_output_dims(dims));
  return single(gather_by_axis_maps(x, dims, maps, ""));
}

// Whether element `index` of `x` is not zero (NaN is not zero; -0.0 is).
std::vector<char> nonzero_mask(const Tensor& x, bool* ok) {
  std::vector<char> mask(static_cast<size_t>(x.num_elements()));
  *ok = visit_all(x.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (size_t i = 0; i < mask.size(); ++i) {
      mask[i] = load<S>(x.bytes.data(), static_cast<int64_t>(i)) != ComputeOf<S>{};
    }
  });
  return mask;
}

// NonZero: i64[rank, count], the indices of the nonzero elements in row-major order.
KernelResult nonzero_kernel(const KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  bool ok = false;
  std::vector<char> mask = nonzero_mask(x, &ok);
  if (!ok) return ctx.unsupported_dtype(0);
  const auto count = static_cast<int64_t>(std::count(mask.begin(), mask.end(), 1));
  const auto rank = static_cast<int64_t>(x.dims.size());
  Tensor out = make_tensor(DType::kInt64, {rank, count});
  const std::vector<int64_t> strides = row_major_strides(x.dims);
  int64_t column = 0;
  for (size_t i = 0; i < mask.size(); ++i) {
    if (!mask[i]) continue;
    for (int64_t d = 0; d < rank; ++d) {
      const auto axis = static_cast<size_t>(d);
      const int64_t index = (static_cast<int64_t>(i) / strides[axis]) % x.dims[axis];
      store<int64_t>(out.bytes.data(), d * count + column, index);
    }
    ++column;
  }
  return single(std::move(out));
}

// Compress: the slices along `axis` (or the elements of the flattened input) whose
// condition entry is true; entries past the condition's length are dropped.
KernelResult compress_kernel(const KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  if (ctx.input(1) == nullptr) return ctx.missing_input(1);
  const Tensor& condition = *ctx.input(1);
  if (condition.dtype != DType::kBool) return ctx.unsupported_dtype(1);
  if (condition.dims.size() != 1) {
    return ctx.error("condition has rank " + std::to_string(condition.dims.size()) +
                     " but Compress takes a 1-D condition; reshape it");
  }
  const Attribute* axis_attribute = ctx.node.find_attribute("axis");
  std::vector<int64_t> dims = {x.num_elements()};
  int64_t axis = 0;
  if (axis_attribute != nullptr) {
    dims = x.dims;
    STITCH_ASSIGN_OR_RETURN(axis,
                            axis_of(ctx, axis_attribute->i, static_cast<int64_t>(x.dims.size())));
  }
  const auto a = static_cast<size_t>(axis);
  const int64_t outer = dims_product(dims, 0, a);
  const int64_t inner = dims_product(dims, a + 1, dims.size()) * dtype_size(x.dtype);
  const int64_t length = std::min(dims[a], condition.num_elements());
  if (condition.num_elements() > dims[a]) {
    return ctx.error("condition has " + std::to_string(condition.num_elements()) +
                     " entries but the axis has " + std::to_string(dims[a]) +
                     "; give at most one entry per slice");
  }
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < length; ++i) {
    if (condition.int_at(i) != 0) kept.push_back(i);
  }
  std::vector<int64_t> out_dims = dims;
  out_dims[a] = static_cast<int64_t>(kept.size());
  Tensor out = make_tensor(x.dtype, out_dims);
  char* to = out.bytes.data();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t slice : kept) {
      std::memcpy(to, x.bytes.data() + (o * dims[a] + slice) * inner, static_cast<size_t>(inner));
      to += inner;
    }
  }
  return single(std::move(out));
}

KernelResult trilu_kernel(const KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  if (x.dims.size() < 2) {
    return ctx.error("input has rank " + std::to_string(x.dims.size()) +
                     " but Trilu needs rank 2 or more; reshape the input");
  }
  int64_t k = 0;
  if (ctx.input(1) != nullptr) {
    STITCH_RETURN_IF_ERROR(check_integer(ctx, 1));
    STITCH_RETURN_IF_ERROR(ctx.check_scalar_input(1));
    k = ctx.input(1)->int_at(0);
  }
  bool upper = ctx.node.int_attribute("upper", 1) != 0;
  Tensor out = x;
  const int64_t rows = x.dims[x.dims.size() - 2];
  const int64_t cols = x.dims.back();
  const int64_t batches = dims_product(x.dims, 0, x.dims.size() - 2);
  const int64_t size = dtype_size(x.dtype);
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) {
        bool keep = upper ? j - i >= k : j - i <= k;
        if (!keep) {
          std::memset(out.bytes.data() + ((b * rows + i) * cols + j) * size, 0,
                      static_cast<size_t>(size));
        }
      }
    }
  }
  return single(std::move(out));
}

KernelResult scatter_nd_kernel(const KernelContext& ctx) {
  const Tensor& data = *ctx.input(0);
  const Tensor& indices = *ctx.input(1);
  const Tensor& updates = *ctx.input(2);
  STITCH_RETURN_IF_ERROR(check_integer(ctx, 1));
  if (updates.dtype != data.dtype) return ctx.unsupported_dtype(2);
  std::string reduction = ctx.node.string_attribute("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" &&
      reduction != "min") {
    return ctx.error("has reduction \"" + reduction +
                     "\"; ScatterND takes none, add, mul, max or min");
  }
  if (indices.dims.empty()) return ctx.error("indices is a scalar; give indices of rank >= 1");
  const auto depth = static_cast<size_t>(indices.dims.back());
  if (depth > data.dims.size()) {
    return ctx.error("indices address " + std::to_string(depth) + " axes of a rank-" +
                     std::to_string(data.dims.size()) + " data tensor; fix the indices");
  }
  const int64_t tuples = dims_product(indices.dims, 0, indices.dims.size() - 1);
  const int64_t slice = dims_product(data.dims, depth, data.dims.size());
  if (updates.num_elements() != tuples * slice) {
    return ctx.error("updates " + dims_string(updates.dims) + " do not match indices " +
                     dims_string(indices.dims) + " and data " + dims_string(data.dims) +
                     "; fix the updates' shape");
  }
  std::vector<int64_t> strides = row_major_strides(data.dims);
  std::vector<int64_t> index = indices.to_int64_vector();
  Tensor out = data;
  const int64_t size = dtype_size(data.dtype);
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t offset = 0;
    for (size_t d = 0; d < depth; ++d) {
      int64_t i = index[static_cast<size_t>(t) * depth + d];
      if (i < -data.dims[d] || i >= data.dims[d]) {
        return ctx.error("index " + std::to_string(i) + " is out of range for axis " +
                         std::to_string(d) + " of size " + std::to_string(data.dims[d]) +
                         "; give indices in range");
      }
      if (i < 0) i += data.dims[d];
      offset += i * strides[d];
    }
    if (reduction == "none") {
      std::memcpy(out.bytes.data() + offset * size, updates.bytes.data() + t * slice * size,
                  static_cast<size_t>(slice * size));
      continue;
    }
    bool ok = visit_numeric(data.dtype, [&](auto tag) {
      using S = typename decltype(tag)::type;
      for (int64_t e = 0; e < slice; ++e) {
        auto current = load<S>(out.bytes.data(), offset + e);
        auto update = load<S>(updates.bytes.data(), t * slice + e);
        decltype(current) value = current;
        if (reduction == "add") value = current + update;
        if (reduction == "mul") value = current * update;
        if (reduction == "max") value = std::max(current, update);
        if (reduction == "min") value = std::min(current, update);
        store<S>(out.bytes.data(), offset + e, value);
      }
    });
    if (!ok) return ctx.unsupported_dtype(0);
  }
  return single(std::move(out));
}

KernelResult cumsum_kernel(const KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  STITCH_RETURN_IF_ERROR(check_integer(ctx, 1));
  const auto rank = static_cast<int64_t>(x.dims.size());
  STITCH_RETURN_IF_ERROR(ctx.check_scalar_input(1));
  STITCH_ASSIGN_OR_RETURN(int64_t axis, axis_of(ctx, ctx.input(1)->int_at(0), rank));
  bool exclusive = ctx.node.int_attribute("exclusive", 0) != 0;
  bool reverse = ctx.node.int_attribute("reverse", 0) != 0;
  auto a = static_cast<size_t>(axis);
  const int64_t dim = x.dims[a];
  const int64_t outer = dims_product(x.dims, 0, a);
  const int64_t inner = dims_product(x.dims, a + 1, x.dims.size());
  Tensor out = make_tensor(x.dtype, x.dims);
  bool ok = visit_numeric(x.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = ComputeOf<S>;
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        C sum{};
        for (int64_t step = 0; step < dim; ++step) {
          int64_t k = reverse ? dim - 1 - step : step;
          int64_t offset = (o * dim + k) * inner + i;
          C v = load<S>(x.bytes.data(), offset);
          if (!exclusive) sum = static_cast<C>(sum + v);
          store<S>(out.bytes.data(), offset, sum);
          if (exclusive) sum = static_cast<C>(sum + v);
        }
      }
    }
  });
  if (!ok) return ctx.unsupported_dtype(0);
  return single(std::move(out));
}

KernelResult shape_kernel(const KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  const auto rank = static_cast<int64_t>(x.dims.size());
  auto [start, end] = shape_op_range(ctx.node, ctx.opset, rank);
  std::vector<int64_t> dims;
  for (int64_t d = start; d < end; ++d) dims.push_back(x.dims[static_cast<size_t>(d)]);
  auto count = static_cast<int64_t>(dims.size());
  return single(Tensor::from_int64({count}, dims));
}

KernelResult constant_of_shape_kernel(const KernelContext& ctx) {
  STITCH_RETURN_IF_ERROR(check_integer(ctx, 0));
  std::vector<int64_t> dims = ctx.input(0)->to_int64_vector();
  STITCH_RETURN_IF_ERROR(ctx.check_output_dims(dims));
  Tensor value = Tensor::from_float({1}, {0.0f});
  const Attribute* attribute = ctx.node.find_attribute("value");
  if (attribute != nullptr && attribute->tensor != nullptr) value = *attribute->tensor;
  if (value.num_elements() != 1 || dtype_size(value.dtype) == 0) {
    return ctx.error("attribute \"value\" must be a one-element numeric tensor; fix it");
  }
  Tensor out = make_tensor(value.dtype, dims);
  const int64_t count = out.num_elements();
  const auto size = static_cast<size_t>(dtype_size(value.dtype));
  for (int64_t i = 0; i < count; ++i) {
    std::memcpy(out.bytes.data() + static_cast<size_t>(i) * size, value.bytes.data(), size);
  }
  return single(std::move(out));
}

KernelResult constant_kernel(const KernelContext& ctx) {
  std::optional<Tensor> value = constant_node_value(ctx.node);
  if (!value || value->dtype == DType::kString) {
    return ctx.error(
        "has no numeric value attribute (string and sparse constants have no "
        "reference evaluation); give value, value_float(s) or value_int(s)");
  }
  return single(std::move(*value));
}

KernelResult range_kernel(const KernelContext& ctx) {
  const Tensor& start = *ctx.input(0);
  const Tensor& limit = *ctx.input(1);
  const Tensor& delta = *ctx.input(2);
  if (limit.dtype != start.dtype || delta.dtype != start.dtype) return ctx.unsupported_dtype(1);
  if (start.num_elements() != 1 || limit.num_elements() != 1 || delta.num_elements() != 1) {
    return ctx.error("start, limit and delta must be scalars; give one value each");
  }
  Tensor out;
  Status status = Status::ok();
  bool ok = visit_numeric(start.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = ComputeOf<S>;
    C first = load<S>(start.bytes.data(), 0);
    C last = load<S>(limit.bytes.data(), 0);
    C step = load<S>(delta.bytes.data(), 0);
    if (step == C{}) return;
    const double span = std::ceil((static_cast<double>(last) - static_cast<double>(first)) /
                                  static_cast<double>(step));
    // Checked in double first: NaN or a huge span has no int64 value.
    if (!(span < 2147483648.0)) {
      status = ctx.error("start, limit and delta give more than 2^31 elements (or NaN); fix them");
      return;
    }
    const int64_t count = std::max<int64_t>(0, static_cast<int64_t>(span));
    status = ctx.check_output_dims({count});
    if (!status.is_ok()) return;
    out = make_tensor(start.dtype, {count});
    for (int64_t i = 0; i < count; ++i) {
      store<S>(out.bytes.data(), i, static_cast<C>(first + static_cast<C>(i) * step));
    }
  });
  if (!ok) return ctx.unsupported_dtype(0);
  STITCH_RETURN_IF_ERROR(status);
  if (out.dtype == DType::kUndefined) return ctx.error("has delta 0; give a nonzero delta");
  return single(std::move(out));
}

}  // namespace

void add_shape_kernels(KernelTable& table) {
  table["Expand"] = expand_kernel;
  table["Transpose"] = transpose_kernel;
  table["Reshape"] = reshape_kernel;
  table["Flatten"] = flatten_kernel;
  table["Squeeze"] = squeeze_kernel;
  table["Unsqueeze"] = unsqueeze_kernel;
  table["Concat"] = concat_kernel;
  table["Split"] = split_kernel;
  table["Slice"] = slice_kernel;
  table["Gather"] = gather_kernel;
  table["GatherElements"] = gather_elements_kernel;
  table["Pad"] = pad_kernel;
  table["Tile"] = tile_kernel;
  table["Trilu"] = trilu_kernel;
  table["NonZero"] = nonzero_kernel;
  table["Compress"] = compress_kernel;
  table["ScatterND"] = scatter_nd_kernel;
  table["CumSum"] = cumsum_kernel;
  table["Shape"] = shape_kernel;
  table["Size"] = [](const KernelContext& c) {
    return single(Tensor::from_int64({}, {c.input(0)->num_elements()}));
  };
  table["ConstantOfShape"] = constant_of_shape_kernel;
  table["Constant"] = constant_kernel;
  table["Range"] = range_kernel;
}

}  // namespace stitch::ir::reference
