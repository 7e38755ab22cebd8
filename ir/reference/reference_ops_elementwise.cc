// Reference kernels of the elementwise ops: unary math and activations, binary
// arithmetic/comparison/logic with numpy broadcasting, variadic Sum/Mean/Max/Min,
// Where, Clip, Cast, CastLike, Identity, Dropout (inference), PRelu.
#include <cmath>
#include <limits>

#include "ir/core/integer_arithmetic.h"
#include "ir/reference/reference_ops.h"

namespace stitch::ir::reference {

namespace {

constexpr double kPi = 3.14159265358979323846;

enum class Group { kFloat, kNumeric, kAll };

template <Group kGroup, typename F>
bool visit_group(DType dtype, F&& f) {
  if constexpr (kGroup == Group::kFloat) return visit_float(dtype, f);
  if constexpr (kGroup == Group::kNumeric) return visit_numeric(dtype, f);
  if constexpr (kGroup == Group::kAll) return visit_all(dtype, f);
}

// y = f(x), same dtype. `f` takes and returns the compute type (double for floats).
template <Group kGroup, typename F>
KernelResult unary(const KernelContext& ctx, F f) {
  const Tensor& x = *ctx.input(0);
  Tensor out = make_tensor(x.dtype, x.dims);
  const int64_t count = x.num_elements();
  bool ok = visit_group<kGroup>(x.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = ComputeOf<S>;
    const char* in = x.bytes.data();
    char* o = out.bytes.data();
    for (int64_t i = 0; i < count; ++i) store<S>(o, i, static_cast<C>(f(load<S>(in, i))));
  });
  if (!ok) return ctx.unsupported_dtype(0);
  return single(std::move(out));
}

// Float-only unary op.
template <typename F>
KernelResult unary_float(const KernelContext& ctx, F f) {
  return unary<Group::kFloat>(ctx, f);
}

// y = f(x) as bool (IsNaN, IsInf).
template <typename F>
KernelResult unary_predicate(const KernelContext& ctx, F f) {
  const Tensor& x = *ctx.input(0);
  Tensor out = make_tensor(DType::kBool, x.dims);
  const int64_t count = x.num_elements();
  bool ok = visit_float(x.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (int64_t i = 0; i < count; ++i) {
      store<Bool>(out.bytes.data(), i, f(load<S>(x.bytes.data(), i)));
    }
  });
  if (!ok) return ctx.unsupported_dtype(0);
  return single(std::move(out));
}

Status check_same_dtype(const KernelContext& ctx, size_t a, size_t b) {
  if (ctx.input(a)->dtype != ctx.input(b)->dtype) {
    return ctx.error("input " + std::to_string(a) + " has dtype " +
                     std::string(dtype_onnx_name(ctx.input(a)->dtype)) + " but input " +
                     std::to_string(b) + " has dtype " +
                     std::string(dtype_onnx_name(ctx.input(b)->dtype)) + "; cast them to one type");
  }
  return Status::ok();
}

Result<std::vector<int64_t>> broadcast_inputs(const KernelContext& ctx,
                                              const std::vector<size_t>& indices) {
  std::vector<int64_t> dims = ctx.input(indices[0])->dims;
  for (size_t k = 1; k < indices.size(); ++k) {
    std::vector<int64_t> next;
    if (!broadcast_shapes(dims, ctx.input(indices[k])->dims, &next)) {
      return ctx.error("input shapes " + dims_string(dims) + " and " +
                       dims_string(ctx.input(indices[k])->dims) +
                       " do not broadcast; fix the shapes");
    }
    dims = std::move(next);
  }
  return dims;
}

// z = f(x, y) with numpy broadcasting; both inputs of one dtype. The output is bool
// when kToBool, else the input dtype.
template <bool kToBool, Group kGroup, typename F>
KernelResult binary(const KernelContext& ctx, F f) {
  STITCH_RETURN_IF_ERROR(check_same_dtype(ctx, 0, 1));
  const Tensor& a = *ctx.input(0);
  const Tensor& b = *ctx.input(1);
  STITCH_ASSIGN_OR_RETURN(std::vector<int64_t> dims, broadcast_inputs(ctx, {0, 1}));
  Tensor out = make_tensor(kToBool ? DType::kBool : a.dtype, dims);
  std::vector<int64_t> stride_a = broadcast_strides(a.dims, dims);
  std::vector<int64_t> stride_b = broadcast_strides(b.dims, dims);
  bool ok = visit_group<kGroup>(a.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using O = std::conditional_t<kToBool, Bool, S>;
    using C = ComputeOf<O>;
    const char* pa = a.bytes.data();
    const char* pb = b.bytes.data();
    char* po = out.bytes.data();
    for_each_index<2>(
        dims, {&stride_a, &stride_b}, {0, 0},
        [&](int64_t i, const std::array<int64_t, 2>& offsets) {
          store<O>(po, i, static_cast<C>(f(load<S>(pa, offsets[0]), load<S>(pb, offsets[1]))));
        });
  });
  if (!ok) return ctx.unsupported_dtype(0);
  return single(std::move(out));
}

// int64 arithmetic wraps (through uint64) instead of overflowing, which is undefined.
template <typename C, typename F>
C wrapping(C x, C y, F op) {
  if constexpr (std::is_same_v<C, int64_t>) {
    return static_cast<int64_t>(op(static_cast<uint64_t>(x), static_cast<uint64_t>(y)));
  } else {
    return static_cast<C>(op(x, y));
  }
}

template <typename C>
C negate_wrapping(C x) {
  if constexpr (std::is_same_v<C, int64_t>) {
    return static_cast<int64_t>(uint64_t{0} - static_cast<uint64_t>(x));
  } else {
    return static_cast<C>(-x);
  }
}

// Integer Div and Mod follow ir/core/integer_arithmetic.h: x / 0 and x % 0 are 0, MIN / -1
// wraps to MIN (numpy's rules), so neither constant folding nor a reference check traps.
KernelResult div_kernel(const KernelContext& ctx) {
  return binary<false, Group::kNumeric>(ctx, [](auto x, auto y) {
    using C = decltype(x);
    if constexpr (std::is_integral_v<C>) {
      return integer_divide(x, y);
    } else {
      return static_cast<C>(x / y);
    }
  });
}

KernelResult mod_kernel(const KernelContext& ctx) {
  bool fmod = ctx.node.int_attribute("fmod", 0) != 0;
  if (!fmod && dtype_is_float(ctx.input(0)->dtype)) {
    return ctx.error("fmod=0 is defined for integer inputs only; set fmod=1 for " +
                     std::string(dtype_onnx_name(ctx.input(0)->dtype)) + " inputs");
  }
  return binary<false, Group::kNumeric>(ctx, [fmod](auto x, auto y) {
    using C = decltype(x);
    if constexpr (std::is_same_v<C, double>) {
      return std::fmod(x, y);
    } else {
      return fmod ? integer_remainder(x, y) : integer_floored_remainder(x, y);
    }
  });
}

KernelResult pow_kernel(const KernelContext& ctx) {
  const Tensor& a = *ctx.input(0);
  const Tensor& b = *ctx.input(1);
  STITCH_ASSIGN_OR_RETURN(std::vector<int64_t> dims, broadcast_inputs(ctx, {0, 1}));
  if (!dtype_is_float(b.dtype) && !dtype_is_integer(b.dtype)) return ctx.unsupported_dtype(1);
  std::vector<double> exponent(static_cast<size_t>(b.num_elements()));
  for (size_t i = 0; i < exponent.size(); ++i) exponent[i] = b.float_at(static_cast<int64_t>(i));
  Tensor out = make_tensor(a.dtype, dims);
  std::vector<int64_t> stride_a = broadcast_strides(a.dims, dims);
  std::vector<int64_t> stride_b = broadcast_strides(b.dims, dims);
  bool ok = visit_numeric(a.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = ComputeOf<S>;
    for_each_index<2>(dims, {&stride_a, &stride_b}, {0, 0},
                      [&](int64_t i, const std::array<int64_t, 2>& offsets) {
                        double base = static_cast<double>(load<S>(a.bytes.data(), offsets[0]));
                        double value = std::pow(base, exponent[static_cast<size_t>(offsets[1])]);
                        if constexpr (std::is_same_v<C, double>) {
                          store<S>(out.bytes.data(), i, value);
                        } else {
                          store<S>(out.bytes.data(), i,
                                   static_cast<C>(static_cast<int64_t>(value)));
                        }
                      });
  });
  if (!ok) return ctx.unsupported_dtype(0);
  return single(std::move(out));
}

// Sum, Mean, Max, Min over any number of broadcast inputs, accumulated in the
// compute type (double for floats) and stored once.
enum class Variadic { kSum, kMean, kMax, kMin };

KernelResult variadic(const KernelContext& ctx, Variadic kind) {
  std::vector<size_t> indices;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    if (ctx.input(i) == nullptr) return ctx.missing_input(i);
    STITCH_RETURN_IF_ERROR(check_same_dtype(ctx, i, 0));
    indices.push_back(i);
  }
  if (indices.empty()) return ctx.missing_input(0);
  STITCH_ASSIGN_OR_RETURN(std::vector<int64_t> dims, broadcast_inputs(ctx, indices));
  const DType dtype = ctx.input(0)->dtype;
  Tensor out = make_tensor(dtype, dims);
  const int64_t count = out.num_elements();
  bool ok = visit_numeric(dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = ComputeOf<S>;
    std::vector<C> acc(static_cast<size_t>(count));
    for (size_t k = 0; k < indices.size(); ++k) {
      const Tensor& in = *ctx.input(indices[k]);
      std::vector<int64_t> strides = broadcast_strides(in.dims, dims);
      for_each_index<1>(dims, {&strides}, {0}, [&](int64_t i, const std::array<int64_t, 1>& off) {
        C v = load<S>(in.bytes.data(), off[0]);
        C& a = acc[static_cast<size_t>(i)];
        if (k == 0) {
          a = v;
        } else if (kind == Variadic::kMax) {
          a = (std::isnan(static_cast<double>(v)) || v > a) ? v : a;
        } else if (kind == Variadic::kMin) {
          a = (std::isnan(static_cast<double>(v)) || v < a) ? v : a;
        } else {
          a = static_cast<C>(a + v);
        }
      });
    }
    for (int64_t i = 0; i < count; ++i) {
      C v = acc[static_cast<size_t>(i)];
      if (kind == Variadic::kMean) v = static_cast<C>(v / static_cast<C>(indices.size()));
      store<S>(out.bytes.data(), i, v);
    }
  });
  if (!ok) return ctx.unsupported_dtype(0);
  return single(std::move(out));
}

KernelResult where_kernel(const KernelContext& ctx) {
  const Tensor& condition = *ctx.input(0);
  const Tensor& x = *ctx.input(1);
  const Tensor& y = *ctx.input(2);
  if (condition.dtype != DType::kBool) return ctx.unsupported_dtype(0);
  STITCH_RETURN_IF_ERROR(check_same_dtype(ctx, 1, 2));
  STITCH_ASSIGN_OR_RETURN(std::vector<int64_t> dims, broadcast_inputs(ctx, {0, 1, 2}));
  Tensor out = make_tensor(x.dtype, dims);
  const auto size = dtype_size(x.dtype);
  std::vector<int64_t> sc = broadcast_strides(condition.dims, dims);
  std::vector<int64_t> sx = broadcast_strides(x.dims, dims);
  std::vector<int64_t> sy = broadcast_strides(y.dims, dims);
  for_each_index<3>(
      dims, {&sc, &sx, &sy}, {0, 0, 0}, [&](int64_t i, const std::array<int64_t, 3>& off) {
        bool pick_x = condition.bytes[static_cast<size_t>(off[0])] != 0;
        const char* from = pick_x ? x.bytes.data() + off[1] * size : y.bytes.data() + off[2] * size;
        std::memcpy(out.bytes.data() + i * size, from, static_cast<size_t>(size));
      });
  return single(std::move(out));
}

KernelResult clip_kernel(const KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  double low = -std::numeric_limits<double>::infinity();
  double high = std::numeric_limits<double>::infinity();
  bool has_low = false;
  bool has_high = false;
  if (ctx.opset < 11) {
    if (ctx.node.find_attribute("min") != nullptr) {
      low = ctx.node.float_attribute("min", 0.0f);
      has_low = true;
    }
    if (ctx.node.find_attribute("max") != nullptr) {
      high = ctx.node.float_attribute("max", 0.0f);
      has_high = true;
    }
  } else {
    for (size_t i = 1; i < 3; ++i) {
      const Tensor* bound = ctx.input(i);
      if (bound == nullptr) continue;
      if (bound->dtype != x.dtype) return ctx.unsupported_dtype(i);
      if (bound->num_elements() != 1) {
        return ctx.error("input " + std::to_string(i) + " has shape " + dims_string(bound->dims) +
                         " but Clip's bounds are scalars; give a single value");
      }
      (i == 1 ? low : high) = bound->float_at(0);
      (i == 1 ? has_low : has_high) = true;
    }
  }
  const Tensor* low_tensor = ctx.opset >= 11 ? ctx.input(1) : nullptr;
  const Tensor* high_tensor = ctx.opset >= 11 ? ctx.input(2) : nullptr;
  return unary<Group::kNumeric>(ctx, [&](auto v) {
    using C = decltype(v);
    if constexpr (std::is_same_v<C, double>) {
      if (has_low && v < low) v = low;
      if (has_high && v > high) v = high;
    } else {
      // Integer bounds compare exactly (no round trip through double).
      if (low_tensor != nullptr && v < static_cast<C>(low_tensor->int_at(0))) {
        v = static_cast<C>(low_tensor->int_at(0));
      }
      if (high_tensor != nullptr && v > static_cast<C>(high_tensor->int_at(0))) {
        v = static_cast<C>(high_tensor->int_at(0));
      }
    }
    return v;
  });
}

// The value of `v` (compute type C) as destination storage D's compute type, as
// ONNX's Cast: floats to integers truncate toward zero; anything to bool is v != 0.
template <typename D, typename C>
ComputeOf<D> convert_value(C v) {
  using DC = ComputeOf<D>;
  if constexpr (std::is_same_v<DC, bool>) {
    return v != C{};
  } else if constexpr (std::is_same_v<DC, double>) {
    return static_cast<double>(v);
  } else if constexpr (std::is_same_v<C, double>) {
    // NaN and out-of-range values have no integer; take INT64_MIN's bits, as x86 does.
    if (!(v > -9.2233720368547758e18 && v < 9.2233720368547758e18)) {
      if constexpr (std::is_same_v<DC, uint64_t>) {
        if (v >= 0 && v < 1.8446744073709552e19) return static_cast<uint64_t>(v);
      }
      return static_cast<DC>(std::numeric_limits<int64_t>::min());
    }
    return static_cast<DC>(static_cast<int64_t>(v));
  } else {
    return static_cast<DC>(v);
  }
}

KernelResult cast_to(const KernelContext& ctx, DType to) {
  const Tensor& x = *ctx.input(0);
  if (!dtype_is_valid_onnx(static_cast<int32_t>(to)) || dtype_size(to) == 0) {
    return ctx.error("casts to dtype " + std::to_string(static_cast<int32_t>(to)) +
                     ", which has no reference evaluation; cast to a numeric or bool type");
  }
  Tensor out = make_tensor(to, x.dims);
  const int64_t count = x.num_elements();
  bool inner_ok = true;
  bool ok = visit_all(x.dtype, [&](auto source_tag) {
    using S = typename decltype(source_tag)::type;
    inner_ok = visit_all(to, [&](auto dest_tag) {
      using D = typename decltype(dest_tag)::type;
      for (int64_t i = 0; i < count; ++i) {
        store<D>(out.bytes.data(), i, convert_value<D>(load<S>(x.bytes.data(), i)));
      }
    });
  });
  if (!ok) return ctx.unsupported_dtype(0);
  if (!inner_ok) {
    return ctx.error("casts to " + std::string(dtype_onnx_name(to)) +
                     ", which has no reference evaluation; cast to a numeric or bool type");
  }
  return single(std::move(out));
}

KernelResult dropout_kernel(const KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  for (size_t i : {size_t{1}, size_t{2}}) {
    if (ctx.input(i) != nullptr) STITCH_RETURN_IF_ERROR(ctx.check_scalar_input(i));
  }
  const Tensor* training = ctx.input(2);
  bool training_mode =
      training != nullptr && training->num_elements() > 0 && training->int_at(0) != 0;
  if (ctx.opset < 7 || ctx.node.int_attribute("is_test", 1) == 0) training_mode = true;
  double ratio =
      ctx.input(1) != nullptr ? ctx.input(1)->float_at(0) : ctx.node.float_attribute("ratio", 0.5f);
  if (training_mode && ratio != 0.0) {
    return ctx.error(
        "training-mode Dropout is random and has no reference evaluation; set "
        "training_mode to false");
  }
  std::vector<Tensor> outputs;
  outputs.push_back(x);
  if (ctx.wants_output(1)) {
    Tensor mask = make_tensor(ctx.opset >= 10 ? DType::kBool : x.dtype, x.dims);
    const int64_t count = mask.num_elements();
    visit_all(mask.dtype, [&](auto tag) {
      using S = typename decltype(tag)::type;
      for (int64_t i = 0; i < count; ++i) store<S>(mask.bytes.data(), i, ComputeOf<S>{1});
    });
    outputs.push_back(std::move(mask));
  }
  return outputs;
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

double softplus(double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }

KernelResult gelu_kernel(const KernelContext& ctx) {
  std::string approximate = ctx.node.string_attribute("approximate", "none");
  if (approximate == "tanh") {
    return unary_float(ctx, [](double x) {
      double inner = std::sqrt(2.0 / kPi) * (x + 0.044715 * x * x * x);
      return 0.5 * x * (1.0 + std::tanh(inner));
    });
  }
  if (approximate != "none") {
    return ctx.error("has approximate=\"" + approximate + "\"; Gelu takes \"none\" or \"tanh\"");
  }
  return unary_float(ctx, [](double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); });
}

}  // namespace

void add_elementwise_kernels(KernelTable& table) {
  table["Abs"] = [](const KernelContext& c) {
    return unary<Group::kNumeric>(
        c, [](auto x) { return x < decltype(x){} ? negate_wrapping(x) : x; });
  };
  table["Neg"] = [](const KernelContext& c) {
    return unary<Group::kNumeric>(c, [](auto x) { return negate_wrapping(x); });
  };
  // Sign, Relu, Celu and HardSigmoid keep a NaN, as numpy and ONNX Runtime do
  // (docs/semantics.md): the comparisons are written so NaN falls through to x.
  table["Sign"] = [](const KernelContext& c) {
    return unary<Group::kNumeric>(c, [](auto x) {
      using C = decltype(x);
      return x > C{} ? C{1} : (x < C{} ? static_cast<C>(-1) : x);
    });
  };
  table["Relu"] = [](const KernelContext& c) {
    return unary<Group::kNumeric>(c, [](auto x) { return x < decltype(x){} ? decltype(x){} : x; });
  };
  table["Erf"] = [](const KernelContext& c) {
    return unary<Group::kNumeric>(c, [](auto x) { return std::erf(static_cast<double>(x)); });
  };
  table["Not"] = [](const KernelContext& c) {
    if (c.input(0)->dtype != DType::kBool) return KernelResult(c.unsupported_dtype(0));
    return unary<Group::kAll>(c, [](auto x) { return !x; });
  };
  table["Exp"] = [](const KernelContext& c) {
    return unary_float(c, [](double x) { return std::exp(x); });
  };
  table["Log"] = [](const KernelContext& c) {
    return unary_float(c, [](double x) { return std::log(x); });
  };
  table["Sqrt"] = [](const KernelContext& c) {
    return unary_float(c, [](double x) { return std::sqrt(x); });
  };
  table["Reciprocal"] = [](const KernelContext& c) {
    return unary_float(c, [](double x) { return 1.0 / x; });
  };
  table["Tanh"] = [](const KernelContext& c) {
    return unary_float(c, [](double x) { return std::tanh(x); });
  };
  table["Sigmoid"] = [](const KernelContext& c) { return unary_float(c, sigmoid); };
  table["Sin"] = [](const KernelContext& c) {
    return unary_float(c, [](double x) { return std::sin(x); });
  };
  table["Cos"] = [](const KernelContext& c) {
    return unary_float(c, [](double x) { return std::cos(x); });
  };
  table["Tan"] = [](const KernelContext& c) {
    return unary_float(c, [](double x) { return std::tan(x); });
  };
  table["Asin"] = [](const KernelContext& c) {
    return unary_float(c, [](double x) { return std::asin(x); });
  };
  table["Acos"] = [](const KernelContext& c) {
    return unary_float(c, [](double x) { return std::acos(x); });
  };
  table["Atan"] = [](const KernelContext& c) {
    return unary_float(c, [](double x) { return std::atan(x); });
  };
  table["Sinh"] = [](const KernelContext& c) {
    return unary_float(c, [](double x) { return std::sinh(x); });
  };
  table["Cosh"] = [](const KernelContext& c) {
    return unary_float(c, [](double x) { return std::cosh(x); });
  };
  table["Asinh"] = [](const KernelContext& c) {
    return unary_float(c, [](double x) { return std::asinh(x); });
  };
  table["Acosh"] = [](const KernelContext& c) {
    return unary_float(c, [](double x) { return std::acosh(x); });
  };
  table["Atanh"] = [](const KernelContext& c) {
    return unary_float(c, [](double x) { return std::atanh(x); });
  };
  table["Floor"] = [](const KernelContext& c) {
    return unary_float(c, [](double x) { return std::floor(x); });
  };
  table["Ceil"] = [](const KernelContext& c) {
    return unary_float(c, [](double x) { return std::ceil(x); });
  };
  // nearbyint under the default rounding mode rounds halves to even, as ONNX's Round.
  table["Round"] = [](const KernelContext& c) {
    return unary_float(c, [](double x) { return std::nearbyint(x); });
  };
  table["Softplus"] = [](const KernelContext& c) { return unary_float(c, softplus); };
  table["Softsign"] = [](const KernelContext& c) {
    return unary_float(c, [](double x) { return x / (1.0 + std::fabs(x)); });
  };
  table["Mish"] = [](const KernelContext& c) {
    return unary_float(c, [](double x) { return x * std::tanh(softplus(x)); });
  };
  table["LeakyRelu"] = [](const KernelContext& c) {
    double alpha = c.node.float_attribute("alpha", 0.01f);
    return unary_float(c, [alpha](double x) { return x >= 0 ? x : alpha * x; });
  };
  table["ThresholdedRelu"] = [](const KernelContext& c) {
    double alpha = c.node.float_attribute("alpha", 1.0f);
    return unary_float(c, [alpha](double x) { return x > alpha ? x : 0.0; });
  };
  table["Elu"] = [](const KernelContext& c) {
    double alpha = c.node.float_attribute("alpha", 1.0f);
    return unary_float(c, [alpha](double x) { return x >= 0 ? x : alpha * (std::exp(x) - 1.0); });
  };
  table["Celu"] = [](const KernelContext& c) {
    double alpha = c.node.float_attribute("alpha", 1.0f);
    return unary_float(c, [alpha](double x) {
      if (std::isnan(x)) return x;
      return std::max(0.0, x) + std::min(0.0, alpha * (std::exp(x / alpha) - 1.0));
    });
  };
  table["Selu"] = [](const KernelContext& c) {
    double alpha = c.node.float_attribute("alpha", 1.67326319217681884765625f);
    double gamma = c.node.float_attribute("gamma", 1.05070102214813232421875f);
    return unary_float(c, [alpha, gamma](double x) {
      return x > 0 ? gamma * x : gamma * alpha * (std::exp(x) - 1.0);
    });
  };
  table["HardSigmoid"] = [](const KernelContext& c) {
    double alpha = c.node.float_attribute("alpha", 0.2f);
    double beta = c.node.float_attribute("beta", 0.5f);
    return unary_float(c, [alpha, beta](double x) {
      double y = alpha * x + beta;
      return y < 0.0 ? 0.0 : (y > 1.0 ? 1.0 : y);
    });
  };
  table["HardSwish"] = [](const KernelContext& c) {
    return unary_float(c, [](double x) { return x * std::max(0.0, std::min(1.0, x / 6.0 + 0.5)); });
  };
  table["Gelu"] = gelu_kernel;
  table["IsNaN"] = [](const KernelContext& c) {
    return unary_predicate(c, [](double x) { return std::isnan(x); });
  };
  table["IsInf"] = [](const KernelContext& c) {
    bool negative = c.node.int_attribute("detect_negative", 1) != 0;
    bool positive = c.node.int_attribute("detect_positive", 1) != 0;
    return unary_predicate(c, [negative, positive](double x) {
      return std::isinf(x) && ((x > 0 && positive) || (x < 0 && negative));
    });
  };

  table["Add"] = [](const KernelContext& c) {
    return binary<false, Group::kNumeric>(
        c, [](auto x, auto y) { return wrapping(x, y, [](auto p, auto q) { return p + q; }); });
  };
  table["Sub"] = [](const KernelContext& c) {
    return binary<false, Group::kNumeric>(
        c, [](auto x, auto y) { return wrapping(x, y, [](auto p, auto q) { return p - q; }); });
  };
  table["Mul"] = [](const KernelContext& c) {
    return binary<false, Group::kNumeric>(
        c, [](auto x, auto y) { return wrapping(x, y, [](auto p, auto q) { return p * q; }); });
  };
  table["Div"] = div_kernel;
  table["Mod"] = mod_kernel;
  table["Pow"] = pow_kernel;
  table["PRelu"] = [](const KernelContext& c) {
    return binary<false, Group::kNumeric>(c, [](auto x, auto slope) {
      return x < decltype(x){} ? static_cast<decltype(x)>(slope * x) : x;
    });
  };
  table["Equal"] = [](const KernelContext& c) {
    return binary<true, Group::kAll>(c, [](auto x, auto y) { return x == y; });
  };
  table["Less"] = [](const KernelContext& c) {
    return binary<true, Group::kNumeric>(c, [](auto x, auto y) { return x < y; });
  };
  table["Greater"] = [](const KernelContext& c) {
    return binary<true, Group::kNumeric>(c, [](auto x, auto y) { return x > y; });
  };
  table["LessOrEqual"] = [](const KernelContext& c) {
    return binary<true, Group::kNumeric>(c, [](auto x, auto y) { return x <= y; });
  };
  table["GreaterOrEqual"] = [](const KernelContext& c) {
    return binary<true, Group::kNumeric>(c, [](auto x, auto y) { return x >= y; });
  };
  table["And"] = [](const KernelContext& c) {
    if (c.input(0)->dtype != DType::kBool) return KernelResult(c.unsupported_dtype(0));
    return binary<true, Group::kAll>(c, [](auto x, auto y) { return x && y; });
  };
  table["Or"] = [](const KernelContext& c) {
    if (c.input(0)->dtype != DType::kBool) return KernelResult(c.unsupported_dtype(0));
    return binary<true, Group::kAll>(c, [](auto x, auto y) { return x || y; });
  };
  table["Xor"] = [](const KernelContext& c) {
    if (c.input(0)->dtype != DType::kBool) return KernelResult(c.unsupported_dtype(0));
    return binary<true, Group::kAll>(c, [](auto x, auto y) { return x != y; });
  };
  table["Sum"] = [](const KernelContext& c) { return variadic(c, Variadic::kSum); };
  table["Mean"] = [](const KernelContext& c) { return variadic(c, Variadic::kMean); };
  table["Max"] = [](const KernelContext& c) { return variadic(c, Variadic::kMax); };
  table["Min"] = [](const KernelContext& c) { return variadic(c, Variadic::kMin); };
  table["Where"] = where_kernel;
  table["Clip"] = clip_kernel;
  table["Cast"] = [](const KernelContext& c) {
    return cast_to(c, static_cast<DType>(c.node.int_attribute("to", 0)));
  };
  table["CastLike"] = [](const KernelContext& c) { return cast_to(c, c.input(1)->dtype); };
  table["Identity"] = [](const KernelContext& c) { return single(*c.input(0)); };
  table["Dropout"] = dropout_kernel;
}

}  // namespace stitch::ir::reference
