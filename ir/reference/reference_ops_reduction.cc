// Reference kernels of the reductions and the compound reduction ops: Reduce*,
// ArgMax/ArgMin, Softmax/LogSoftmax, Layer/Batch/Instance/Group normalization, TopK.
// Float sums accumulate in double.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/core/reduction_axes.h"
#include "ir/reference/reference_ops.h"

namespace stitch::ir::reference {

namespace {

enum class Reduce { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kSumSquare, kLogSum, kLogSumExp };

KernelResult reduce_kernel(const KernelContext& ctx, Reduce kind) {
  const Tensor& x = *ctx.input(0);
  const auto rank = static_cast<int64_t>(x.dims.size());
  const int64_t axes_input_from = reduction_axes_input_opset(ctx.node);
  std::vector<int64_t> axes;
  if (ctx.opset >= axes_input_from) {
    const Tensor* given = ctx.input(1);
    if (given != nullptr) {
      if (given->dtype != DType::kInt64) return ctx.unsupported_dtype(1);
      axes = given->to_int64_vector();
    }
    if (axes.empty() && ctx.node.int_attribute("noop_with_empty_axes", 0) != 0) {
      return single(x);
    }
  } else {
    axes = ctx.node.ints_attribute("axes", {});
  }
  std::vector<bool> reduced(x.dims.size(), axes.empty());
  for (int64_t axis : axes) {
    STITCH_ASSIGN_OR_RETURN(int64_t a, axis_of(ctx, axis, rank));
    reduced[static_cast<size_t>(a)] = true;
  }
  const bool keepdims = ctx.node.int_attribute("keepdims", 1) != 0;
  std::vector<int64_t> kept_dims;
  std::vector<int64_t> out_dims;
  int64_t reduced_count = 1;
  for (size_t d = 0; d < x.dims.size(); ++d) {
    kept_dims.push_back(reduced[d] ? 1 : x.dims[d]);
    if (reduced[d]) reduced_count *= x.dims[d];
    if (!reduced[d] || keepdims) out_dims.push_back(kept_dims.back());
  }
  std::vector<int64_t> out_strides = row_major_strides(kept_dims);
  for (size_t d = 0; d < x.dims.size(); ++d) {
    if (reduced[d]) out_strides[d] = 0;
  }
  Tensor out = make_tensor(x.dtype, out_dims);
  const int64_t out_count = out.num_elements();
  bool ok = visit_numeric(x.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = ComputeOf<S>;
    const char* in = x.bytes.data();
    // The identities are the results over an empty set (ONNX opset 18): -inf or the
    // dtype's minimum for max, +inf or its maximum for min (of the stored type S, not
    // the wider compute type).
    C init{};
    if (kind == Reduce::kProd) init = C{1};
    if constexpr (std::is_same_v<C, double>) {
      if (kind == Reduce::kMax) init = -std::numeric_limits<double>::infinity();
      if (kind == Reduce::kMin) init = std::numeric_limits<double>::infinity();
    } else {
      if (kind == Reduce::kMax) init = static_cast<C>(std::numeric_limits<S>::lowest());
      if (kind == Reduce::kMin) init = static_cast<C>(std::numeric_limits<S>::max());
    }
    std::vector<C> acc(static_cast<size_t>(out_count), init);
    std::vector<double> shift;
    if (kind == Reduce::kLogSumExp) {
      shift.assign(static_cast<size_t>(out_count), -std::numeric_limits<double>::infinity());
      for_each_index<1>(x.dims, {&out_strides}, {0},
                        [&](int64_t i, const std::array<int64_t, 1>& o) {
                          double& m = shift[static_cast<size_t>(o[0])];
                          m = std::max(m, static_cast<double>(load<S>(in, i)));
                        });
      for (double& m : shift) {
        if (std::isinf(m)) m = 0.0;
      }
    }
    for_each_index<1>(x.dims, {&out_strides}, {0}, [&](int64_t i, const std::array<int64_t, 1>& o) {
      C v = load<S>(in, i);
      C& a = acc[static_cast<size_t>(o[0])];
      switch (kind) {
        case Reduce::kSum:
        case Reduce::kMean:
        case Reduce::kLogSum:
          a = static_cast<C>(a + v);
          break;
        case Reduce::kProd:
          a = static_cast<C>(a * v);
          break;
        case Reduce::kMax:
          a = (v > a || std::isnan(static_cast<double>(v))) ? v : a;
          break;
        case Reduce::kMin:
          a = (v < a || std::isnan(static_cast<double>(v))) ? v : a;
          break;
        case Reduce::kL1:
          a = static_cast<C>(a + (v < C{} ? static_cast<C>(C{} - v) : v));
          break;
        case Reduce::kL2:
        case Reduce::kSumSquare:
          a = static_cast<C>(a + v * v);
          break;
        case Reduce::kLogSumExp:
          a = static_cast<C>(a + static_cast<C>(std::exp(static_cast<double>(v) -
                                                         shift[static_cast<size_t>(o[0])])));
          break;
      }
    });
    for (int64_t i = 0; i < out_count; ++i) {
      C a = acc[static_cast<size_t>(i)];
      double wide = static_cast<double>(a);
      switch (kind) {
        case Reduce::kMean:
          if constexpr (std::is_same_v<C, double>) {
            a = a / static_cast<double>(reduced_count);
          } else if (reduced_count > 0) {
            a = static_cast<C>(a / static_cast<C>(reduced_count));
          }
          break;
        case Reduce::kL2:
          a = static_cast<C>(std::sqrt(wide));
          break;
        case Reduce::kLogSum:
          a = static_cast<C>(std::log(wide));
          break;
        case Reduce::kLogSumExp:
          a = static_cast<C>(std::log(wide) + shift[static_cast<size_t>(i)]);
          break;
        default:
          break;
      }
      store<S>(out.bytes.data(), i, a);
    }
  });
  if (!ok) return ctx.unsupported_dtype(0);
  return single(std::move(out));
}

KernelResult arg_kernel(const KernelContext& ctx, bool max) {
  const Tensor& x = *ctx.input(0);
  const auto rank = static_cast<int64_t>(x.dims.size());
  STITCH_ASSIGN_OR_RETURN(int64_t axis, axis_of(ctx, ctx.node.int_attribute("axis", 0), rank));
  const bool keepdims = ctx.node.int_attribute("keepdims", 1) != 0;
  const bool last = ctx.node.int_attribute("select_last_index", 0) != 0;
  auto a = static_cast<size_t>(axis);
  const int64_t dim = x.dims[a];
  const int64_t outer = dims_product(x.dims, 0, a);
  const int64_t inner = dims_product(x.dims, a + 1, x.dims.size());
  if (dim == 0 && outer * inner > 0) {
    return ctx.error("reduces an empty axis; ArgMax/ArgMin need at least one element");
  }
  std::vector<int64_t> dims = x.dims;
  if (keepdims) {
    dims[a] = 1;
  } else {
    dims.erase(dims.begin() + axis);
  }
  Tensor out = make_tensor(DType::kInt64, dims);
  bool ok = visit_numeric(x.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = ComputeOf<S>;
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t base = o * dim * inner + i;
        C best = load<S>(x.bytes.data(), base);
        int64_t best_index = 0;
        for (int64_t k = 1; k < dim; ++k) {
          C v = load<S>(x.bytes.data(), base + k * inner);
          bool better = max ? (v > best || (last && v == best)) : (v < best || (last && v == best));
          if (better) {
            best = v;
            best_index = k;
          }
        }
        store<int64_t>(out.bytes.data(), o * inner + i, best_index);
      }
    }
  });
  if (!ok) return ctx.unsupported_dtype(0);
  return single(std::move(out));
}

// Softmax and LogSoftmax. Before opset 13 the input is coerced to 2-D at `axis`
// (default 1) and each row of prod(dims[axis:]) elements is normalized; from 13 the
// normalization runs along the single axis (default -1).
KernelResult softmax_kernel(const KernelContext& ctx, bool log) {
  const Tensor& x = *ctx.input(0);
  const auto rank = static_cast<int64_t>(x.dims.size());
  const bool per_axis = ctx.opset >= 13;
  int64_t axis = ctx.node.int_attribute("axis", per_axis ? -1 : 1);
  if (rank == 0) return ctx.error("input is a scalar; Softmax needs rank 1 or more");
  STITCH_ASSIGN_OR_RETURN(axis, axis_of(ctx, axis, rank));
  auto a = static_cast<size_t>(axis);
  const int64_t outer = dims_product(x.dims, 0, a);
  const int64_t length = per_axis ? x.dims[a] : dims_product(x.dims, a, x.dims.size());
  const int64_t inner = per_axis ? dims_product(x.dims, a + 1, x.dims.size()) : 1;
  Tensor out = make_tensor(x.dtype, x.dims);
  bool ok = visit_float(x.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    const char* in = x.bytes.data();
    char* o = out.bytes.data();
    for (int64_t outer_index = 0; outer_index < outer; ++outer_index) {
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t base = outer_index * length * inner + i;
        double peak = -std::numeric_limits<double>::infinity();
        for (int64_t k = 0; k < length; ++k) peak = std::max(peak, load<S>(in, base + k * inner));
        double sum = 0.0;
        for (int64_t k = 0; k < length; ++k) sum += std::exp(load<S>(in, base + k * inner) - peak);
        const double log_sum = std::log(sum);
        for (int64_t k = 0; k < length; ++k) {
          double shifted = load<S>(in, base + k * inner) - peak;
          store<S>(o, base + k * inner, log ? shifted - log_sum : std::exp(shifted) / sum);
        }
      }
    }
  });
  if (!ok) return ctx.unsupported_dtype(0);
  return single(std::move(out));
}

// Mean and 1 / sqrt(variance + epsilon) of elements [base, base + count) of `x`
// (mean and variance 0 when count is 0), accumulated in double.
struct Moments {
  double mean;
  double inv_std;
};
template <typename S>
Moments moments_of(const Tensor& x, int64_t base, int64_t count, double epsilon) {
  double sum = 0.0;
  for (int64_t i = 0; i < count; ++i) sum += load<S>(x.bytes.data(), base + i);
  const double mean = count > 0 ? sum / static_cast<double>(count) : 0.0;
  double squares = 0.0;
  for (int64_t i = 0; i < count; ++i) {
    double centered = load<S>(x.bytes.data(), base + i) - mean;
    squares += centered * centered;
  }
  const double variance = count > 0 ? squares / static_cast<double>(count) : 0.0;
  return {mean, 1.0 / std::sqrt(variance + epsilon)};
}

KernelResult layer_norm_kernel(const KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  for (size_t i = 0; i < 3; ++i) STITCH_RETURN_IF_ERROR(check_float(ctx, i));
  const auto rank = static_cast<int64_t>(x.dims.size());
  STITCH_ASSIGN_OR_RETURN(int64_t axis, axis_of(ctx, ctx.node.int_attribute("axis", -1), rank));
  const double epsilon = ctx.node.float_attribute("epsilon", 1e-5f);
  auto a = static_cast<size_t>(axis);
  std::vector<int64_t> normalized_dims(x.dims.begin() + axis, x.dims.end());
  const int64_t outer = dims_product(x.dims, 0, a);
  const int64_t inner = element_count(normalized_dims);
  // Scale and bias broadcast to the normalized shape.
  std::vector<std::vector<int64_t>> index_of(2);
  std::vector<std::vector<double>> params(2);
  for (size_t p = 0; p < 2; ++p) {
    const Tensor* param = ctx.input(p + 1);
    if (param == nullptr) continue;
    std::vector<int64_t> joined;
    if (!broadcast_shapes(normalized_dims, param->dims, &joined) || joined != normalized_dims) {
      return ctx.error("input " + std::to_string(p + 1) + " " + dims_string(param->dims) +
                       " does not broadcast to the normalized shape " +
                       dims_string(normalized_dims) + "; fix its shape");
    }
    params[p] = doubles_of(*param);
    std::vector<int64_t> strides = broadcast_strides(param->dims, normalized_dims);
    index_of[p].resize(static_cast<size_t>(inner));
    for_each_index<1>(normalized_dims, {&strides}, {0},
                      [&](int64_t i, const std::array<int64_t, 1>& o) {
                        index_of[p][static_cast<size_t>(i)] = o[0];
                      });
  }
  std::vector<double> means(static_cast<size_t>(outer));
  std::vector<double> inv_std(static_cast<size_t>(outer));
  Tensor out = make_tensor(x.dtype, x.dims);
  visit_float(x.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (int64_t o = 0; o < outer; ++o) {
      const int64_t base = o * inner;
      const Moments moments = moments_of<S>(x, base, inner, epsilon);
      means[static_cast<size_t>(o)] = moments.mean;
      inv_std[static_cast<size_t>(o)] = moments.inv_std;
      for (int64_t i = 0; i < inner; ++i) {
        double y = (load<S>(x.bytes.data(), base + i) - moments.mean) * moments.inv_std;
        if (!params[0].empty())
          y *= params[0][static_cast<size_t>(index_of[0][static_cast<size_t>(i)])];
        if (!params[1].empty())
          y += params[1][static_cast<size_t>(index_of[1][static_cast<size_t>(i)])];
        store<S>(out.bytes.data(), base + i, y);
      }
    }
  });
  std::vector<Tensor> outputs;
  outputs.push_back(std::move(out));
  auto stash = static_cast<DType>(ctx.node.int_attribute("stash_type", 1));
  if (!dtype_is_float(stash)) stash = DType::kFloat32;
  std::vector<int64_t> stat_dims = x.dims;
  std::fill(stat_dims.begin() + axis, stat_dims.end(), 1);
  if (ctx.wants_output(1)) outputs.push_back(Tensor::from_doubles(stash, stat_dims, means));
  if (ctx.wants_output(2)) {
    outputs.resize(2);
    outputs.push_back(Tensor::from_doubles(stash, stat_dims, inv_std));
  }
  return outputs;
}

// y = (x - mean) * inv_std(channel) * scale + bias over channels (axis 1), where
// `normalize` gives each (n, c) its mean and inverse deviation.
KernelResult batch_norm_kernel(const KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  for (size_t i = 0; i < 5; ++i) STITCH_RETURN_IF_ERROR(check_float(ctx, i));
  if (ctx.opset >= 14 && ctx.node.int_attribute("training_mode", 0) != 0) {
    return ctx.error(
        "training-mode BatchNormalization has no reference evaluation; set "
        "training_mode=0");
  }
  if (ctx.opset < 9 && ctx.node.int_attribute("spatial", 1) == 0) {
    return ctx.error("spatial=0 BatchNormalization has no reference evaluation; use spatial=1");
  }
  if (x.dims.size() < 2) return ctx.error("input has rank < 2; BatchNormalization needs [N,C,...]");
  const double epsilon = ctx.node.float_attribute("epsilon", 1e-5f);
  const int64_t channels = x.dims[1];
  std::vector<std::vector<double>> params;
  for (size_t i = 1; i < 5; ++i) {
    params.push_back(doubles_of(*ctx.input(i)));
    if (static_cast<int64_t>(params.back().size()) != channels) {
      return ctx.error("input " + std::to_string(i) + " has " +
                       std::to_string(params.back().size()) + " elements for " +
                       std::to_string(channels) + " channels; give one per channel");
    }
  }
  const int64_t batches = x.dims[0];
  const int64_t inner = dims_product(x.dims, 2, x.dims.size());
  Tensor out = make_tensor(x.dtype, x.dims);
  visit_float(x.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (int64_t n = 0; n < batches; ++n) {
      for (int64_t c = 0; c < channels; ++c) {
        auto ci = static_cast<size_t>(c);
        const double inv = 1.0 / std::sqrt(params[3][ci] + epsilon);
        const int64_t base = (n * channels + c) * inner;
        for (int64_t i = 0; i < inner; ++i) {
          double v = load<S>(x.bytes.data(), base + i);
          store<S>(out.bytes.data(), base + i,
                   (v - params[2][ci]) * inv * params[0][ci] + params[1][ci]);
        }
      }
    }
  });
  std::vector<Tensor> outputs;
  outputs.push_back(std::move(out));
  // Inference mode: the optional statistics outputs carry the running statistics.
  for (size_t i = 1; i < ctx.node.outputs.size(); ++i)
    outputs.push_back(*ctx.input(i % 2 == 1 ? 3 : 4));
  return outputs;
}

// Instance and group normalization: per (n, group) statistics over the group's
// channels and spatial positions, then a per-channel (or per-group) affine map.
KernelResult group_norm(const KernelContext& ctx, int64_t groups, bool per_group_affine) {
  const Tensor& x = *ctx.input(0);
  for (size_t i = 0; i < 3; ++i) STITCH_RETURN_IF_ERROR(check_float(ctx, i));
  if (x.dims.size() < 2) return ctx.error("input has rank < 2; normalization needs [N,C,...]");
  const double epsilon = ctx.node.float_attribute("epsilon", 1e-5f);
  const int64_t channels = x.dims[1];
  if (groups <= 0 || channels % groups != 0) {
    return ctx.error("num_groups " + std::to_string(groups) + " does not divide " +
                     std::to_string(channels) + " channels; fix num_groups");
  }
  std::vector<double> scale = doubles_of(*ctx.input(1));
  std::vector<double> bias = doubles_of(*ctx.input(2));
  const int64_t affine_count = per_group_affine ? groups : channels;
  if (static_cast<int64_t>(scale.size()) != affine_count ||
      static_cast<int64_t>(bias.size()) != affine_count) {
    return ctx.error("scale and bias have " + std::to_string(scale.size()) + " and " +
                     std::to_string(bias.size()) + " elements; give " +
                     std::to_string(affine_count));
  }
  const int64_t per_group = channels / groups;
  const int64_t spatial = dims_product(x.dims, 2, x.dims.size());
  const int64_t span = per_group * spatial;
  Tensor out = make_tensor(x.dtype, x.dims);
  visit_float(x.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (int64_t n = 0; n < x.dims[0]; ++n) {
      for (int64_t g = 0; g < groups; ++g) {
        const int64_t base = (n * groups + g) * span;
        const Moments moments = moments_of<S>(x, base, span, epsilon);
        for (int64_t i = 0; i < span; ++i) {
          auto p = static_cast<size_t>(per_group_affine ? g : g * per_group + i / spatial);
          double y =
              (load<S>(x.bytes.data(), base + i) - moments.mean) * moments.inv_std * scale[p] +
              bias[p];
          store<S>(out.bytes.data(), base + i, y);
        }
      }
    }
  });
  return single(std::move(out));
}

KernelResult topk_kernel(const KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  const auto rank = static_cast<int64_t>(x.dims.size());
  STITCH_ASSIGN_OR_RETURN(int64_t axis, axis_of(ctx, ctx.node.int_attribute("axis", -1), rank));
  int64_t k = 0;
  if (ctx.opset >= 10) {
    if (ctx.input(1) == nullptr) return ctx.missing_input(1);
    if (ctx.input(1)->dtype != DType::kInt64) return ctx.unsupported_dtype(1);
    STITCH_RETURN_IF_ERROR(ctx.check_scalar_input(1));
    k = ctx.input(1)->int_at(0);
  } else {
    k = ctx.node.int_attribute("k", -1);
  }
  const bool largest = ctx.opset < 11 || ctx.node.int_attribute("largest", 1) != 0;
  auto a = static_cast<size_t>(axis);
  const int64_t dim = x.dims[a];
  if (k < 0 || k > dim) {
    return ctx.error("k = " + std::to_string(k) + " is outside [0, " + std::to_string(dim) +
                     "] for axis " + std::to_string(axis) + "; fix k");
  }
  const int64_t outer = dims_product(x.dims, 0, a);
  const int64_t inner = dims_product(x.dims, a + 1, x.dims.size());
  std::vector<int64_t> dims = x.dims;
  dims[a] = k;
  Tensor values = make_tensor(x.dtype, dims);
  Tensor indices = make_tensor(DType::kInt64, dims);
  bool ok = visit_numeric(x.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = ComputeOf<S>;
    std::vector<std::pair<C, int64_t>> lane(static_cast<size_t>(dim));
    // Sorted output; ties keep the smaller index first, as ONNX Runtime does.
    auto before = [largest](const std::pair<C, int64_t>& p, const std::pair<C, int64_t>& q) {
      if (p.first != q.first) return largest ? p.first > q.first : p.first < q.first;
      return p.second < q.second;
    };
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        for (int64_t e = 0; e < dim; ++e) {
          lane[static_cast<size_t>(e)] = {load<S>(x.bytes.data(), (o * dim + e) * inner + i), e};
        }
        std::partial_sort(lane.begin(), lane.begin() + k, lane.end(), before);
        for (int64_t e = 0; e < k; ++e) {
          const int64_t offset = (o * k + e) * inner + i;
          store<S>(values.bytes.data(), offset, lane[static_cast<size_t>(e)].first);
          store<int64_t>(indices.bytes.data(), offset, lane[static_cast<size_t>(e)].second);
        }
      }
    }
  });
  if (!ok) return ctx.unsupported_dtype(0);
  std::vector<Tensor> outputs;
  outputs.push_back(std::move(values));
  outputs.push_back(std::move(indices));
  return outputs;
}

}  // namespace

void add_reduction_kernels(KernelTable& table) {
  table["ReduceSum"] = [](const KernelContext& c) { return reduce_kernel(c, Reduce::kSum); };
  table["ReduceMean"] = [](const KernelContext& c) { return reduce_kernel(c, Reduce::kMean); };
  table["ReduceMax"] = [](const KernelContext& c) { return reduce_kernel(c, Reduce::kMax); };
  table["ReduceMin"] = [](const KernelContext& c) { return reduce_kernel(c, Reduce::kMin); };
  table["ReduceProd"] = [](const KernelContext& c) { return reduce_kernel(c, Reduce::kProd); };
  table["ReduceL1"] = [](const KernelContext& c) { return reduce_kernel(c, Reduce::kL1); };
  table["ReduceL2"] = [](const KernelContext& c) { return reduce_kernel(c, Reduce::kL2); };
  table["ReduceSumSquare"] = [](const KernelContext& c) {
    return reduce_kernel(c, Reduce::kSumSquare);
  };
  table["ReduceLogSum"] = [](const KernelContext& c) { return reduce_kernel(c, Reduce::kLogSum); };
  table["ReduceLogSumExp"] = [](const KernelContext& c) {
    return reduce_kernel(c, Reduce::kLogSumExp);
  };
  table["ArgMax"] = [](const KernelContext& c) { return arg_kernel(c, true); };
  table["ArgMin"] = [](const KernelContext& c) { return arg_kernel(c, false); };
  table["Softmax"] = [](const KernelContext& c) { return softmax_kernel(c, false); };
  table["LogSoftmax"] = [](const KernelContext& c) { return softmax_kernel(c, true); };
  table["LayerNormalization"] = layer_norm_kernel;
  table["BatchNormalization"] = batch_norm_kernel;
  table["InstanceNormalization"] = [](const KernelContext& c) {
    if (c.input(0)->dims.size() < 2)
      return KernelResult(c.error("input has rank < 2; InstanceNormalization needs [N,C,...]"));
    return group_norm(c, c.input(0)->dims[1], false);
  };
  table["GroupNormalization"] = [](const KernelContext& c) {
    return group_norm(c, c.node.int_attribute("num_groups", 0), c.opset < 21);
  };
  table["TopK"] = topk_kernel;
}

}  // namespace stitch::ir::reference
