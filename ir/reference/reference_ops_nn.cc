// Reference kernels of the compute-heavy and layout ops: MatMul, Gemm, Conv,
// MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool, Resize, Einsum, LSTM.
// Products accumulate in double (int64 for integer MatMul/Gemm).
#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/reference/reference_ops.h"

namespace stitch::ir::reference {

namespace {

Status check_same_dtype(const KernelContext& ctx, size_t a, size_t b) {
  const Tensor* ta = ctx.input(a);
  const Tensor* tb = ctx.input(b);
  if (ta != nullptr && tb != nullptr && ta->dtype != tb->dtype) return ctx.unsupported_dtype(b);
  return Status::ok();
}

KernelResult matmul_kernel(const KernelContext& ctx) {
  const Tensor& a = *ctx.input(0);
  const Tensor& b = *ctx.input(1);
  STITCH_RETURN_IF_ERROR(check_same_dtype(ctx, 0, 1));
  if (a.dims.empty() || b.dims.empty()) {
    return ctx.error("has a scalar operand; MatMul needs operands of rank 1 or more");
  }
  std::vector<int64_t> a_dims = a.dims;
  std::vector<int64_t> b_dims = b.dims;
  if (a_dims.size() == 1) a_dims.insert(a_dims.begin(), 1);
  if (b_dims.size() == 1) b_dims.push_back(1);
  const int64_t m = a_dims[a_dims.size() - 2];
  const int64_t k = a_dims.back();
  const int64_t n = b_dims.back();
  if (b_dims[b_dims.size() - 2] != k) {
    return ctx.error("operands " + dims_string(a.dims) + " and " + dims_string(b.dims) +
                     " have different inner dims; fix the shapes");
  }
  std::vector<int64_t> a_batch(a_dims.begin(), a_dims.end() - 2);
  std::vector<int64_t> b_batch(b_dims.begin(), b_dims.end() - 2);
  std::vector<int64_t> batch;
  if (!broadcast_shapes(a_batch, b_batch, &batch)) {
    return ctx.error("batch dims " + dims_string(a_batch) + " and " + dims_string(b_batch) +
                     " do not broadcast; fix the shapes");
  }
  std::vector<int64_t> out_dims = batch;
  if (a.dims.size() > 1) out_dims.push_back(m);
  if (b.dims.size() > 1) out_dims.push_back(n);
  std::vector<int64_t> a_strides = broadcast_strides(a_batch, batch);
  std::vector<int64_t> b_strides = broadcast_strides(b_batch, batch);
  for (int64_t& s : a_strides) s *= m * k;
  for (int64_t& s : b_strides) s *= k * n;
  Tensor out = make_tensor(a.dtype, out_dims);
  bool ok = visit_numeric(a.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = ComputeOf<S>;
    std::vector<C> lhs(static_cast<size_t>(m * k));
    std::vector<C> rhs(static_cast<size_t>(k * n));
    std::vector<C> row(static_cast<size_t>(n));
    for_each_index<2>(batch, {&a_strides, &b_strides}, {0, 0},
                      [&](int64_t index, const std::array<int64_t, 2>& off) {
                        for (int64_t i = 0; i < m * k; ++i)
                          lhs[static_cast<size_t>(i)] = load<S>(a.bytes.data(), off[0] + i);
                        for (int64_t i = 0; i < k * n; ++i)
                          rhs[static_cast<size_t>(i)] = load<S>(b.bytes.data(), off[1] + i);
                        for (int64_t i = 0; i < m; ++i) {
                          std::fill(row.begin(), row.end(), C{});
                          for (int64_t p = 0; p < k; ++p) {
                            const C left = lhs[static_cast<size_t>(i * k + p)];
                            const C* right = rhs.data() + p * n;
                            for (int64_t j = 0; j < n; ++j)
                              row[static_cast<size_t>(j)] += left * right[j];
                          }
                          for (int64_t j = 0; j < n; ++j) {
                            store<S>(out.bytes.data(), (index * m + i) * n + j,
                                     row[static_cast<size_t>(j)]);
                          }
                        }
                      });
  });
  if (!ok) return ctx.unsupported_dtype(0);
  return single(std::move(out));
}

KernelResult gemm_kernel(const KernelContext& ctx) {
  const Tensor& a = *ctx.input(0);
  const Tensor& b = *ctx.input(1);
  const Tensor* c = ctx.input(2);
  STITCH_RETURN_IF_ERROR(check_same_dtype(ctx, 0, 1));
  STITCH_RETURN_IF_ERROR(check_same_dtype(ctx, 0, 2));
  if (a.dims.size() != 2 || b.dims.size() != 2) {
    return ctx.error("operands " + dims_string(a.dims) + " and " + dims_string(b.dims) +
                     " are not matrices; Gemm needs 2-D A and B");
  }
  const bool trans_a = ctx.node.int_attribute("transA", 0) != 0;
  const bool trans_b = ctx.node.int_attribute("transB", 0) != 0;
  const double alpha = ctx.node.float_attribute("alpha", 1.0f);
  const double beta = ctx.node.float_attribute("beta", 1.0f);
  const int64_t m = trans_a ? a.dims[1] : a.dims[0];
  const int64_t k = trans_a ? a.dims[0] : a.dims[1];
  const int64_t n = trans_b ? b.dims[0] : b.dims[1];
  if ((trans_b ? b.dims[1] : b.dims[0]) != k) {
    return ctx.error("A " + dims_string(a.dims) + " and B " + dims_string(b.dims) +
                     " have different inner dims after transA/transB; fix the shapes");
  }
  std::vector<int64_t> c_strides;
  if (c != nullptr) {
    std::vector<int64_t> joined;
    if (c->dims.size() > 2 || !broadcast_shapes({m, n}, c->dims, &joined) ||
        joined != std::vector<int64_t>{m, n}) {
      return ctx.error("C " + dims_string(c->dims) + " does not broadcast to [" +
                       std::to_string(m) + "," + std::to_string(n) + "]; fix its shape");
    }
    c_strides = broadcast_strides(c->dims, {m, n});
  }
  Tensor out = make_tensor(a.dtype, {m, n});
  bool ok = visit_numeric(a.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = ComputeOf<S>;
    std::vector<C> lhs(static_cast<size_t>(m * k));
    std::vector<C> rhs(static_cast<size_t>(k * n));
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t p = 0; p < k; ++p) {
        lhs[static_cast<size_t>(i * k + p)] =
            load<S>(a.bytes.data(), trans_a ? p * m + i : i * k + p);
      }
    }
    for (int64_t p = 0; p < k; ++p) {
      for (int64_t j = 0; j < n; ++j) {
        rhs[static_cast<size_t>(p * n + j)] =
            load<S>(b.bytes.data(), trans_b ? j * k + p : p * n + j);
      }
    }
    std::vector<C> row(static_cast<size_t>(n));
    for (int64_t i = 0; i < m; ++i) {
      std::fill(row.begin(), row.end(), C{});
      for (int64_t p = 0; p < k; ++p) {
        const C left = lhs[static_cast<size_t>(i * k + p)];
        for (int64_t j = 0; j < n; ++j)
          row[static_cast<size_t>(j)] += left * rhs[static_cast<size_t>(p * n + j)];
      }
      for (int64_t j = 0; j < n; ++j) {
        double value = alpha * static_cast<double>(row[static_cast<size_t>(j)]);
        C result = static_cast<C>(value);
        if constexpr (!std::is_same_v<C, double>) {
          result = alpha == 1.0 ? row[static_cast<size_t>(j)] : static_cast<C>(value);
        }
        if (c != nullptr) {
          C bias = load<S>(c->bytes.data(), i * c_strides[0] + j * c_strides[1]);
          if constexpr (std::is_same_v<C, double>) {
            result += beta * bias;
          } else {
            result = static_cast<C>(
                result + (beta == 1.0 ? bias : static_cast<C>(beta * static_cast<double>(bias))));
          }
        }
        store<S>(out.bytes.data(), i * n + j, result);
      }
    }
  });
  if (!ok) return ctx.unsupported_dtype(0);
  return single(std::move(out));
}

// The sliding-window geometry shared by Conv and the pools: per spatial axis the
// output size and the padding before the first window.
struct Window {
  std::vector<int64_t> input;  // spatial input dims
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pad_begin;
  std::vector<int64_t> pad_end;
  std::vector<int64_t> output;
};

Result<Window> make_window(const KernelContext& ctx, const std::vector<int64_t>& input,
                           std::vector<int64_t> kernel, bool ceil_mode) {
  const size_t rank = input.size();
  Window w;
  w.input = input;
  w.kernel = std::move(kernel);
  w.strides = ctx.node.ints_attribute("strides", std::vector<int64_t>(rank, 1));
  w.dilations = ctx.node.ints_attribute("dilations", std::vector<int64_t>(rank, 1));
  std::vector<int64_t> pads = ctx.node.ints_attribute("pads", std::vector<int64_t>(2 * rank, 0));
  if (w.kernel.size() != rank || w.strides.size() != rank || w.dilations.size() != rank ||
      pads.size() != 2 * rank) {
    return ctx.error("kernel_shape, strides, dilations or pads do not match the " +
                     std::to_string(rank) + " spatial axes of the input; fix the attributes");
  }
  std::string auto_pad = ctx.node.string_attribute("auto_pad", "NOTSET");
  for (size_t d = 0; d < rank; ++d) {
    if (w.strides[d] <= 0 || w.dilations[d] <= 0 || w.kernel[d] <= 0) {
      return ctx.error("has a stride, dilation or kernel dim <= 0; fix the attributes");
    }
    const int64_t extent = (w.kernel[d] - 1) * w.dilations[d] + 1;
    int64_t begin = pads[d];
    int64_t end = pads[d + rank];
    int64_t out = 0;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      out = (input[d] + w.strides[d] - 1) / w.strides[d];
      int64_t total = std::max<int64_t>(0, (out - 1) * w.strides[d] + extent - input[d]);
      begin = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      end = total - begin;
    } else if (auto_pad == "VALID") {
      begin = end = 0;
      out = input[d] >= extent ? (input[d] - extent) / w.strides[d] + 1 : 0;
    } else if (auto_pad == "NOTSET") {
      int64_t span = input[d] + begin + end - extent;
      if (span < 0) {
        return ctx.error("the kernel (extent " + std::to_string(extent) +
                         ") is larger than the padded input on spatial axis " + std::to_string(d) +
                         "; fix kernel_shape or pads");
      }
      out = (ceil_mode ? (span + w.strides[d] - 1) / w.strides[d] : span / w.strides[d]) + 1;
      // A window starting in the end padding is dropped.
      if (ceil_mode && (out - 1) * w.strides[d] >= input[d] + begin) --out;
    } else {
      return ctx.error("has auto_pad \"" + auto_pad +
                       "\"; use NOTSET, SAME_UPPER, SAME_LOWER or VALID");
    }
    w.pad_begin.push_back(begin);
    w.pad_end.push_back(end);
    w.output.push_back(out);
  }
  return w;
}

// For every (kernel position, output position) pair, the spatial input offset of
// the tap: >= 0 inside the input, -1 in the padding, -2 past the end padding (only
// ceil_mode windows reach there).
std::vector<int64_t> window_taps(const Window& w) {
  const int64_t kernel_count = element_count(w.kernel);
  const int64_t output_count = element_count(w.output);
  std::vector<int64_t> taps(static_cast<size_t>(kernel_count * output_count));
  std::vector<int64_t> in_strides = row_major_strides(w.input);
  const size_t rank = w.input.size();
  std::vector<int64_t> k_index(rank);
  std::vector<int64_t> o_index(rank);
  for (int64_t kk = 0; kk < kernel_count; ++kk) {
    int64_t rest = kk;
    for (size_t d = rank; d-- > 0;) {
      k_index[d] = rest % w.kernel[d];
      rest /= w.kernel[d];
    }
    for (int64_t p = 0; p < output_count; ++p) {
      int64_t prest = p;
      for (size_t d = rank; d-- > 0;) {
        o_index[d] = prest % w.output[d];
        prest /= w.output[d];
      }
      int64_t offset = 0;
      for (size_t d = 0; d < rank; ++d) {
        int64_t coordinate =
            o_index[d] * w.strides[d] - w.pad_begin[d] + k_index[d] * w.dilations[d];
        if (coordinate < 0 || coordinate >= w.input[d]) {
          offset = coordinate >= w.input[d] + w.pad_end[d] ? -2 : std::min<int64_t>(offset, -1);
          if (offset == -2) break;
        } else if (offset >= 0) {
          offset += coordinate * in_strides[d];
        }
      }
      taps[static_cast<size_t>(kk * output_count + p)] = offset;
    }
  }
  return taps;
}

KernelResult conv_kernel(const KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  const Tensor& w = *ctx.input(1);
  const Tensor* bias = ctx.input(2);
  for (size_t i = 0; i < 3; ++i) STITCH_RETURN_IF_ERROR(check_float(ctx, i));
  STITCH_RETURN_IF_ERROR(check_same_dtype(ctx, 0, 1));
  if (x.dims.size() < 3 || w.dims.size() != x.dims.size()) {
    return ctx.error("input " + dims_string(x.dims) + " and weight " + dims_string(w.dims) +
                     " are not [N,C,spatial...] and [M,C/group,kernel...]; fix the shapes");
  }
  const int64_t group = ctx.node.int_attribute("group", 1);
  const int64_t batches = x.dims[0];
  const int64_t channels = x.dims[1];
  const int64_t filters = w.dims[0];
  if (group <= 0 || channels % group != 0 || filters % group != 0 ||
      w.dims[1] != channels / group) {
    return ctx.error("group " + std::to_string(group) + " does not fit input channels " +
                     std::to_string(channels) + " and weight " + dims_string(w.dims) +
                     "; fix group or the weight shape");
  }
  std::vector<int64_t> spatial(x.dims.begin() + 2, x.dims.end());
  std::vector<int64_t> kernel = ctx.node.ints_attribute(
      "kernel_shape", std::vector<int64_t>(w.dims.begin() + 2, w.dims.end()));
  STITCH_ASSIGN_OR_RETURN(Window window, make_window(ctx, spatial, kernel, false));
  if (kernel != std::vector<int64_t>(w.dims.begin() + 2, w.dims.end())) {
    return ctx.error("kernel_shape " + dims_string(kernel) + " does not match the weight " +
                     dims_string(w.dims) + "; fix kernel_shape");
  }
  std::vector<double> weights = doubles_of(w);
  std::vector<double> biases = bias != nullptr ? doubles_of(*bias) : std::vector<double>();
  if (bias != nullptr && static_cast<int64_t>(biases.size()) != filters) {
    return ctx.error("bias has " + std::to_string(biases.size()) + " elements for " +
                     std::to_string(filters) + " filters; give one per filter");
  }
  std::vector<double> input = doubles_of(x);
  std::vector<int64_t> taps = window_taps(window);
  const int64_t kernel_count = element_count(kernel);
  const int64_t output_count = element_count(window.output);
  const int64_t input_count = element_count(spatial);
  const int64_t group_channels = channels / group;
  const int64_t group_filters = filters / group;
  const int64_t rows = group_channels * kernel_count;
  std::vector<int64_t> out_dims = {batches, filters};
  out_dims.insert(out_dims.end(), window.output.begin(), window.output.end());
  std::vector<double> result(static_cast<size_t>(element_count(out_dims)));
  std::vector<double> columns(static_cast<size_t>(rows * output_count));
  for (int64_t n = 0; n < batches; ++n) {
    for (int64_t g = 0; g < group; ++g) {
      for (int64_t c = 0; c < group_channels; ++c) {
        const double* plane =
            input.data() + ((n * channels) + g * group_channels + c) * input_count;
        for (int64_t kk = 0; kk < kernel_count; ++kk) {
          double* column = columns.data() + (c * kernel_count + kk) * output_count;
          const int64_t* tap = taps.data() + kk * output_count;
          for (int64_t p = 0; p < output_count; ++p) column[p] = tap[p] >= 0 ? plane[tap[p]] : 0.0;
        }
      }
      for (int64_t f = 0; f < group_filters; ++f) {
        const int64_t filter = g * group_filters + f;
        double* row = result.data() + (n * filters + filter) * output_count;
        const double initial = biases.empty() ? 0.0 : biases[static_cast<size_t>(filter)];
        std::fill(row, row + output_count, initial);
        const double* weight_row = weights.data() + filter * rows;
        for (int64_t r = 0; r < rows; ++r) {
          const double weight = weight_row[r];
          const double* column = columns.data() + r * output_count;
          for (int64_t p = 0; p < output_count; ++p) row[p] += weight * column[p];
        }
      }
    }
  }
  Tensor out = make_tensor(x.dtype, out_dims);
  visit_float(x.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (size_t i = 0; i < result.size(); ++i)
      store<S>(out.bytes.data(), static_cast<int64_t>(i), result[i]);
  });
  return single(std::move(out));
}

KernelResult pool_kernel(const KernelContext& ctx, bool max) {
  const Tensor& x = *ctx.input(0);
  if (x.dims.size() < 3) {
    return ctx.error("input " + dims_string(x.dims) + " is not [N,C,spatial...]; fix its shape");
  }
  const Attribute* kernel_attribute = ctx.node.find_attribute("kernel_shape");
  if (kernel_attribute == nullptr) return ctx.error("has no kernel_shape; give kernel_shape");
  std::vector<int64_t> spatial(x.dims.begin() + 2, x.dims.end());
  const bool ceil_mode = ctx.node.int_attribute("ceil_mode", 0) != 0;
  STITCH_ASSIGN_OR_RETURN(Window window,
                          make_window(ctx, spatial, kernel_attribute->ints, ceil_mode));
  const bool include_pad = ctx.node.int_attribute("count_include_pad", 0) != 0;
  const bool column_major = ctx.node.int_attribute("storage_order", 0) != 0;
  std::vector<int64_t> taps = window_taps(window);
  const int64_t kernel_count = element_count(window.kernel);
  const int64_t output_count = element_count(window.output);
  const int64_t input_count = element_count(spatial);
  const int64_t planes = x.dims[0] * x.dims[1];
  std::vector<int64_t> out_dims = {x.dims[0], x.dims[1]};
  out_dims.insert(out_dims.end(), window.output.begin(), window.output.end());
  Tensor out = make_tensor(x.dtype, out_dims);
  Tensor indices = make_tensor(DType::kInt64, out_dims);
  // Column-major offsets of input positions, for storage_order=1 indices.
  std::vector<int64_t> column_offset;
  if (max && column_major && ctx.wants_output(1)) {
    column_offset.resize(static_cast<size_t>(input_count));
    std::vector<int64_t> strides(spatial.size(), 1);
    for (size_t d = 1; d < spatial.size(); ++d) strides[d] = strides[d - 1] * spatial[d - 1];
    std::vector<int64_t> row_strides = row_major_strides(spatial);
    for (int64_t i = 0; i < input_count; ++i) {
      int64_t offset = 0;
      for (size_t d = 0; d < spatial.size(); ++d)
        offset += (i / row_strides[d]) % spatial[d] * strides[d];
      column_offset[static_cast<size_t>(i)] = offset;
    }
  }
  bool ok = visit_numeric(x.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = ComputeOf<S>;
    if constexpr (!std::is_same_v<C, double>) {
      if (!max) return;
    }
    for (int64_t plane = 0; plane < planes; ++plane) {
      const int64_t base = plane * input_count;
      for (int64_t p = 0; p < output_count; ++p) {
        C best = std::is_same_v<C, double>
                     ? static_cast<C>(-std::numeric_limits<double>::infinity())
                     : std::numeric_limits<C>::lowest();
        int64_t best_offset = -1;
        double sum = 0.0;
        int64_t count = 0;
        for (int64_t kk = 0; kk < kernel_count; ++kk) {
          int64_t tap = taps[static_cast<size_t>(kk * output_count + p)];
          if (tap >= 0) {
            C v = load<S>(x.bytes.data(), base + tap);
            if (best_offset < 0 || v > best) {
              best = v;
              best_offset = tap;
            }
            sum += static_cast<double>(v);
            ++count;
          }
        }
        const int64_t o = plane * output_count + p;
        if (max) {
          store<S>(out.bytes.data(), o, best);
          int64_t position = column_offset.empty() || best_offset < 0
                                 ? best_offset
                                 : column_offset[static_cast<size_t>(best_offset)];
          store<int64_t>(indices.bytes.data(), o, base + position);
        } else {
          // count_include_pad divides by the whole window, as ONNX Runtime does (also
          // for ceil_mode windows that reach past the end padding).
          const int64_t divisor = include_pad ? kernel_count : count;
          store<S>(out.bytes.data(), o,
                   static_cast<C>(divisor > 0 ? sum / static_cast<double>(divisor) : 0.0));
        }
      }
    }
  });
  if (!ok || (!max && !dtype_is_float(x.dtype))) return ctx.unsupported_dtype(0);
  std::vector<Tensor> outputs;
  outputs.push_back(std::move(out));
  if (max && ctx.wants_output(1)) outputs.push_back(std::move(indices));
  return outputs;
}

KernelResult global_pool_kernel(const KernelContext& ctx, bool max) {
  const Tensor& x = *ctx.input(0);
  STITCH_RETURN_IF_ERROR(check_float(ctx, 0));
  if (x.dims.size() < 2) return ctx.error("input has rank < 2; global pooling needs [N,C,...]");
  const int64_t planes = x.dims[0] * x.dims[1];
  const int64_t inner = dims_product(x.dims, 2, x.dims.size());
  std::vector<int64_t> out_dims(x.dims.size(), 1);
  out_dims[0] = x.dims[0];
  out_dims[1] = x.dims[1];
  Tensor out = make_tensor(x.dtype, out_dims);
  visit_float(x.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (int64_t p = 0; p < planes; ++p) {
      double acc = max ? -std::numeric_limits<double>::infinity() : 0.0;
      for (int64_t i = 0; i < inner; ++i) {
        double v = load<S>(x.bytes.data(), p * inner + i);
        acc = max ? std::max(acc, v) : acc + v;
      }
      store<S>(out.bytes.data(), p, max ? acc : acc / static_cast<double>(inner));
    }
  });
  return single(std::move(out));
}

// Resize: nearest and (multi)linear with the usual coordinate transformations.
KernelResult resize_kernel(const KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  const auto rank = static_cast<int64_t>(x.dims.size());
  const std::string mode = ctx.node.string_attribute("mode", "nearest");
  std::string transform =
      ctx.opset >= 11 ? ctx.node.string_attribute("coordinate_transformation_mode", "half_pixel")
                      : "asymmetric";
  std::string nearest_mode =
      ctx.opset >= 11 ? ctx.node.string_attribute("nearest_mode", "round_prefer_floor") : "simple";
  if (mode != "nearest" && mode != "linear") {
    return ctx.error("has mode \"" + mode +
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
  std::vector<float> scales(static_cast<size_t>(rank), 1.0f);
  std::vector<int64_t> out_dims = x.dims;
  if (sizes_tensor != nullptr && sizes_tensor->num_elements() > 0) {
    std::vector<int64_t> sizes = sizes_tensor->to_int64_vector();
    if (sizes.size() != axes.size()) {
      return ctx.error("sizes has " + std::to_string(sizes.size()) + " entries for " +
                       std::to_string(axes.size()) + " axes; give one per axis");
    }
    for (size_t k = 0; k < axes.size(); ++k) {
      int64_t axis = 0;
      if (!normalize_axis(axes[k], rank, &axis)) return ctx.error("axes attribute out of range");
      auto a = static_cast<size_t>(axis);
      out_dims[a] = sizes[k];
      scales[a] = static_cast<float>(sizes[k]) / static_cast<float>(x.dims[a]);
    }
  } else if (scales_tensor != nullptr && scales_tensor->num_elements() > 0) {
    if (!dtype_is_float(scales_tensor->dtype))
      return ctx.unsupported_dtype(ctx.opset >= 11 ? 2 : 1);
    if (static_cast<size_t>(scales_tensor->num_elements()) != axes.size()) {
      return ctx.error("scales has " + std::to_string(scales_tensor->num_elements()) +
                       " entries for " + std::to_string(axes.size()) + " axes; give one per axis");
    }
    for (size_t k = 0; k < axes.size(); ++k) {
      int64_t axis = 0;
      if (!normalize_axis(axes[k], rank, &axis)) return ctx.error("axes attribute out of range");
      auto a = static_cast<size_t>(axis);
      scales[a] = static_cast<float>(scales_tensor->float_at(static_cast<int64_t>(k)));
      if (scales[a] <= 0) return ctx.error("has a scale <= 0; scales must be positive");
      out_dims[a] = static_cast<int64_t>(std::floor(scales[a] * static_cast<float>(x.dims[a])));
    }
  } else {
    return ctx.error("has neither scales nor sizes; give one of them");
  }
  STITCH_RETURN_IF_ERROR(ctx.check_output_dims(out_dims));
  for (size_t a = 0; a < x.dims.size(); ++a) {
    if (x.dims[a] == 0 && out_dims[a] > 0) {
      return ctx.error("resizes an empty axis " + std::to_string(a) + " to " +
                       std::to_string(out_dims[a]) + "; give a non-empty input");
    }
  }
  // Source coordinate of output index i on axis a, in float as ONNX Runtime computes it.
  auto source = [&](size_t a, int64_t i) -> float {
    const float scale = scales[a];
    const auto in = static_cast<float>(x.dims[a]);
    const auto out = static_cast<float>(out_dims[a]);
    const auto index = static_cast<float>(i);
    if (transform == "asymmetric") return index / scale;
    if (transform == "align_corners") return out <= 1 ? 0.0f : index * (in - 1) / (out - 1);
    if (transform == "pytorch_half_pixel") return out > 1 ? (index + 0.5f) / scale - 0.5f : 0.0f;
    if (transform == "half_pixel_symmetric") {
      const float adjustment = out / (scale * in);
      const float center = in / 2;
      const float offset = center * (1 - adjustment);
      return offset + (index + 0.5f) / scale - 0.5f;
    }
    return (index + 0.5f) / scale - 0.5f;  // half_pixel
  };
  if (transform != "asymmetric" && transform != "align_corners" &&
      transform != "pytorch_half_pixel" && transform != "half_pixel" &&
      transform != "half_pixel_symmetric") {
    return ctx.error("has coordinate_transformation_mode \"" + transform +
                     "\", which has no reference evaluation; use half_pixel, asymmetric, "
                     "align_corners, pytorch_half_pixel or half_pixel_symmetric");
  }
  if (mode == "nearest") {
    std::vector<std::vector<int64_t>> maps(x.dims.size());
    for (size_t a = 0; a < x.dims.size(); ++a) {
      maps[a].resize(static_cast<size_t>(out_dims[a]));
      for (int64_t i = 0; i < out_dims[a]; ++i) {
        float position = source(a, i);
        int64_t index = 0;
        if (nearest_mode == "round_prefer_floor") {
          index = position == std::floor(position) + 0.5f
                      ? static_cast<int64_t>(std::floor(position))
                      : static_cast<int64_t>(std::round(position));
        } else if (nearest_mode == "round_prefer_ceil") {
          index = static_cast<int64_t>(std::round(position));
        } else if (nearest_mode == "floor") {
          index = static_cast<int64_t>(std::floor(position));
        } else if (nearest_mode == "ceil") {
          index = static_cast<int64_t>(std::ceil(position));
        } else if (nearest_mode == "simple") {
          index = scales[a] < 1 ? static_cast<int64_t>(std::ceil(position))
                                : static_cast<int64_t>(position);
        } else {
          return ctx.error("has nearest_mode \"" + nearest_mode +
                           "\"; use round_prefer_floor, round_prefer_ceil, floor or ceil");
        }
        maps[a][static_cast<size_t>(i)] = std::clamp<int64_t>(index, 0, x.dims[a] - 1);
      }
    }
    return single(gather_by_axis_maps(x, out_dims, maps, ""));
  }
  if (!dtype_is_float(x.dtype)) return ctx.unsupported_dtype(0);
  // Linear: interpolate one axis at a time (separable, equal to multilinear).
  std::vector<double> current = doubles_of(x);
  std::vector<int64_t> dims = x.dims;
  for (size_t a = 0; a < x.dims.size(); ++a) {
    if (out_dims[a] == dims[a] && scales[a] == 1.0f) continue;
    const int64_t outer = dims_product(dims, 0, a);
    const int64_t inner = dims_product(dims, a + 1, dims.size());
    const int64_t in = dims[a];
    const int64_t out = out_dims[a];
    std::vector<double> next(static_cast<size_t>(outer * out * inner));
    for (int64_t i = 0; i < out; ++i) {
      float position = std::clamp(source(a, i), 0.0f, static_cast<float>(in - 1));
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
  Tensor result = make_tensor(x.dtype, out_dims);
  visit_float(x.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (size_t i = 0; i < current.size(); ++i)
      store<S>(result.bytes.data(), static_cast<int64_t>(i), current[i]);
  });
  return single(std::move(result));
}

// Einsum by a loop over the whole index space (output labels then summed labels).
KernelResult einsum_kernel(const KernelContext& ctx) {
  std::string equation = ctx.node.string_attribute("equation", "");
  equation.erase(std::remove(equation.begin(), equation.end(), ' '), equation.end());
  const size_t arrow = equation.find("->");
  const std::string lhs = equation.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t begin = 0;;) {
    size_t comma = lhs.find(',', begin);
    terms.push_back(
        lhs.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  if (terms.size() != ctx.inputs.size()) {
    return ctx.error("equation \"" + equation + "\" has " + std::to_string(terms.size()) +
                     " operands but the node has " + std::to_string(ctx.inputs.size()) +
                     " inputs; fix the equation");
  }
  // Labels: letters are their character; ellipsis axis e (right-aligned) is 256 + e.
  constexpr int kEllipsis = 256;
  std::map<int, int64_t> label_dims;
  std::vector<std::vector<int>> operand_labels;
  size_t ellipsis_rank = 0;
  std::map<int, int> label_count;
  for (size_t t = 0; t < terms.size(); ++t) {
    const Tensor* in = ctx.input(t);
    if (in == nullptr) return ctx.missing_input(t);
    if (!dtype_is_float(in->dtype) && !dtype_is_integer(in->dtype)) return ctx.unsupported_dtype(t);
    const std::string& term = terms[t];
    size_t dots = term.find("...");
    size_t letters = term.size() - (dots == std::string::npos ? 0 : 3);
    if (letters > in->dims.size() || (dots == std::string::npos && letters != in->dims.size())) {
      return ctx.error("operand " + std::to_string(t) + " \"" + term +
                       "\" does not match its rank " + std::to_string(in->dims.size()) +
                       "; fix the equation");
    }
    size_t own_ellipsis = in->dims.size() - letters;
    ellipsis_rank = std::max(ellipsis_rank, own_ellipsis);
    std::vector<int> labels;
    for (size_t i = 0; i < term.size(); ++i) {
      if (i == dots) {
        for (size_t e = 0; e < own_ellipsis; ++e)
          labels.push_back(kEllipsis + static_cast<int>(e + 64 - own_ellipsis));
        i += 2;
        continue;
      }
      if (!std::isalpha(static_cast<unsigned char>(term[i]))) {
        return ctx.error("equation \"" + equation + "\" has a character '" + term.substr(i, 1) +
                         "' that is not a letter; fix the equation");
      }
      labels.push_back(term[i]);
      ++label_count[term[i]];
    }
    for (size_t d = 0; d < labels.size(); ++d) {
      int64_t dim = in->dims[d];
      auto [it, inserted] = label_dims.emplace(labels[d], dim);
      if (!inserted && it->second != dim) {
        if (labels[d] >= kEllipsis && (it->second == 1 || dim == 1)) {
          it->second = std::max(it->second, dim);
        } else {
          return ctx.error("label dims disagree in equation \"" + equation + "\"; fix the shapes");
        }
      }
    }
    operand_labels.push_back(std::move(labels));
  }
  std::vector<int> output;
  if (arrow != std::string::npos) {
    const std::string rhs = equation.substr(arrow + 2);
    for (size_t i = 0; i < rhs.size(); ++i) {
      if (rhs.compare(i, 3, "...") == 0) {
        for (size_t e = 0; e < ellipsis_rank; ++e)
          output.push_back(kEllipsis + static_cast<int>(e + 64 - ellipsis_rank));
        i += 2;
        continue;
      }
      if (label_dims.count(rhs[i]) == 0) {
        return ctx.error("output label '" + rhs.substr(i, 1) + "' of \"" + equation +
                         "\" is not in any operand; fix the equation");
      }
      output.push_back(rhs[i]);
    }
  } else {
    for (size_t e = 0; e < ellipsis_rank; ++e)
      output.push_back(kEllipsis + static_cast<int>(e + 64 - ellipsis_rank));
    for (const auto& [label, count] : label_count) {
      if (count == 1) output.push_back(label);
    }
  }
  std::vector<int> loop = output;
  for (const auto& [label, dim] : label_dims) {
    if (std::find(output.begin(), output.end(), label) == output.end()) loop.push_back(label);
  }
  std::vector<int64_t> loop_dims;
  for (int label : loop) loop_dims.push_back(label_dims[label]);
  std::vector<int64_t> out_dims(loop_dims.begin(),
                                loop_dims.begin() + static_cast<int64_t>(output.size()));
  // Per operand, the stride of every loop label (summed for repeated labels).
  std::vector<std::vector<int64_t>> strides(terms.size(), std::vector<int64_t>(loop.size(), 0));
  for (size_t t = 0; t < terms.size(); ++t) {
    const Tensor& in = *ctx.input(t);
    std::vector<int64_t> own = row_major_strides(in.dims);
    for (size_t d = 0; d < operand_labels[t].size(); ++d) {
      size_t position = static_cast<size_t>(
          std::find(loop.begin(), loop.end(), operand_labels[t][d]) - loop.begin());
      if (in.dims[d] != 1 || label_dims[operand_labels[t][d]] == 1) strides[t][position] += own[d];
    }
  }
  const DType dtype = ctx.input(0)->dtype;
  for (size_t t = 1; t < terms.size(); ++t) {
    if (ctx.input(t)->dtype != dtype) return ctx.unsupported_dtype(t);
  }
  const int64_t out_count = element_count(out_dims);
  const int64_t inner_count = dims_product(loop_dims, output.size(), loop_dims.size());
  std::vector<double> acc(static_cast<size_t>(out_count), 0.0);
  std::vector<std::vector<double>> values;
  for (size_t t = 0; t < terms.size(); ++t) values.push_back(std::vector<double>());
  for (size_t t = 0; t < terms.size(); ++t) {
    const Tensor& in = *ctx.input(t);
    values[t].resize(static_cast<size_t>(in.num_elements()));
    for (size_t i = 0; i < values[t].size(); ++i)
      values[t][i] = in.float_at(static_cast<int64_t>(i));
  }
  if (element_count(loop_dims) > 0) {
    std::vector<int64_t> counter(loop.size(), 0);
    std::vector<int64_t> offsets(terms.size(), 0);
    for (int64_t step = 0; step < out_count * inner_count; ++step) {
      double product = 1.0;
      for (size_t t = 0; t < terms.size(); ++t)
        product *= values[t][static_cast<size_t>(offsets[t])];
      acc[static_cast<size_t>(step / std::max<int64_t>(inner_count, 1))] += product;
      for (size_t d = loop.size(); d-- > 0;) {
        ++counter[d];
        for (size_t t = 0; t < terms.size(); ++t) offsets[t] += strides[t][d];
        if (counter[d] < loop_dims[d]) break;
        for (size_t t = 0; t < terms.size(); ++t) offsets[t] -= strides[t][d] * loop_dims[d];
        counter[d] = 0;
      }
    }
  }
  Tensor out = make_tensor(dtype, out_dims);
  visit_numeric(dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = ComputeOf<S>;
    for (int64_t i = 0; i < out_count; ++i) {
      store<S>(out.bytes.data(), i, static_cast<C>(acc[static_cast<size_t>(i)]));
    }
  });
  return single(std::move(out));
}

// One LSTM activation function with its alpha and beta.
struct Activation {
  std::string name;
  double alpha = 0;
  double beta = 0;
  double operator()(double x) const {
    if (name == "Sigmoid") return 1.0 / (1.0 + std::exp(-x));
    if (name == "Tanh") return std::tanh(x);
    if (name == "Relu") return x < 0.0 ? 0.0 : x;  // NaN stays, as the Relu op's
    if (name == "HardSigmoid") return std::clamp(alpha * x + beta, 0.0, 1.0);
    if (name == "LeakyRelu") return x >= 0 ? x : alpha * x;
    if (name == "ThresholdedRelu") return x > alpha ? x : 0.0;
    if (name == "ScaledTanh") return alpha * std::tanh(beta * x);
    if (name == "Affine") return alpha * x + beta;
    if (name == "Elu") return x >= 0 ? x : alpha * (std::exp(x) - 1.0);
    if (name == "Softsign") return x / (1.0 + std::fabs(x));
    return std::log1p(std::exp(x));  // Softplus
  }
};

Result<std::vector<Activation>> lstm_activations(const KernelContext& ctx, size_t directions) {
  std::vector<std::string> names;
  if (const Attribute* attribute = ctx.node.find_attribute("activations"))
    names = attribute->strings;
  if (names.empty()) {
    for (size_t d = 0; d < directions; ++d) names.insert(names.end(), {"Sigmoid", "Tanh", "Tanh"});
  }
  if (names.size() != 3 * directions) {
    return ctx.error("has " + std::to_string(names.size()) + " activations for " +
                     std::to_string(directions) + " directions; give 3 per direction");
  }
  std::vector<float> alphas = floats_attribute(ctx.node, "activation_alpha", {});
  std::vector<float> betas = floats_attribute(ctx.node, "activation_beta", {});
  size_t next_alpha = 0;
  size_t next_beta = 0;
  std::vector<Activation> result;
  for (const std::string& name : names) {
    Activation f{name};
    struct Defaults {
      const char* name;
      double alpha;
      double beta;
      bool uses_alpha;
      bool uses_beta;
    };
    static const Defaults defaults[] = {
        {"Sigmoid", 0, 0, false, false},      {"Tanh", 0, 0, false, false},
        {"Relu", 0, 0, false, false},         {"HardSigmoid", 0.2, 0.5, true, true},
        {"LeakyRelu", 0.01, 0, true, false},  {"ThresholdedRelu", 1.0, 0, true, false},
        {"ScaledTanh", 1.0, 1.0, true, true}, {"Affine", 1.0, 0, true, true},
        {"Elu", 1.0, 0, true, false},         {"Softsign", 0, 0, false, false},
        {"Softplus", 0, 0, false, false},
    };
    const Defaults* found = nullptr;
    for (const Defaults& entry : defaults) {
      if (name == entry.name) found = &entry;
    }
    if (found == nullptr) {
      return ctx.error("has activation \"" + name +
                       "\", which has no reference evaluation; use "
                       "Sigmoid, Tanh, Relu, HardSigmoid, LeakyRelu, ThresholdedRelu, "
                       "ScaledTanh, Affine, Elu, Softsign or Softplus");
    }
    f.alpha = found->alpha;
    f.beta = found->beta;
    if (found->uses_alpha && next_alpha < alphas.size()) f.alpha = alphas[next_alpha++];
    if (found->uses_beta && next_beta < betas.size()) f.beta = betas[next_beta++];
    result.push_back(f);
  }
  return result;
}

KernelResult lstm_kernel(const KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  const Tensor& w = *ctx.input(1);
  const Tensor& r = *ctx.input(2);
  for (size_t i : {0, 1, 2, 3, 5, 6, 7}) STITCH_RETURN_IF_ERROR(check_float(ctx, i));
  const std::string direction = ctx.node.string_attribute("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
    return ctx.error("has direction \"" + direction + "\"; use forward, reverse or bidirectional");
  }
  const int64_t directions = direction == "bidirectional" ? 2 : 1;
  const bool batch_first = ctx.node.int_attribute("layout", 0) != 0;
  if (x.dims.size() != 3 || w.dims.size() != 3 || r.dims.size() != 3) {
    return ctx.error("X, W and R must have rank 3; fix their shapes");
  }
  const int64_t steps = batch_first ? x.dims[1] : x.dims[0];
  const int64_t batch = batch_first ? x.dims[0] : x.dims[1];
  const int64_t input_size = x.dims[2];
  const int64_t hidden = ctx.node.int_attribute("hidden_size", r.dims[2]);
  if (w.dims[0] != directions || w.dims[1] != 4 * hidden || w.dims[2] != input_size ||
      r.dims[0] != directions || r.dims[1] != 4 * hidden || r.dims[2] != hidden) {
    return ctx.error("W " + dims_string(w.dims) + " or R " + dims_string(r.dims) +
                     " do not match hidden_size " + std::to_string(hidden) + ", " +
                     std::to_string(directions) + " directions and input size " +
                     std::to_string(input_size) + "; fix the shapes");
  }
  STITCH_ASSIGN_OR_RETURN(std::vector<Activation> activations,
                          lstm_activations(ctx, static_cast<size_t>(directions)));
  const Attribute* clip_attribute = ctx.node.find_attribute("clip");
  const double clip = clip_attribute != nullptr ? clip_attribute->f : 0.0;
  const bool input_forget = ctx.node.int_attribute("input_forget", 0) != 0;
  std::vector<double> xs = doubles_of(x);
  std::vector<double> ws = doubles_of(w);
  std::vector<double> rs = doubles_of(r);
  const int64_t gates = 4 * hidden;
  auto optional_values = [&](size_t index, int64_t count,
                             const char* what) -> Result<std::vector<double>> {
    const Tensor* tensor = ctx.input(index);
    if (tensor == nullptr) return std::vector<double>(static_cast<size_t>(count), 0.0);
    if (tensor->num_elements() != count) {
      return ctx.error(std::string(what) + " has " + std::to_string(tensor->num_elements()) +
                       " elements, expected " + std::to_string(count) + "; fix its shape");
    }
    return doubles_of(*tensor);
  };
  STITCH_ASSIGN_OR_RETURN(std::vector<double> bs, optional_values(3, directions * 2 * gates, "B"));
  STITCH_ASSIGN_OR_RETURN(std::vector<double> h0,
                          optional_values(5, directions * batch * hidden, "initial_h"));
  STITCH_ASSIGN_OR_RETURN(std::vector<double> c0,
                          optional_values(6, directions * batch * hidden, "initial_c"));
  STITCH_ASSIGN_OR_RETURN(std::vector<double> ps, optional_values(7, directions * 3 * hidden, "P"));
  std::vector<int64_t> lengths(static_cast<size_t>(batch), steps);
  if (const Tensor* sequence_lens = ctx.input(4)) {
    if (sequence_lens->num_elements() != batch || !dtype_is_integer(sequence_lens->dtype)) {
      return ctx.error("sequence_lens must be int32 of shape [batch]; fix it");
    }
    lengths = sequence_lens->to_int64_vector();
    for (int64_t length : lengths) {
      if (length < 0 || length > steps) {
        return ctx.error("sequence_lens has " + std::to_string(length) + " outside [0, " +
                         std::to_string(steps) + "]; fix it");
      }
    }
  }
  // State tensors [directions, batch, hidden] (batch-major with layout=1).
  auto state_index = [&](int64_t d, int64_t b) {
    return batch_first ? (b * directions + d) * hidden : (d * batch + b) * hidden;
  };
  std::vector<double> y(static_cast<size_t>(steps * directions * batch * hidden), 0.0);
  std::vector<double> y_h(static_cast<size_t>(directions * batch * hidden), 0.0);
  std::vector<double> y_c(y_h.size(), 0.0);
  std::vector<double> gate(static_cast<size_t>(gates));
  std::vector<double> h(static_cast<size_t>(hidden));
  std::vector<double> c(static_cast<size_t>(hidden));
  auto clipped = [clip](double v) { return clip > 0 ? std::clamp(v, -clip, clip) : v; };
  for (int64_t d = 0; d < directions; ++d) {
    const bool reverse = direction == "reverse" || d == 1;
    const Activation& f = activations[static_cast<size_t>(3 * d)];
    const Activation& g = activations[static_cast<size_t>(3 * d + 1)];
    const Activation& hf = activations[static_cast<size_t>(3 * d + 2)];
    const double* wd = ws.data() + d * gates * input_size;
    const double* rd = rs.data() + d * gates * hidden;
    const double* wb = bs.data() + d * 2 * gates;
    const double* rb = wb + gates;
    const double* pi = ps.data() + d * 3 * hidden;
    const double* po = pi + hidden;
    const double* pf = po + hidden;
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t state = state_index(d, b);
      // initial_h and initial_c follow the layout, as Y_h and Y_c do.
      std::copy(h0.begin() + state, h0.begin() + state + hidden, h.begin());
      std::copy(c0.begin() + state, c0.begin() + state + hidden, c.begin());
      const int64_t length = lengths[static_cast<size_t>(b)];
      for (int64_t s = 0; s < length; ++s) {
        const int64_t t = reverse ? length - 1 - s : s;
        const double* xt =
            xs.data() + (batch_first ? (b * steps + t) : (t * batch + b)) * input_size;
        for (int64_t k = 0; k < gates; ++k) {
          double sum = wb[k] + rb[k];
          const double* wrow = wd + k * input_size;
          for (int64_t i = 0; i < input_size; ++i) sum += wrow[i] * xt[i];
          const double* rrow = rd + k * hidden;
          for (int64_t i = 0; i < hidden; ++i) sum += rrow[i] * h[static_cast<size_t>(i)];
          gate[static_cast<size_t>(k)] = sum;
        }
        for (int64_t j = 0; j < hidden; ++j) {
          auto sj = static_cast<size_t>(j);
          const double c_prev = c[sj];
          const double in_gate = f(clipped(gate[sj] + pi[j] * c_prev));
          const double forget =
              input_forget ? 1.0 - in_gate
                           : f(clipped(gate[static_cast<size_t>(2 * hidden + j)] + pf[j] * c_prev));
          const double candidate = g(clipped(gate[static_cast<size_t>(3 * hidden + j)]));
          const double c_new = forget * c_prev + in_gate * candidate;
          const double out_gate = f(clipped(gate[static_cast<size_t>(hidden + j)] + po[j] * c_new));
          c[sj] = c_new;
          h[sj] = out_gate * hf(c_new);
        }
        const int64_t y_base = batch_first ? ((b * steps + t) * directions + d) * hidden
                                           : ((t * directions + d) * batch + b) * hidden;
        std::copy(h.begin(), h.end(), y.begin() + y_base);
      }
      std::copy(h.begin(), h.end(), y_h.begin() + state);
      std::copy(c.begin(), c.end(), y_c.begin() + state);
    }
  }
  auto to_tensor = [&](std::vector<int64_t> dims, const std::vector<double>& values) {
    Tensor out = make_tensor(x.dtype, std::move(dims));
    visit_float(x.dtype, [&](auto tag) {
      using S = typename decltype(tag)::type;
      for (size_t i = 0; i < values.size(); ++i)
        store<S>(out.bytes.data(), static_cast<int64_t>(i), values[i]);
    });
    return out;
  };
  std::vector<Tensor> outputs;
  outputs.push_back(to_tensor(batch_first ? std::vector<int64_t>{batch, steps, directions, hidden}
                                          : std::vector<int64_t>{steps, directions, batch, hidden},
                              y));
  std::vector<int64_t> state_dims = batch_first ? std::vector<int64_t>{batch, directions, hidden}
                                                : std::vector<int64_t>{directions, batch, hidden};
  outputs.push_back(to_tensor(state_dims, y_h));
  outputs.push_back(to_tensor(state_dims, y_c));
  return outputs;
}

}  // namespace

void add_nn_kernels(KernelTable& table) {
  table["MatMul"] = matmul_kernel;
  table["Gemm"] = gemm_kernel;
  table["Conv"] = conv_kernel;
  table["MaxPool"] = [](const KernelContext& c) { return pool_kernel(c, true); };
  table["AveragePool"] = [](const KernelContext& c) { return pool_kernel(c, false); };
  table["GlobalAveragePool"] = [](const KernelContext& c) { return global_pool_kernel(c, false); };
  table["GlobalMaxPool"] = [](const KernelContext& c) { return global_pool_kernel(c, true); };
  table["Resize"] = resize_kernel;
  table["Einsum"] = einsum_kernel;
  table["LSTM"] = lstm_kernel;
}

}  // namespace stitch::ir::reference
