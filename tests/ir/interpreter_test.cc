// Tests of the reference interpreter with hand-computed values. The op-by-op check
// against ONNX Runtime is tests/reference/op_cases.py.
#include "ir/reference/interpreter.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "ir/core/op_registry.h"

namespace stitch::ir {
namespace {

Node make_node(const std::string& op, const std::string& name, size_t outputs = 1) {
  Node node;
  node.op_type = op;
  node.name = name;
  node.outputs.assign(outputs, 0);
  return node;
}

Tensor int32_tensor(std::vector<int64_t> dims, const std::vector<int32_t>& values) {
  Tensor tensor;
  tensor.dtype = DType::kInt32;
  tensor.dims = std::move(dims);
  tensor.bytes.assign(reinterpret_cast<const char*>(values.data()),
                      values.size() * sizeof(int32_t));
  return tensor;
}

Tensor bits16_tensor(DType dtype, std::vector<int64_t> dims, const std::vector<uint16_t>& bits) {
  Tensor tensor;
  tensor.dtype = dtype;
  tensor.dims = std::move(dims);
  tensor.bytes.assign(reinterpret_cast<const char*>(bits.data()), bits.size() * sizeof(uint16_t));
  return tensor;
}

std::vector<double> floats_of(const Tensor& tensor) {
  std::vector<double> values;
  for (int64_t i = 0; i < tensor.num_elements(); ++i) values.push_back(tensor.float_at(i));
  return values;
}

Tensor evaluate_one(const Node& node, int64_t opset, const std::vector<const Tensor*>& inputs) {
  Result<std::vector<Tensor>> outputs = evaluate_node(node, opset, inputs);
  EXPECT_TRUE(outputs.is_ok()) << outputs.status().message();
  if (!outputs.is_ok() || outputs->empty()) return Tensor{};
  return (*outputs)[0];
}

TEST(InterpreterTest, AddBroadcastsRowVector) {
  Tensor a = Tensor::from_float({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = Tensor::from_float({3}, {10, 20, 30});
  Tensor y = evaluate_one(make_node("Add", "add"), 14, {&a, &b});
  EXPECT_EQ(y.dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(floats_of(y), (std::vector<double>{11, 22, 33, 14, 25, 36}));
}

TEST(InterpreterTest, AddBroadcastsBothWays) {
  Tensor a = Tensor::from_float({2, 1}, {1, 2});
  Tensor b = Tensor::from_float({1, 3}, {10, 20, 30});
  Tensor y = evaluate_one(make_node("Add", "add"), 14, {&a, &b});
  EXPECT_EQ(y.dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(floats_of(y), (std::vector<double>{11, 21, 31, 12, 22, 32}));
}

TEST(InterpreterTest, ModSignFollowsDivisorWithoutFmod) {
  Tensor a = int32_tensor({4}, {5, -5, 5, -5});
  Tensor b = int32_tensor({4}, {3, 3, -3, -3});
  Node mod = make_node("Mod", "mod");
  Tensor python_style = evaluate_one(mod, 13, {&a, &b});
  EXPECT_EQ(python_style.to_int64_vector(), (std::vector<int64_t>{2, 1, -1, -2}));
  mod.set_attribute(Attribute::make_int("fmod", 1));
  Tensor c_style = evaluate_one(mod, 13, {&a, &b});
  EXPECT_EQ(c_style.to_int64_vector(), (std::vector<int64_t>{2, -2, 2, -2}));
}

// Integer division by zero and INT_MIN / -1 trap on x86; they follow numpy instead
// (ir/core/integer_arithmetic.h): x / 0 == 0, x % 0 == 0, MIN / -1 == MIN, MIN % -1 == 0.
TEST(InterpreterTest, IntegerDivisionByZeroIsZeroAndMinOverMinusOneWraps) {
  constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();
  Tensor a64 = Tensor::from_int64({4}, {7, -7, kMin64, kMin64});
  Tensor b64 = Tensor::from_int64({4}, {0, 0, -1, 0});
  EXPECT_EQ(evaluate_one(make_node("Div", "div"), 14, {&a64, &b64}).to_int64_vector(),
            (std::vector<int64_t>{0, 0, kMin64, 0}));
  Node mod = make_node("Mod", "mod");
  EXPECT_EQ(evaluate_one(mod, 13, {&a64, &b64}).to_int64_vector(),
            (std::vector<int64_t>{0, 0, 0, 0}));
  mod.set_attribute(Attribute::make_int("fmod", 1));
  EXPECT_EQ(evaluate_one(mod, 13, {&a64, &b64}).to_int64_vector(),
            (std::vector<int64_t>{0, 0, 0, 0}));

  constexpr int32_t kMin32 = std::numeric_limits<int32_t>::min();
  Tensor a32 = int32_tensor({3}, {kMin32, 9, -9});
  Tensor b32 = int32_tensor({3}, {-1, 0, 2});
  EXPECT_EQ(evaluate_one(make_node("Div", "div"), 14, {&a32, &b32}).to_int64_vector(),
            (std::vector<int64_t>{kMin32, 0, -4}));
  EXPECT_EQ(evaluate_one(make_node("Mod", "mod"), 13, {&a32, &b32}).to_int64_vector(),
            (std::vector<int64_t>{0, 0, 1}));
}

// Reductions over an empty set give the ONNX opset 18 results: 0 for sums, 1 for
// products, -inf/+inf (integers: the dtype's minimum/maximum) for max/min, -inf for
// the log reductions; the mean is 0/0 (NaN, integers 0).
TEST(InterpreterTest, ReductionsOverAnEmptyAxis) {
  Tensor x = Tensor::from_float({2, 0}, {});
  Tensor axes = Tensor::from_int64({1}, {1});
  auto reduce = [&](const std::string& op, const Tensor& input) {
    Tensor y = evaluate_one(make_node(op, "reduce"), 18, {&input, &axes});
    EXPECT_EQ(y.dims, (std::vector<int64_t>{2, 1})) << op;
    return y;
  };
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(floats_of(reduce("ReduceSum", x)), (std::vector<double>{0, 0}));
  EXPECT_EQ(floats_of(reduce("ReduceProd", x)), (std::vector<double>{1, 1}));
  EXPECT_EQ(floats_of(reduce("ReduceMax", x)), (std::vector<double>{-inf, -inf}));
  EXPECT_EQ(floats_of(reduce("ReduceMin", x)), (std::vector<double>{inf, inf}));
  EXPECT_EQ(floats_of(reduce("ReduceL2", x)), (std::vector<double>{0, 0}));
  EXPECT_EQ(floats_of(reduce("ReduceLogSum", x)), (std::vector<double>{-inf, -inf}));
  EXPECT_EQ(floats_of(reduce("ReduceLogSumExp", x)), (std::vector<double>{-inf, -inf}));
  EXPECT_TRUE(std::isnan(reduce("ReduceMean", x).float_at(0)));

  Tensor xi = int32_tensor({2, 0}, {});
  EXPECT_EQ(reduce("ReduceMax", xi).to_int64_vector(),
            (std::vector<int64_t>(2, std::numeric_limits<int32_t>::min())));
  EXPECT_EQ(reduce("ReduceMin", xi).to_int64_vector(),
            (std::vector<int64_t>(2, std::numeric_limits<int32_t>::max())));
  EXPECT_EQ(reduce("ReduceMean", xi).to_int64_vector(), (std::vector<int64_t>{0, 0}));

  Node argmax = make_node("ArgMax", "argmax");
  argmax.set_attribute(Attribute::make_int("axis", 1));
  Result<std::vector<Tensor>> result = evaluate_node(argmax, 13, {&x});
  ASSERT_FALSE(result.is_ok());
  EXPECT_EQ(result.status().message(),
            "node \"argmax\" (ArgMax): reduces an empty axis; ArgMax/ArgMin need at least one "
            "element");
}

TEST(InterpreterTest, RoundHalvesToEven) {
  Tensor x = Tensor::from_float({7}, {0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 2.6f, -1.4f});
  Tensor y = evaluate_one(make_node("Round", "round"), 11, {&x});
  EXPECT_EQ(floats_of(y), (std::vector<double>{0, 2, 2, -0.0, -2, 3, -1}));
  EXPECT_TRUE(std::signbit(y.float_at(3)));
}

// NaN propagates through the clamping activations as in numpy and ONNX Runtime
// (docs/semantics.md); ThresholdedRelu's comparison sends it to 0, as there.
TEST(InterpreterTest, ClampingActivationsKeepNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  Tensor x = Tensor::from_float({5}, {nan, -2.0f, 3.0f, inf, -inf});
  Node hard_sigmoid = make_node("HardSigmoid", "hard_sigmoid");
  hard_sigmoid.set_attribute(Attribute::make_float("alpha", -0.83f));
  hard_sigmoid.set_attribute(Attribute::make_float("beta", 1.0f));
  struct Expected {
    Node node;
    std::vector<double> values;  // NaN where the result must be NaN
  };
  const double n = std::nan("");
  std::vector<Expected> cases = {
      {make_node("Relu", "relu"), {n, 0, 3, inf, 0}},
      {hard_sigmoid, {n, 1, 0, 0, 1}},
      {make_node("HardSwish", "hard_swish"), {n, -1.0 / 3, 3, inf, n}},
      {make_node("Celu", "celu"), {n, std::expm1(-2.0), 3, inf, -1}},
      {make_node("Sign", "sign"), {n, -1, 1, 1, -1}},
      {make_node("ThresholdedRelu", "thresholded_relu"), {0, 0, 3, inf, 0}},
  };
  for (const Expected& expected : cases) {
    std::vector<double> y = floats_of(evaluate_one(expected.node, 14, {&x}));
    ASSERT_EQ(y.size(), expected.values.size()) << expected.node.op_type;
    for (size_t i = 0; i < y.size(); ++i) {
      if (std::isnan(expected.values[i])) {
        EXPECT_TRUE(std::isnan(y[i])) << expected.node.op_type << " element " << i << ": " << y[i];
      } else if (std::isinf(expected.values[i])) {
        EXPECT_EQ(y[i], expected.values[i]) << expected.node.op_type << " element " << i;
      } else {
        EXPECT_NEAR(y[i], expected.values[i], 1e-6) << expected.node.op_type << " element " << i;
      }
    }
  }
}

TEST(InterpreterTest, SoftmaxBeforeOpset13CoercesTo2D) {
  // [1, 2, 2]; opset 11 (axis 1) normalizes all four elements of each batch row,
  // opset 13 (axis -1) each innermost pair.
  const float log3 = std::log(3.0f);
  Tensor x = Tensor::from_float({1, 2, 2}, {0, 0, 0, log3});
  Node softmax = make_node("Softmax", "softmax");
  std::vector<double> coerced = floats_of(evaluate_one(softmax, 11, {&x}));
  std::vector<double> per_axis = floats_of(evaluate_one(softmax, 13, {&x}));
  std::vector<double> want_coerced = {1.0 / 6, 1.0 / 6, 1.0 / 6, 0.5};
  std::vector<double> want_per_axis = {0.5, 0.5, 0.25, 0.75};
  ASSERT_EQ(coerced.size(), 4u);
  ASSERT_EQ(per_axis.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_NEAR(coerced[i], want_coerced[i], 1e-6) << i;
    EXPECT_NEAR(per_axis[i], want_per_axis[i], 1e-6) << i;
  }
}

TEST(InterpreterTest, BFloat16ResultsRoundToNearestEven) {
  // 1 + 2^-8 lies halfway between bf16 1.0 (even) and 1.0078125: rounds down;
  // 1 + 3 * 2^-8 lies halfway between 1.0078125 (odd) and 1.015625: rounds up.
  Tensor a =
      bits16_tensor(DType::kBFloat16, {2}, {float_to_bfloat16(1.0f), float_to_bfloat16(1.0f)});
  Tensor b = bits16_tensor(DType::kBFloat16, {2},
                           {float_to_bfloat16(0.00390625f), float_to_bfloat16(0.01171875f)});
  Tensor y = evaluate_one(make_node("Add", "add"), 14, {&a, &b});
  ASSERT_EQ(y.dtype, DType::kBFloat16);
  EXPECT_EQ(y.element<uint16_t>(0), 0x3f80);
  EXPECT_EQ(y.element<uint16_t>(1), 0x3f82);
}

TEST(InterpreterTest, Float16ResultsRoundToNearestEven) {
  // 1 + 2^-11 is halfway between half 1.0 and its successor: rounds to 1.0.
  Tensor a = bits16_tensor(DType::kFloat16, {1}, {float_to_half(1.0f)});
  Tensor b = bits16_tensor(DType::kFloat16, {1}, {float_to_half(0.00048828125f)});
  Tensor y = evaluate_one(make_node("Add", "add"), 14, {&a, &b});
  EXPECT_EQ(y.element<uint16_t>(0), 0x3c00);
}

TEST(InterpreterTest, CastFloatToIntTruncatesAndToBoolTestsNonzero) {
  Tensor x = Tensor::from_float({4}, {2.7f, -2.7f, 0.0f, 0.25f});
  Node cast = make_node("Cast", "cast");
  cast.set_attribute(Attribute::make_int("to", static_cast<int64_t>(DType::kInt32)));
  EXPECT_EQ(evaluate_one(cast, 13, {&x}).to_int64_vector(), (std::vector<int64_t>{2, -2, 0, 0}));
  cast.set_attribute(Attribute::make_int("to", static_cast<int64_t>(DType::kBool)));
  EXPECT_EQ(evaluate_one(cast, 13, {&x}).to_int64_vector(), (std::vector<int64_t>{1, 1, 0, 1}));
}

TEST(InterpreterTest, ReduceSumTakesAxesFromInputFromOpset13) {
  Tensor x = Tensor::from_float({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor axes = Tensor::from_int64({1}, {1});
  Node reduce = make_node("ReduceSum", "sum");
  reduce.set_attribute(Attribute::make_int("keepdims", 0));
  Tensor rows = evaluate_one(reduce, 13, {&x, &axes});
  EXPECT_EQ(rows.dims, (std::vector<int64_t>{2}));
  EXPECT_EQ(floats_of(rows), (std::vector<double>{6, 15}));
  reduce.set_attribute(Attribute::make_ints("axes", {0}));
  Tensor columns = evaluate_one(reduce, 11, {&x});
  EXPECT_EQ(floats_of(columns), (std::vector<double>{5, 7, 9}));
}

TEST(InterpreterTest, OpaqueOpHasNoReferenceEvaluation) {
  Node node = make_node("FancyAttention", "fancy");
  node.domain = "com.example";
  Tensor x = Tensor::from_float({1}, {1});
  Result<std::vector<Tensor>> result = evaluate_node(node, 1, {&x});
  ASSERT_FALSE(result.is_ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(result.status().message(),
            "node \"fancy\" (FancyAttention): the op has no reference evaluation (it is not in "
            "the op registry of the default domain); constant folding and reference checks "
            "cannot run it");
  EXPECT_FALSE(has_reference_evaluation("com.example", "FancyAttention"));
  EXPECT_FALSE(has_reference_evaluation("", "Loop"));
}

TEST(InterpreterTest, UnsupportedDtypeIsAnError) {
  Tensor x = Tensor::from_int64({2}, {1, 2});
  Result<std::vector<Tensor>> result = evaluate_node(make_node("Exp", "exp"), 13, {&x});
  ASSERT_FALSE(result.is_ok());
  EXPECT_EQ(result.status().message(),
            "node \"exp\" (Exp): input 0 has dtype int64, which Exp does not take in the "
            "reference evaluation; cast it first");
}

TEST(InterpreterTest, OutputSizeFromInputValuesIsCheckedBeforeAllocating) {
  Tensor shape = Tensor::from_int64({2}, {1 << 20, 1 << 20});
  Result<std::vector<Tensor>> result =
      evaluate_node(make_node("ConstantOfShape", "fill"), 9, {&shape});
  ASSERT_FALSE(result.is_ok());
  EXPECT_EQ(result.status().message(),
            "node \"fill\" (ConstantOfShape): would produce an output of shape "
            "[1048576,1048576], which is negative or over 2^31 elements; fix the shape-giving "
            "inputs");
  Tensor x = Tensor::from_float({2}, {1, 2});
  Tensor empty_axis = Tensor::from_int64({0}, {});
  result = evaluate_node(make_node("CumSum", "cumsum"), 14, {&x, &empty_axis});
  ASSERT_FALSE(result.is_ok());
  EXPECT_EQ(result.status().message(),
            "node \"cumsum\" (CumSum): input 1 is empty but must hold a scalar; give it one value");
}

TEST(InterpreterTest, EveryRegistryOpHasAReferenceEvaluation) {
  for (std::string_view op : registered_op_types()) {
    EXPECT_TRUE(has_reference_evaluation("", op)) << op;
  }
}

// ONNX Runtime has no layout=1 (batch-major) LSTM, so op_cases.py cannot check it:
// it must equal layout 0 on transposed data.
TEST(InterpreterTest, LstmBatchMajorLayoutMatchesSequenceMajor) {
  const int64_t steps = 3, batch = 2, input = 2, hidden = 2;
  std::vector<float> x_sequence_major(static_cast<size_t>(steps * batch * input));
  for (size_t i = 0; i < x_sequence_major.size(); ++i)
    x_sequence_major[i] = 0.1f * static_cast<float>(i) - 0.5f;
  std::vector<float> x_batch_major(x_sequence_major.size());
  for (int64_t t = 0; t < steps; ++t) {
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t i = 0; i < input; ++i) {
        x_batch_major[static_cast<size_t>((b * steps + t) * input + i)] =
            x_sequence_major[static_cast<size_t>((t * batch + b) * input + i)];
      }
    }
  }
  std::vector<float> w(static_cast<size_t>(4 * hidden * input));
  std::vector<float> r(static_cast<size_t>(4 * hidden * hidden));
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.05f * static_cast<float>(i % 7) - 0.1f;
  for (size_t i = 0; i < r.size(); ++i) r[i] = 0.03f * static_cast<float>(i % 5) - 0.05f;
  Tensor w_tensor = Tensor::from_float({1, 4 * hidden, input}, w);
  Tensor r_tensor = Tensor::from_float({1, 4 * hidden, hidden}, r);
  Tensor x0 = Tensor::from_float({steps, batch, input}, x_sequence_major);
  Tensor x1 = Tensor::from_float({batch, steps, input}, x_batch_major);
  Node lstm = make_node("LSTM", "lstm", 3);
  lstm.set_attribute(Attribute::make_int("hidden_size", hidden));
  Result<std::vector<Tensor>> sequence_major = evaluate_node(lstm, 14, {&x0, &w_tensor, &r_tensor});
  lstm.set_attribute(Attribute::make_int("layout", 1));
  Result<std::vector<Tensor>> batch_major = evaluate_node(lstm, 14, {&x1, &w_tensor, &r_tensor});
  ASSERT_TRUE(sequence_major.is_ok()) << sequence_major.status().message();
  ASSERT_TRUE(batch_major.is_ok()) << batch_major.status().message();
  const Tensor& y0 = (*sequence_major)[0];  // [steps, 1, batch, hidden]
  const Tensor& y1 = (*batch_major)[0];     // [batch, steps, 1, hidden]
  EXPECT_EQ(y1.dims, (std::vector<int64_t>{batch, steps, 1, hidden}));
  for (int64_t t = 0; t < steps; ++t) {
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t j = 0; j < hidden; ++j) {
        EXPECT_EQ(y0.float_at((t * batch + b) * hidden + j),
                  y1.float_at((b * steps + t) * hidden + j));
      }
    }
  }
  EXPECT_EQ((*batch_major)[1].dims, (std::vector<int64_t>{batch, 1, hidden}));
  EXPECT_EQ(floats_of((*sequence_major)[1]), floats_of((*batch_major)[1]));  // 1 direction
  EXPECT_NE(y0.float_at(0), 0.0);
}

// x -> Add(x, w) -> Relu -> y, with w an initializer.
Model two_node_model() {
  Model model;
  model.opset_imports.push_back({"", 17});
  Graph& graph = model.graph;
  ValueId x = graph.add_value("x", TensorType::make(DType::kFloat32, {2, 2}));
  graph.add_graph_input(x);
  ValueId w = graph.add_initializer("w", Tensor::from_float({2}, {1.0f, -10.0f}));
  ValueId sum = graph.add_value("sum", TensorType::make(DType::kFloat32, {2, 2}));
  ValueId y = graph.add_value("y", TensorType::make(DType::kFloat32, {2, 2}));
  graph.add_node("Add", {x, w}, {sum}, "", "add");
  graph.add_node("Relu", {sum}, {y}, "", "relu");
  graph.add_graph_output(y);
  return model;
}

TEST(InterpreterTest, EvaluatesATwoNodeGraph) {
  Model model = two_node_model();
  std::map<std::string, Tensor> inputs;
  inputs["x"] = Tensor::from_float({2, 2}, {1, 2, 3, 20});
  Result<std::map<std::string, Tensor>> outputs = evaluate_graph(model, inputs);
  ASSERT_TRUE(outputs.is_ok()) << outputs.status().message();
  ASSERT_EQ(outputs->size(), 1u);
  const Tensor& y = outputs->at("y");
  EXPECT_EQ(y.dims, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(floats_of(y), (std::vector<double>{2, 0, 4, 10}));
}

TEST(InterpreterTest, GraphInputOfTheWrongTypeIsAnError) {
  Model model = two_node_model();
  std::map<std::string, Tensor> inputs;
  inputs["x"] = Tensor::from_float({2, 3}, {1, 2, 3, 4, 5, 6});
  Result<std::map<std::string, Tensor>> outputs = evaluate_graph(model, inputs);
  ASSERT_FALSE(outputs.is_ok());
  EXPECT_EQ(outputs.status().message(),
            "graph input \"x\" is given as f32[2,3] but the graph declares f32[2,2]; give a "
            "tensor of that type");
  inputs.clear();
  outputs = evaluate_graph(model, inputs);
  ASSERT_FALSE(outputs.is_ok());
  EXPECT_EQ(outputs.status().message(),
            "graph input \"x\" is not given; give a tensor of type f32[2,2]");
}

TEST(InterpreterTest, GraphWithAnOpaqueNodeFailsNamingTheNode) {
  Model model = two_node_model();
  Graph& graph = model.graph;
  ValueId y = graph.graph_outputs()[0];
  ValueId z = graph.add_value("z", TensorType::make(DType::kFloat32, {2, 2}));
  graph.add_node("CustomGelu", {y}, {z}, "com.example", "custom");
  graph.add_graph_output(z);
  std::map<std::string, Tensor> inputs;
  inputs["x"] = Tensor::from_float({2, 2}, {1, 2, 3, 4});
  Result<std::map<std::string, Tensor>> outputs = evaluate_graph(model, inputs);
  ASSERT_FALSE(outputs.is_ok());
  EXPECT_NE(outputs.status().message().find("node \"custom\" (CustomGelu): the op has no "
                                            "reference evaluation"),
            std::string::npos)
      << outputs.status().message();
}

}  // namespace
}  // namespace stitch::ir
