// Reference kernels of the compute-heavy and layout ops: MatMul, Gemm, Conv,
// MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool, Einsum.
// Products accumulate in double (int64 for integer MatMul/Gemm); float32 MatMul, Gemm
// and dense Conv operands follow KernelContext::products (interpreter.h).
#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/core/window.h"
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
    for_each_index<2>(
        batch, {&a_strides, &b_strides}, {0, 0},
        [&](int64_t index, const std::array<int64_t, 2>& off) {
          for (int64_t i = 0; i < m * k; ++i)
            lhs[static_cast<size_t>(i)] = load<S>(a.bytes.data(), off[0] + i);
          for (int64_t i = 0; i < k * n; ++i)
            rhs[static_cast<size_t>(i)] = load<S>(b.bytes.data(), off[1] + i);
          std::vector<double> lhs_small, rhs_small;
          if constexpr (std::is_same_v<S, float>) {
            lhs_small = split_product_operands(ctx.products, lhs);
            rhs_small = split_product_operands(ctx.products, rhs);
          }
          for (int64_t i = 0; i < m; ++i) {
            std::fill(row.begin(), row.end(), C{});
            for (int64_t p = 0; p < k; ++p) {
              const C left = lhs[static_cast<size_t>(i * k + p)];
              const C* right = rhs.data() + p * n;
              for (int64_t j = 0; j < n; ++j) row[static_cast<size_t>(j)] += left * right[j];
              if constexpr (std::is_same_v<S, float>) {
                if (lhs_small.empty()) continue;
                const double left_small = lhs_small[static_cast<size_t>(i * k + p)];
                const double* right_small = rhs_small.data() + p * n;
                for (int64_t j = 0; j < n; ++j) {
                  row[static_cast<size_t>(j)] += left * right_small[j] + left_small * right[j];
                }
              }
            }
            for (int64_t j = 0; j < n; ++j) {
              store<S>(out.bytes.data(), (index * m + i) * n + j, row[static_cast<size_t>(j)]);
            }
          }
        });
  });
  if (!ok) return ctx.unsupported_dtype(0);
  return single(std::move(out));
}

// The strides of Gemm's C broadcast to [m, n], or an error when it does not broadcast.
Result<std::vector<int64_t>> gemm_c_strides(const KernelContext& ctx, const Tensor& c, int64_t m,
                                            int64_t n) {
  std::vector<int64_t> joined;
  if (c.dims.size() > 2 || !broadcast_shapes({m, n}, c.dims, &joined) ||
      joined != std::vector<int64_t>{m, n}) {
    return ctx.error("C " + dims_string(c.dims) + " does not broadcast to [" + std::to_string(m) +
                     "," + std::to_string(n) + "]; fix its shape");
  }
  return broadcast_strides(c.dims, {m, n});
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
    STITCH_ASSIGN_OR_RETURN(c_strides, gemm_c_strides(ctx, *c, m, n));
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
    std::vector<double> lhs_small, rhs_small;
    if constexpr (std::is_same_v<S, float>) {
      lhs_small = split_product_operands(ctx.products, lhs);
      rhs_small = split_product_operands(ctx.products, rhs);
    }
    std::vector<C> row(static_cast<size_t>(n));
    for (int64_t i = 0; i < m; ++i) {
      std::fill(row.begin(), row.end(), C{});
      for (int64_t p = 0; p < k; ++p) {
        const C left = lhs[static_cast<size_t>(i * k + p)];
        for (int64_t j = 0; j < n; ++j)
          row[static_cast<size_t>(j)] += left * rhs[static_cast<size_t>(p * n + j)];
        if constexpr (std::is_same_v<S, float>) {
          if (lhs_small.empty()) continue;
          const double left_small = lhs_small[static_cast<size_t>(i * k + p)];
          for (int64_t j = 0; j < n; ++j) {
            row[static_cast<size_t>(j)] += left * rhs_small[static_cast<size_t>(p * n + j)] +
                                           left_small * rhs[static_cast<size_t>(p * n + j)];
          }
        }
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

using ir::Window;

// The window (ir/core/window.h), its errors naming the node.
Result<Window> make_window(const KernelContext& ctx, const std::vector<int64_t>& input,
                           std::vector<int64_t> kernel, bool ceil_mode) {
  Result<Window> window = ir::sliding_window(ctx.node, input, std::move(kernel), ceil_mode);
  if (!window.is_ok()) return ctx.error(window.status().message());
  return window;
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
  // A dense float32 Conv's products at the evaluation's precision (a grouped one is a
  // memory-bound stencil and stays float32: ir/reference/interpreter.h).
  const Precision products =
      group == 1 && x.dtype == DType::kFloat32 ? ctx.products : Precision::kFloat32;
  std::vector<double> input_small = split_product_operands(products, input);
  std::vector<double> weights_small = split_product_operands(products, weights);
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
  std::vector<double> columns_small(input_small.empty() ? 0 : columns.size());
  for (int64_t n = 0; n < batches; ++n) {
    for (int64_t g = 0; g < group; ++g) {
      for (int64_t c = 0; c < group_channels; ++c) {
        const int64_t plane_offset = ((n * channels) + g * group_channels + c) * input_count;
        for (int64_t kk = 0; kk < kernel_count; ++kk) {
          const int64_t column_offset = (c * kernel_count + kk) * output_count;
          const int64_t* tap = taps.data() + kk * output_count;
          const double* plane = input.data() + plane_offset;
          double* column = columns.data() + column_offset;
          for (int64_t p = 0; p < output_count; ++p) column[p] = tap[p] >= 0 ? plane[tap[p]] : 0.0;
          if (input_small.empty()) continue;
          const double* plane_small = input_small.data() + plane_offset;
          double* column_small = columns_small.data() + column_offset;
          for (int64_t p = 0; p < output_count; ++p) {
            column_small[p] = tap[p] >= 0 ? plane_small[tap[p]] : 0.0;
          }
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
          if (weights_small.empty()) continue;
          const double weight_small = weights_small[static_cast<size_t>(filter * rows + r)];
          const double* column_small = columns_small.data() + r * output_count;
          for (int64_t p = 0; p < output_count; ++p) {
            row[p] += weight * column_small[p] + weight_small * column[p];
          }
        }
      }
    }
  }
  return single(tensor_of_doubles(x.dtype, out_dims, result));
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

}  // namespace

void add_nn_kernels(KernelTable& table) {
  table["MatMul"] = matmul_kernel;
  table["Gemm"] = gemm_kernel;
  table["Conv"] = conv_kernel;
  table["MaxPool"] = [](const KernelContext& c) { return pool_kernel(c, true); };
  table["AveragePool"] = [](const KernelContext& c) { return pool_kernel(c, false); };
  table["GlobalAveragePool"] = [](const KernelContext& c) { return global_pool_kernel(c, false); };
  table["GlobalMaxPool"] = [](const KernelContext& c) { return global_pool_kernel(c, true); };
  table["Einsum"] = einsum_kernel;
}

}  // namespace stitch::ir::reference
