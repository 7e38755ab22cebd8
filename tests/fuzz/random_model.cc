// The random model generator: the op table, the generation loop, the elementwise
// and reduction builders (op_generator.h) and the generator flags.
#include "tests/fuzz/random_model.h"

#include <algorithm>
#include <optional>
#include <set>

#include "tests/fuzz/op_generator.h"

namespace stitch::fuzz::detail {

std::optional<Dims> broadcast(const Dims& a, const Dims& b) {
  Dims out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t x = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    int64_t y = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[i] = x == 1 ? y : x;
  }
  return out;
}

const std::vector<Generator::OpEntry>& Generator::ops() {
  static const std::vector<OpEntry> table = [] {
    std::vector<OpEntry> entries;
    for (auto [op, opset] : std::vector<std::pair<std::string, int64_t>>{{"Acos", 7},
                                                                         {"Acosh", 9},
                                                                         {"Asin", 7},
                                                                         {"Asinh", 9},
                                                                         {"Atan", 7},
                                                                         {"Atanh", 9},
                                                                         {"Ceil", 7},
                                                                         {"Celu", 12},
                                                                         {"Cos", 7},
                                                                         {"Cosh", 9},
                                                                         {"Elu", 7},
                                                                         {"Exp", 7},
                                                                         {"Floor", 7},
                                                                         {"Gelu", 20},
                                                                         {"HardSigmoid", 7},
                                                                         {"HardSwish", 14},
                                                                         {"LeakyRelu", 7},
                                                                         {"Log", 7},
                                                                         {"Mish", 18},
                                                                         {"Reciprocal", 7},
                                                                         {"Round", 11},
                                                                         {"Selu", 7},
                                                                         {"Sigmoid", 7},
                                                                         {"Sin", 7},
                                                                         {"Sinh", 9},
                                                                         {"Softplus", 7},
                                                                         {"Softsign", 7},
                                                                         {"Sqrt", 7},
                                                                         {"Tan", 7},
                                                                         {"Tanh", 7},
                                                                         {"ThresholdedRelu", 10},
                                                                         {"IsNaN", 9},
                                                                         {"IsInf", 10}}) {
      entries.push_back({op, opset, &Generator::unary_float});
    }
    for (auto [op, opset] : std::vector<std::pair<std::string, int64_t>>{
             {"Abs", 7}, {"Neg", 7}, {"Relu", 7}, {"Sign", 9}, {"Erf", 9}}) {
      entries.push_back({op, opset, &Generator::unary_numeric});
    }
    entries.push_back({"Not", 7, &Generator::unary_any});
    entries.push_back({"Identity", 7, &Generator::unary_any});
    entries.push_back({"Cast", 7, &Generator::cast});
    entries.push_back({"CastLike", 15, &Generator::cast});
    for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow"}) {
      entries.push_back({op, 7, &Generator::binary});
    }
    entries.push_back({"Mod", 10, &Generator::binary});
    for (auto [op, opset] : std::vector<std::pair<std::string, int64_t>>{{"Equal", 7},
                                                                         {"Less", 7},
                                                                         {"Greater", 7},
                                                                         {"LessOrEqual", 12},
                                                                         {"GreaterOrEqual", 12}}) {
      entries.push_back({op, opset, &Generator::compare});
    }
    for (const char* op : {"And", "Or", "Xor"}) entries.push_back({op, 7, &Generator::logic});
    entries.push_back({"Where", 9, &Generator::where});
    for (const char* op : {"Sum", "Mean", "Max", "Min"}) {
      entries.push_back({op, 8, &Generator::variadic});
    }
    entries.push_back({"Clip", 7, &Generator::clip});
    entries.push_back({"Dropout", 7, &Generator::dropout});
    entries.push_back({"PRelu", 7, &Generator::prelu});
    for (const char* op :
         {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
          "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}) {
      entries.push_back({op, 7, &Generator::reduce});
    }
    entries.push_back({"ArgMax", 7, &Generator::arg_reduce});
    entries.push_back({"ArgMin", 7, &Generator::arg_reduce});
    entries.push_back({"Softmax", 7, &Generator::softmax});
    entries.push_back({"LogSoftmax", 7, &Generator::softmax});
    entries.push_back({"LayerNormalization", 17, &Generator::normalization});
    entries.push_back({"BatchNormalization", 7, &Generator::normalization});
    entries.push_back({"InstanceNormalization", 7, &Generator::normalization});
    entries.push_back({"GroupNormalization", 18, &Generator::normalization});
    entries.push_back({"Expand", 8, &Generator::expand});
    entries.push_back({"Transpose", 7, &Generator::transpose});
    entries.push_back({"Concat", 7, &Generator::concat});
    entries.push_back({"Split", 7, &Generator::split});
    entries.push_back({"Slice", 7, &Generator::slice});
    entries.push_back({"Gather", 7, &Generator::gather});
    entries.push_back({"GatherElements", 11, &Generator::gather});
    entries.push_back({"Pad", 7, &Generator::pad});
    entries.push_back({"Tile", 7, &Generator::tile});
    entries.push_back({"Trilu", 14, &Generator::trilu});
    entries.push_back({"Reshape", 7, &Generator::reshape});
    entries.push_back({"Flatten", 7, &Generator::flatten});
    entries.push_back({"Squeeze", 7, &Generator::squeeze});
    entries.push_back({"Unsqueeze", 7, &Generator::squeeze});
    entries.push_back({"Shape", 7, &Generator::shape_of});
    entries.push_back({"Size", 7, &Generator::shape_of});
    entries.push_back({"ConstantOfShape", 9, &Generator::constant_of_shape});
    entries.push_back({"Range", 11, &Generator::range});
    entries.push_back({"CumSum", 11, &Generator::cumsum});
    entries.push_back({"ScatterND", 11, &Generator::scatter_nd});
    entries.push_back({"MatMul", 7, &Generator::matmul});
    entries.push_back({"Gemm", 7, &Generator::gemm});
    entries.push_back({"Conv", 7, &Generator::conv_or_pool});
    entries.push_back({"MaxPool", 7, &Generator::conv_or_pool});
    entries.push_back({"AveragePool", 7, &Generator::conv_or_pool});
    entries.push_back({"GlobalAveragePool", 7, &Generator::global_pool});
    entries.push_back({"GlobalMaxPool", 7, &Generator::global_pool});
    entries.push_back({"TopK", 7, &Generator::topk});
    entries.push_back({"Einsum", 12, &Generator::einsum});
    entries.push_back({"Resize", 13, &Generator::resize});
    entries.push_back({"LSTM", 7, &Generator::lstm});
    entries.push_back({"Frobnicate", 7, &Generator::custom});
    return entries;
  }();
  return table;
}

GeneratedModel Generator::run() {
  std::vector<const OpEntry*> allowed;
  for (const OpEntry& entry : ops()) {
    if (entry.min_opset <= b_.opset() && b_.options().excluded_ops.count(entry.op) == 0) {
      allowed.push_back(&entry);
    }
  }
  const int64_t nodes = b_.range(1, 12);
  for (int64_t n = 0; n < nodes && !allowed.empty(); ++n) {
    // Now and then a node with thousands of inputs or a long chain: recursion depth
    // and quadratic passes.
    if (b_.one_in(150) && b_.options().extreme_fan_in) {
      (b_.coin() ? wide("") : chain(""));
      continue;
    }
    for (int attempt = 0; attempt < 4; ++attempt) {
      const OpEntry* entry = b_.pick(allowed);
      if ((this->*entry->build)(entry->op)) break;
    }
  }
  return b_.finish();
}

GenValue Generator::input(DTypeClass type_class, int min_rank, int max_rank) {
  if (!b_.one_in(4)) {
    std::optional<GenValue> found = b_.find([&](const GenValue& value) {
      return in_class(value.dtype, type_class) && rank_of(value) >= min_rank &&
             rank_of(value) <= max_rank;
    });
    if (found) return *found;
  }
  return b_.leaf(b_.dtype(type_class), b_.shape(min_rank, max_rank));
}

GenValue Generator::partner(const GenValue& first, DType dtype) {
  if (b_.coin()) {
    std::optional<GenValue> found = b_.find([&](const GenValue& value) {
      if (value.dtype != dtype) return false;
      std::optional<Dims> both = broadcast(first.dims, value.dims);
      return both && fits(*both);
    });
    if (found) return *found;
  }
  // first's dims, some leading ones dropped, some set to 1, a 1 of first's widened,
  // now and then a new leading dim.
  Dims dims(first.dims.begin() + b_.range(0, rank_of(first)), first.dims.end());
  for (int64_t& dim : dims) {
    if (b_.one_in(3)) {
      dim = 1;
    } else if (dim == 1 && b_.one_in(4)) {
      dim = b_.dim();
    }
  }
  if (b_.one_in(6)) dims.insert(dims.begin(), b_.dim());
  std::optional<Dims> both = broadcast(first.dims, dims);
  if (!both || !fits(*both)) dims = first.dims;
  return b_.operand(dtype, dims);
}

int64_t Generator::axis(int64_t axis_value, int64_t rank, int64_t negative_from_opset) {
  if (b_.opset() >= negative_from_opset && b_.coin()) return axis_value - rank;
  return axis_value;
}

bool Generator::unary_float(const std::string& op) {
  GenValue x = input(DTypeClass::kFloat);
  // Types ONNX leaves out: bfloat16 activations (until opset 22), Celu beyond
  // float32, IsInf on float16 before opset 20.
  static const std::set<std::string> bfloat16_ops = {"Exp",     "Log",  "Sqrt",  "Reciprocal",
                                                     "Sigmoid", "Tanh", "Floor", "Ceil"};
  if ((x.dtype == DType::kBFloat16 && bfloat16_ops.count(op) == 0) ||
      (op == "Celu" && x.dtype != DType::kFloat32) ||
      (op == "IsInf" && x.dtype == DType::kFloat16 && b_.opset() < 20)) {
    return false;
  }
  onnx::NodeProto* node = b_.add_node(op, {x.name});
  if (b_.coin()) {
    if (op == "Elu" || op == "Celu" || op == "LeakyRelu" || op == "ThresholdedRelu" ||
        op == "HardSigmoid" || op == "Selu") {
      ModelBuilder::set_float(node, "alpha", static_cast<float>(b_.float_value()));
    }
    if (op == "HardSigmoid")
      ModelBuilder::set_float(node, "beta", static_cast<float>(b_.float_value()));
    if (op == "Selu") ModelBuilder::set_float(node, "gamma", static_cast<float>(b_.float_value()));
    if (op == "Gelu") ModelBuilder::set_string(node, "approximate", b_.coin() ? "tanh" : "none");
    if (op == "IsInf") {
      ModelBuilder::set_int(node, "detect_positive", b_.range(0, 1));
      ModelBuilder::set_int(node, "detect_negative", b_.range(0, 1));
    }
  }
  bool predicate = op == "IsNaN" || op == "IsInf";
  output(node, predicate ? DType::kBool : x.dtype, x.dims);
  return true;
}

bool Generator::unary_numeric(const std::string& op) {
  DTypeClass type_class = DTypeClass::kNumeric;
  if (op == "Neg" || (op == "Relu" && b_.opset() >= 14)) type_class = DTypeClass::kSignedNumeric;
  if (op == "Relu" && b_.opset() < 14) type_class = DTypeClass::kFloat;
  GenValue x = input(type_class);
  output(b_.add_node(op, {x.name}), x.dtype, x.dims);
  return true;
}

bool Generator::unary_any(const std::string& op) {
  GenValue x = input(op == "Not" ? DTypeClass::kBool : DTypeClass::kAny);
  output(b_.add_node(op, {x.name}), x.dtype, x.dims);
  return true;
}

bool Generator::cast(const std::string& op) {
  GenValue x = input(DTypeClass::kAny);
  DType to = b_.dtype(DTypeClass::kAny);
  if (op == "CastLike") {
    GenValue like = b_.operand(to, b_.shape(0, 1));
    output(b_.add_node(op, {x.name, like.name}), to, x.dims);
    return true;
  }
  onnx::NodeProto* node = b_.add_node(op, {x.name});
  ModelBuilder::set_int(node, "to", static_cast<int64_t>(to));
  output(node, to, x.dims);
  return true;
}

bool Generator::binary(const std::string& op) {
  bool division = op == "Div" || op == "Mod";
  GenValue a =
      input(division && !b_.options().integer_division ? DTypeClass::kFloat : DTypeClass::kNumeric);
  if (division && !int_division_ok(a.dtype)) return false;
  DType b_dtype = a.dtype;
  if (op == "Pow" && b_.opset() >= 12 && b_.coin()) b_dtype = b_.dtype(DTypeClass::kNumeric);
  GenValue b = partner(a, b_dtype);
  onnx::NodeProto* node = b_.add_node(op, {a.name, b.name});
  if (op == "Mod" && (ir::dtype_is_float(a.dtype) || b_.coin()))
    ModelBuilder::set_int(node, "fmod", 1);
  output(node, a.dtype, *broadcast(a.dims, b.dims));
  return true;
}

bool Generator::compare(const std::string& op) {
  GenValue a = input(op == "Equal" && b_.coin() ? DTypeClass::kAny : DTypeClass::kNumeric);
  GenValue b = partner(a, a.dtype);
  output(b_.add_node(op, {a.name, b.name}), DType::kBool, *broadcast(a.dims, b.dims));
  return true;
}

bool Generator::logic(const std::string& op) {
  GenValue a = input(DTypeClass::kBool);
  GenValue b = partner(a, DType::kBool);
  output(b_.add_node(op, {a.name, b.name}), DType::kBool, *broadcast(a.dims, b.dims));
  return true;
}

bool Generator::where(const std::string& op) {
  GenValue condition = input(DTypeClass::kBool);
  GenValue x = input(DTypeClass::kAny);
  std::optional<Dims> both = broadcast(condition.dims, x.dims);
  if (!both || !fits(*both)) x = b_.operand(x.dtype, condition.dims);
  GenValue y = partner(x, x.dtype);
  std::optional<Dims> all = broadcast(*broadcast(condition.dims, x.dims), y.dims);
  if (!all || !fits(*all)) return false;
  output(b_.add_node(op, {condition.name, x.name, y.name}), x.dtype, *all);
  return true;
}

bool Generator::variadic(const std::string& op) {
  GenValue first = input(op == "Sum" || op == "Mean" ? DTypeClass::kFloat : DTypeClass::kNumeric);
  std::vector<std::string> names = {first.name};
  Dims dims = first.dims;
  for (int64_t n = b_.range(0, 3); n > 0; --n) {
    GenValue next = partner(first, first.dtype);
    std::optional<Dims> both = broadcast(dims, next.dims);
    if (!both || !fits(*both)) continue;
    dims = *both;
    names.push_back(next.name);
  }
  output(b_.add_node(op, names), first.dtype, dims);
  return true;
}

bool Generator::clip(const std::string& op) {
  GenValue x = input(b_.opset() >= 12 ? DTypeClass::kNumeric : DTypeClass::kFloat);
  if (b_.opset() < 11) {
    onnx::NodeProto* node = b_.add_node(op, {x.name});
    if (b_.coin()) ModelBuilder::set_float(node, "min", static_cast<float>(b_.float_value()));
    if (b_.coin()) ModelBuilder::set_float(node, "max", static_cast<float>(b_.float_value()));
    output(node, x.dtype, x.dims);
    return true;
  }
  std::vector<std::string> inputs = {x.name};
  int64_t form = b_.range(0, 3);  // none, min, max, both
  if (form != 0) inputs.push_back(form == 2 ? "" : b_.operand(x.dtype, {}).name);
  if (form >= 2) inputs.push_back(b_.operand(x.dtype, {}).name);
  output(b_.add_node(op, inputs), x.dtype, x.dims);
  return true;
}

bool Generator::dropout(const std::string& op) {
  GenValue x = input(DTypeClass::kFloat);
  std::vector<std::string> inputs = {x.name};
  if (b_.opset() >= 12) {
    if (b_.coin()) {
      const double ratio = 0.25 * static_cast<double>(b_.range(0, 3));
      inputs.push_back(b_.float_constant(DType::kFloat32, {ratio}, {}).name);
    }
    // training_mode, always false: a training-mode mask is random.
    if (b_.coin()) {
      if (inputs.size() == 1) inputs.push_back("");
      inputs.push_back(b_.int_scalar(0, DType::kBool).name);
    }
  }
  onnx::NodeProto* node = b_.add_node(op, inputs);
  if (b_.opset() < 12 && b_.coin()) ModelBuilder::set_float(node, "ratio", 0.5f);
  output(node, x.dtype, x.dims);
  if (b_.coin()) output(node, b_.opset() >= 10 ? DType::kBool : x.dtype, x.dims);
  return true;
}

bool Generator::prelu(const std::string& op) {
  GenValue x = input(b_.opset() >= 9 ? DTypeClass::kSignedNumeric : DTypeClass::kFloat);
  Dims slope(x.dims.begin() + b_.range(0, rank_of(x)), x.dims.end());
  for (int64_t& dim : slope) {
    if (b_.coin()) dim = 1;
  }
  GenValue s = b_.operand(x.dtype, slope);
  output(b_.add_node(op, {x.name, s.name}), x.dtype, x.dims);
  return true;
}

bool Generator::reduce(const std::string& op) {
  bool integers = op == "ReduceSum" || op == "ReduceMax" || op == "ReduceMin" ||
                  op == "ReduceProd" || op == "ReduceMean";
  GenValue x = input(integers && b_.coin() ? DTypeClass::kNumeric : DTypeClass::kFloat);
  const int64_t rank = rank_of(x);
  const bool axes_input = b_.opset() >= (op == "ReduceSum" ? 13 : 18);
  // 0: axes omitted, 1: some axes, 2: an empty axes input.
  int64_t form = rank == 0 ? 0 : b_.range(0, axes_input ? 2 : 1);
  std::vector<int64_t> axes;
  std::vector<bool> reduced(static_cast<size_t>(rank), form != 1);
  if (form == 1) {
    for (int64_t i = 0; i < rank; ++i) {
      if (b_.coin()) {
        reduced[static_cast<size_t>(i)] = true;
        axes.push_back(axis(i, rank));
      }
    }
    if (axes.empty()) {
      reduced[static_cast<size_t>(rank - 1)] = true;
      axes.push_back(rank - 1);
    }
    std::reverse(axes.begin(), axes.end());
  }
  bool noop = false;
  std::vector<std::string> inputs = {x.name};
  if (axes_input && form != 0) inputs.push_back(b_.ints(axes).name);
  onnx::NodeProto* node = b_.add_node(op, inputs);
  if (!axes_input && form == 1) ModelBuilder::set_ints(node, "axes", axes);
  if (axes_input && form != 1 && b_.coin()) {
    noop = b_.coin();
    ModelBuilder::set_int(node, "noop_with_empty_axes", noop ? 1 : 0);
  }
  int64_t keepdims = b_.range(0, 2);  // 2: left to the default, 1
  if (keepdims != 2) ModelBuilder::set_int(node, "keepdims", keepdims);
  Dims dims;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced[static_cast<size_t>(i)] || noop) {
      dims.push_back(x.dims[static_cast<size_t>(i)]);
    } else if (keepdims != 0) {
      dims.push_back(1);
    }
  }
  output(node, x.dtype, dims);
  return true;
}

bool Generator::arg_reduce(const std::string& op) {
  GenValue x = input(DTypeClass::kNumeric, 1);
  const int64_t rank = rank_of(x);
  const int64_t a = b_.range(0, rank - 1);
  onnx::NodeProto* node = b_.add_node(op, {x.name});
  ModelBuilder::set_int(node, "axis", axis(a, rank));
  int64_t keepdims = b_.range(0, 1);
  ModelBuilder::set_int(node, "keepdims", keepdims);
  if (b_.opset() >= 12 && b_.coin()) ModelBuilder::set_int(node, "select_last_index", 1);
  Dims dims = x.dims;
  if (keepdims != 0) {
    dims[static_cast<size_t>(a)] = 1;
  } else {
    dims.erase(dims.begin() + a);
  }
  output(node, DType::kInt64, dims);
  return true;
}

bool Generator::softmax(const std::string& op) {
  GenValue x = input(DTypeClass::kFloat, 1);
  const int64_t rank = rank_of(x);
  onnx::NodeProto* node = b_.add_node(op, {x.name});
  // Before opset 13 the default axis is 1, which a rank-1 input does not have.
  if (b_.coin() || (rank == 1 && b_.opset() < 13)) {
    ModelBuilder::set_int(node, "axis", axis(b_.range(0, rank - 1), rank));
  }
  output(node, x.dtype, x.dims);
  return true;
}

bool Generator::normalization(const std::string& op) {
  const bool layer = op == "LayerNormalization";
  GenValue x = input(DTypeClass::kFloat, layer ? 1 : op == "BatchNormalization" ? 2 : 3);
  const int64_t rank = rank_of(x);
  const int64_t channels = x.dims[1 % x.dims.size()];
  std::vector<std::string> inputs = {x.name};
  onnx::NodeProto* node = nullptr;
  if (layer) {
    const int64_t a = b_.range(0, rank - 1);
    Dims normalized(x.dims.begin() + a, x.dims.end());
    inputs.push_back(b_.operand(x.dtype, normalized).name);
    if (b_.coin()) inputs.push_back(b_.operand(x.dtype, normalized).name);
    node = b_.add_node(op, inputs);
    if (a != rank - 1 || b_.coin()) ModelBuilder::set_int(node, "axis", axis(a, rank));
  } else if (op == "GroupNormalization") {
    std::vector<int64_t> divisors;
    for (int64_t g = 1; g <= std::max<int64_t>(channels, 1); ++g) {
      if (channels % g == 0) divisors.push_back(g);
    }
    const int64_t groups = b_.pick(divisors);
    const Dims per = {b_.opset() >= 21 ? channels : groups};
    inputs.push_back(b_.operand(x.dtype, per).name);
    inputs.push_back(b_.operand(x.dtype, per).name);
    node = b_.add_node(op, inputs);
    ModelBuilder::set_int(node, "num_groups", groups);
  } else {
    const int parameters = op == "BatchNormalization" ? 4 : 2;
    for (int i = 0; i < parameters; ++i) inputs.push_back(b_.operand(x.dtype, {channels}).name);
    node = b_.add_node(op, inputs);
  }
  if (b_.coin()) ModelBuilder::set_float(node, "epsilon", b_.coin() ? 1e-5f : 0.5f);
  output(node, x.dtype, x.dims);
  return true;
}

}  // namespace stitch::fuzz::detail

namespace stitch::fuzz {

bool parse_generator_flag(std::string_view flag, GeneratorOptions* options) {
  if (flag == "--no-zero-dims") {
    options->zero_dims = false;
  } else if (flag == "--no-int-div") {
    options->integer_division = false;
  } else if (flag == "--plain-names") {
    options->hostile_names = false;
  } else if (flag == "--no-wide") {
    options->extreme_fan_in = false;
  } else if (flag == "--no-special-floats") {
    options->special_floats = false;
  } else if (flag.starts_with("--exclude-ops=")) {
    std::string_view list = flag.substr(std::string_view("--exclude-ops=").size());
    while (!list.empty()) {
      size_t comma = list.find(',');
      options->excluded_ops.insert(std::string(list.substr(0, comma)));
      list = comma == std::string_view::npos ? "" : list.substr(comma + 1);
    }
  } else {
    return false;
  }
  return true;
}

std::string_view generator_flags_help() {
  return "  --no-zero-dims        no zero-size tensors: every dim is at least 1\n"
         "  --no-int-div          Div and Mod on float tensors only\n"
         "  --plain-names         names are [A-Za-z0-9_] (the same graph otherwise)\n"
         "  --no-wide             no node with thousands of inputs, no long chains\n"
         "  --no-special-floats   no NaN, Inf, -0 or denormals in constants\n"
         "  --exclude-ops=A,B     never generate these op types\n";
}

GeneratedModel generate_model(FuzzedDataProvider& data, const GeneratorOptions& options) {
  return detail::Generator(data, options).run();
}

}  // namespace stitch::fuzz
