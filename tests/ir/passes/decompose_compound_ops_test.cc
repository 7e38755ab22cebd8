// Numerical equality of every decomposition of the decompose pass: the
// original compound node and the opened graph, both evaluated by the reference
// interpreter on the same inputs (random, or the values a case gives), agree within
// |a - b| <= tol * max(|b|, 1) (float32: 1e-5; float16: 1e-2); a NaN or an infinity
// must be matched by the same.
#include "ir/passes/decompose_compound_ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "ir/core/verifier.h"
#include "ir/reference/interpreter.h"
#include "ir/text/text.h"

namespace stitch::ir {
namespace {

struct DecomposeCase {
  std::string name;
  std::string model;  // textual IR body: header and model lines are added
  int64_t opset;
  double tolerance = 1e-5;
  // Values of graph inputs, repeated to fill the input's shape; the others random.
  std::map<std::string, std::vector<double>> inputs = {};
};

std::ostream& operator<<(std::ostream& out, const DecomposeCase& test_case) {
  return out << test_case.name;
}

Tensor repeated_tensor(const TensorType& type, const std::vector<double>& pattern) {
  std::vector<double> values(static_cast<size_t>(type.num_elements()));
  for (size_t i = 0; i < values.size(); ++i) values[i] = pattern[i % pattern.size()];
  return Tensor::from_doubles(type.dtype, type.dims, values);
}

Tensor random_tensor(const TensorType& type, std::mt19937& rng, bool positive) {
  std::uniform_real_distribution<float> distribution(positive ? 0.5f : -3.0f,
                                                     positive ? 2.0f : 3.0f);
  std::vector<double> values(static_cast<size_t>(type.num_elements()));
  for (double& value : values) value = distribution(rng);
  return Tensor::from_doubles(type.dtype, type.dims, values);
}

const std::vector<std::string> kCompoundOps = {"LayerNormalization",
                                               "Softmax",
                                               "LogSoftmax",
                                               "Gelu",
                                               "BatchNormalization",
                                               "InstanceNormalization",
                                               "GroupNormalization",
                                               "HardSigmoid",
                                               "HardSwish",
                                               "Softplus",
                                               "Sum",
                                               "Mean",
                                               "Gemm",
                                               "GlobalAveragePool",
                                               "Conv"};

class DecomposeNumericsTest : public testing::TestWithParam<DecomposeCase> {};

TEST_P(DecomposeNumericsTest, MatchesTheCompoundOp) {
  const DecomposeCase& test_case = GetParam();
  std::string text =
      "stitchopt.ir 1\nmodel ir_version=9 opsets={\"\":" + std::to_string(test_case.opset) + "}\n" +
      test_case.model;
  Result<Model> parsed = parse_model(text, test_case.name);
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().message();
  Model original = parsed.value();
  // Named, so the created nodes' names and origins can be checked.
  for (NodeId id : original.graph.node_ids()) {
    original.graph.node(id).name = "compound";
    original.graph.node(id).origin = {"compound"};
  }
  ASSERT_TRUE(verify(original).is_ok()) << verify(original).message();

  std::mt19937 rng(1234);
  std::map<std::string, Tensor> inputs;
  for (ValueId input : original.graph.graph_inputs()) {
    const Value& value = original.graph.value(input);
    if (auto given = test_case.inputs.find(value.name); given != test_case.inputs.end()) {
      inputs.emplace(value.name, repeated_tensor(value.type, given->second));
      continue;
    }
    bool positive = value.name.rfind("var", 0) == 0;  // variances must be > 0
    inputs.emplace(value.name, random_tensor(value.type, rng, positive));
  }

  Model opened = original;
  PassContext context;
  context.default_opset = test_case.opset;
  Result<bool> changed = decompose_compound_ops(opened.graph, context);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(changed.value());
  Status verified = verify(opened);
  ASSERT_TRUE(verified.is_ok()) << verified.message() << "\n" << print_model(opened);
  for (NodeId id : opened.graph.node_ids()) {
    const Node& node = opened.graph.node(id);
    EXPECT_EQ(std::find(kCompoundOps.begin(), kCompoundOps.end(), node.op_type), kCompoundOps.end())
        << node.display_name() << " left after decomposition";
    EXPECT_EQ(node.origin, std::vector<std::string>{"compound"}) << node.display_name();
    EXPECT_EQ(node.name.rfind("compound/", 0), 0u) << node.display_name();
    // The inputs' shapes are static, so every created value's must be too: the
    // planner and the emitter need them.
    for (ValueId output : node.outputs) {
      EXPECT_TRUE(opened.graph.value(output).type.is_static())
          << node.display_name() << ": " << to_string(opened.graph.value(output).type);
    }
  }

  Result<std::map<std::string, Tensor>> expected = evaluate_graph(original, inputs);
  ASSERT_TRUE(expected.is_ok()) << expected.status().message();
  Result<std::map<std::string, Tensor>> actual = evaluate_graph(opened, inputs);
  ASSERT_TRUE(actual.is_ok()) << actual.status().message() << "\n" << print_model(opened);
  ASSERT_EQ(expected->size(), actual->size());
  for (const auto& [name, want] : expected.value()) {
    ASSERT_TRUE(actual->contains(name)) << name;
    const Tensor& got = actual->at(name);
    ASSERT_EQ(got.dtype, want.dtype) << name;
    ASSERT_EQ(got.dims, want.dims) << name;
    double worst = 0.0;
    for (int64_t i = 0; i < want.num_elements(); ++i) {
      double a = got.float_at(i);
      double b = want.float_at(i);
      if ((std::isnan(a) && std::isnan(b)) || (std::isinf(b) && a == b)) continue;
      double error = std::fabs(a - b) / std::max(std::fabs(b), 1.0);
      // A NaN error must fail: it sticks, later elements do not replace it.
      if (std::isnan(error) || error > worst) worst = error;
    }
    EXPECT_LE(worst, test_case.tolerance) << "output " << name;
  }
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// "%x, %x, ..., %x": `count` operands for a wide Sum.
std::string repeated_operand(const std::string& operand, int count) {
  std::string operands = operand;
  for (int i = 1; i < count; ++i) operands += ", " + operand;
  return operands;
}

const std::string kBatchNormConstants = R"(
  %s: f32[3] = dense<f32[3]>[0.5, -1.25, 2]
  %b: f32[3] = dense<f32[3]>[0.1, 0, -0.7]
  %m: f32[3] = dense<f32[3]>[0.3, -0.2, 1]
  %v: f32[3] = dense<f32[3]>[1.5, 0.25, 3])";

INSTANTIATE_TEST_SUITE_P(
    Decompositions, DecomposeNumericsTest,
    testing::Values(
        DecomposeCase{"softmax_13_axis1", R"(graph "g" (%x: f32[2,3,5]) {
  %y: f32[2,3,5] = Softmax(%x) {axis=1}
  return %y
})",
                      13},
        DecomposeCase{"softmax_11_coerced", R"(graph "g" (%x: f32[2,3,5]) {
  %y: f32[2,3,5] = Softmax(%x)
  return %y
})",
                      11},
        DecomposeCase{"softmax_18_last", R"(graph "g" (%x: f32[4,7]) {
  %y: f32[4,7] = Softmax(%x) {axis=-1}
  return %y
})",
                      18},
        DecomposeCase{"log_softmax_11_axis0", R"(graph "g" (%x: f32[3,4]) {
  %y: f32[3,4] = LogSoftmax(%x) {axis=0}
  return %y
})",
                      11},
        DecomposeCase{"log_softmax_18", R"(graph "g" (%x: f32[2,5,3]) {
  %y: f32[2,5,3] = LogSoftmax(%x) {axis=1}
  return %y
})",
                      18},
        DecomposeCase{"layer_norm_17_bias",
                      R"(graph "g" (%x: f32[2,3,8], %scale: f32[8], %bias: f32[8]) {
  %y: f32[2,3,8] = LayerNormalization(%x, %scale, %bias)
  return %y
})",
                      17},
        DecomposeCase{"layer_norm_18_stats", R"(graph "g" (%x: f32[2,3,4], %scale: f32[3,4]) {
  %y: f32[2,3,4], %mean: f32[2,1,1], %inv: f32[2,1,1] = LayerNormalization(%x, %scale) {axis=1, epsilon=0.01}
  return %y, %mean, %inv
})",
                      18},
        DecomposeCase{"layer_norm_17_f16_stash",
                      R"(graph "g" (%x: f16[2,16], %scale: f16[16], %bias: f16[16]) {
  %y: f16[2,16] = LayerNormalization(%x, %scale, %bias)
  return %y
})",
                      17, 1e-2},
        DecomposeCase{"gelu_erf", R"(graph "g" (%x: f32[4,5]) {
  %y: f32[4,5] = Gelu(%x)
  return %y
})",
                      20},
        DecomposeCase{"gelu_tanh", R"(graph "g" (%x: f32[4,5]) {
  %y: f32[4,5] = Gelu(%x) {approximate="tanh"}
  return %y
})",
                      20},
        DecomposeCase{"batch_norm_constants",
                      R"(graph "g" (%x: f32[2,3,4,4]) {)" + kBatchNormConstants + R"(
  %y: f32[2,3,4,4] = BatchNormalization(%x, %s, %b, %m, %v) {epsilon=0.001}
  return %y
})",
                      15},
        DecomposeCase{
            "batch_norm_inputs_9",
            R"(graph "g" (%x: f32[2,3,5], %s: f32[3], %b: f32[3], %m: f32[3], %var: f32[3]) {
  %y: f32[2,3,5] = BatchNormalization(%x, %s, %b, %m, %var)
  return %y
})",
            9},
        DecomposeCase{"instance_norm", R"(graph "g" (%x: f32[2,3,4,5], %s: f32[3], %b: f32[3]) {
  %y: f32[2,3,4,5] = InstanceNormalization(%x, %s, %b) {epsilon=0.0001}
  return %y
})",
                      13},
        DecomposeCase{"group_norm_18_per_group",
                      R"(graph "g" (%x: f32[2,4,3,3], %s: f32[2], %b: f32[2]) {
  %y: f32[2,4,3,3] = GroupNormalization(%x, %s, %b) {num_groups=2}
  return %y
})",
                      18},
        DecomposeCase{"group_norm_21_per_channel", R"(graph "g" (%x: f32[2,6,5]) {
  %s: f32[6] = dense<f32[6]>[1, 2, 0.5, -1, 3, 0.25]
  %b: f32[6] = dense<f32[6]>[0, 1, -1, 0.5, 2, -3]
  %y: f32[2,6,5] = GroupNormalization(%x, %s, %b) {num_groups=3, epsilon=0.001}
  return %y
})",
                      21},
        DecomposeCase{"hard_sigmoid", R"(graph "g" (%x: f32[3,4]) {
  %y: f32[3,4] = HardSigmoid(%x) {alpha=0.3, beta=0.4}
  return %y
})",
                      13},
        DecomposeCase{"hard_swish", R"(graph "g" (%x: f32[3,4]) {
  %y: f32[3,4] = HardSwish(%x)
  return %y
})",
                      14},
        DecomposeCase{"softplus", R"(graph "g" (%x: f32[10]) {
  %y: f32[10] = Softplus(%x)
  return %y
})",
                      13},
        DecomposeCase{"sum_of_four",
                      R"(graph "g" (%a: f32[2,3], %b: f32[3], %c: f32[1], %d: f32[2,1]) {
  %y: f32[2,3] = Sum(%a, %b, %c, %d)
  return %y
})",
                      13},
        DecomposeCase{"mean_of_three", R"(graph "g" (%a: f32[2,3], %b: f32[2,3], %c: f32[3]) {
  %y: f32[2,3] = Mean(%a, %b, %c)
  return %y
})",
                      13},
        DecomposeCase{"gemm_all_attributes", R"(graph "g" (%a: f32[3,2], %b: f32[4,3], %c: f32[4]) {
  %y: f32[2,4] = Gemm(%a, %b, %c) {alpha=1.5, beta=-0.5, transA=1, transB=1}
  return %y
})",
                      13},
        DecomposeCase{"global_average_pool_2d", R"(graph "g" (%x: f32[2,3,4,5]) {
  %y: f32[2,3,1,1] = GlobalAveragePool(%x)
  return %y
})",
                      13},
        DecomposeCase{"global_average_pool_1d_opset_18", R"(graph "g" (%x: f32[2,3,7]) {
  %y: f32[2,3,1] = GlobalAveragePool(%x)
  return %y
})",
                      18},
        DecomposeCase{"global_average_pool_f16", R"(graph "g" (%x: f16[1,4,3,3]) {
  %y: f16[1,4,1,1] = GlobalAveragePool(%x)
  return %y
})",
                      13, 1e-2},
        // Squeeze-excitation's 1x1 convs over one pixel: MatMuls.
        DecomposeCase{"pixel_conv_bias", R"(graph "g" (%x: f32[2,6,1,1]) {
  %w: f32[4,6,1,1] = dense<f32[4,6,1,1]>[-1.25, 0.5, -0.5, 1.25, 0.25, -0.75, 1.0, 0.0, -1.0, 0.75, -0.25, -1.25, 0.5, -0.5, 1.25, 0.25, -0.75, 1.0, 0.0, -1.0, 0.75, -0.25, -1.25, 0.5]
  %b: f32[4] = dense<f32[4]>[0.5, -1, 0.25, 2]
  %y: f32[2,4,1,1] = Conv(%x, %w, %b) {kernel_shape=[1,1]}
  return %y
})",
                      17},
        DecomposeCase{"pixel_conv_1d_strided", R"(graph "g" (%x: f32[1,3,1]) {
  %w: f32[5,3,1] = dense<f32[5,3,1]>[-1.3333333333333333, 0.3333333333333333, -1.0, 0.6666666666666666, -0.6666666666666666, 1.0, -0.3333333333333333, 1.3333333333333333, 0.0, -1.3333333333333333, 0.3333333333333333, -1.0, 0.6666666666666666, -0.6666666666666666, 1.0]
  %y: f32[1,5,1] = Conv(%x, %w) {strides=[2]}
  return %y
})",
                      13},
        DecomposeCase{"gemm_constant_weight_no_c", R"(graph "g" (%a: f32[2,3]) {
  %w: f32[2,3] = dense<f32[2,3]>[1, -2, 0.5, 3, 0.25, -1]
  %y: f32[2,2] = Gemm(%a, %w) {transB=1}
  return %y
})",
                      11},
        // Values far from the random range: overflow, NaN, cancellation, drift.
        DecomposeCase{"softplus_large_and_nan",
                      R"(graph "g" (%x: f32[8]) {
  %y: f32[8] = Softplus(%x)
  return %y
})",
                      13,
                      1e-5,
                      {{"x", {1, 50, 100, 1000, -1000, -20, kNaN, kInf}}}},
        DecomposeCase{"hard_sigmoid_nan_and_inf",
                      R"(graph "g" (%x: f32[4]) {
  %y: f32[4] = HardSigmoid(%x) {alpha=-0.83, beta=1.0}
  return %y
})",
                      21,
                      1e-5,
                      {{"x", {kNaN, -2, kInf, -kInf}}}},
        DecomposeCase{"hard_sigmoid_f16_alpha_past_f16",
                      R"(graph "g" (%x: f16[4]) {
  %y: f16[4] = HardSigmoid(%x) {alpha=100000.0, beta=0.5}
  return %y
})",
                      13,
                      1e-2,
                      {{"x", {0, 1, -1, 0.5}}}},
        DecomposeCase{
            "instance_norm_f16_square_past_f16",
            R"(graph "g" (%x: f16[2,2,16,1], %s: f16[2], %b: f16[2]) {
  %y: f16[2,2,16,1] = InstanceNormalization(%x, %s, %b)
  return %y
})",
            15,
            1e-2,
            {{"x", {-300, 250, 0, 3, -8, 500, 120, -1}}, {"s", {1, -2}}, {"b", {0.5, 3}}}},
        DecomposeCase{"layer_norm_f16_scale_bias_cancel",
                      R"(graph "g" (%x: f16[3,2], %scale: f16[2], %bias: f16[2]) {
  %y: f16[3,2] = LayerNormalization(%x, %scale, %bias)
  return %y
})",
                      17,
                      1e-2,
                      {{"x", {0, 1}}, {"scale", {1000}}, {"bias", {-999}}}},
        DecomposeCase{"layer_norm_stash_bf16_stats",
                      R"(graph "g" (%x: f32[2,4], %scale: f32[4]) {
  %y: f32[2,4], %mean: bf16[2,1], %inv: bf16[2,1] = LayerNormalization(%x, %scale) {stash_type=16}
  return %y, %mean, %inv
})",
                      17,
                      1e-2,
                      {{"x", {1000.5, 1000, 999.5, 1000}}}},
        DecomposeCase{"group_norm_21_stash_f16_square_past_f16",
                      R"(graph "g" (%x: f32[1,4,2,2]) {
  %s: f32[4] = dense<f32[4]>[1, 2, 0.5, -1]
  %b: f32[4] = dense<f32[4]>[0, 1, -1, 0.5]
  %y: f32[1,4,2,2] = GroupNormalization(%x, %s, %b) {num_groups=2, stash_type=10}
  return %y
})",
                      21,
                      1e-2,
                      {{"x", {-300, 250, 0, 3, -8, 500, 120, -1}}}},
        DecomposeCase{"layer_norm_f64_square_past_f32",
                      R"(graph "g" (%x: f64[2,4], %scale: f64[4]) {
  %y: f64[2,4], %mean: f32[2,1], %inv: f32[2,1] = LayerNormalization(%x, %scale)
  return %y, %mean, %inv
})",
                      17,
                      1e-5,
                      {{"x", {1e30, -1e30, 3e29, 1}}}},
        DecomposeCase{"layer_norm_f64_stash_f32",
                      R"(graph "g" (%x: f64[8,8], %scale: f64[8]) {
  %y: f64[8,8] = LayerNormalization(%x, %scale) {axis=0, epsilon=0.5}
  return %y
})",
                      18},
        DecomposeCase{"batch_norm_f16_offset_past_f16",
                      R"(graph "g" (%x: f16[1,2,4]) {
  %s: f16[2] = dense<f16[2]>[2, 0.5]
  %b: f16[2] = dense<f16[2]>[0, 1]
  %m: f16[2] = dense<f16[2]>[60000, -60000]
  %v: f16[2] = dense<f16[2]>[1, 4]
  %y: f16[1,2,4] = BatchNormalization(%x, %s, %b, %m, %v)
  return %y
})",
                      15,
                      1e-2,
                      {{"x", {60000, 59968, 60032, 60000, -60000, -59968, -60032, -60000}}}},
        DecomposeCase{
            "batch_norm_f16_inputs_past_f16",
            R"(graph "g" (%x: f16[1,2,4], %s: f16[2], %b: f16[2], %m: f16[2], %var: f16[2]) {
  %y: f16[1,2,4] = BatchNormalization(%x, %s, %b, %m, %var)
  return %y
})",
            15,
            1e-2,
            {{"x", {60000, 59968, 60032, 60000, 1, 2, 3, 4}},
             {"s", {2, 1}},
             {"b", {0, 1}},
             {"m", {60000, 2}},
             {"var", {1, 4}}}},
        DecomposeCase{"group_norm_18_f16_square_past_f16",
                      R"(graph "g" (%x: f16[1,4,2,2], %s: f16[2], %b: f16[2]) {
  %y: f16[1,4,2,2] = GroupNormalization(%x, %s, %b) {num_groups=2}
  return %y
})",
                      18,
                      1e-2,
                      {{"x", {-300, 250, 0, 3, -8, 500, 120, -1}}}},
        DecomposeCase{"group_norm_21_zero_batch", R"(graph "g" (%x: f32[0,4,2,2]) {
  %s: f32[4] = dense<f32[4]>[1, 2, 0.5, -1]
  %b: f32[4] = dense<f32[4]>[0, 1, -1, 0.5]
  %y: f32[0,4,2,2] = GroupNormalization(%x, %s, %b) {num_groups=2}
  return %y
})",
                      21},
        DecomposeCase{"sum_f16_of_1000_drifts",
                      R"(graph "g" (%x: f16[2]) {
  %y: f16[2] = Sum()" + repeated_operand("%x", 1000) +
                          R"()
  return %y
})",
                      13,
                      1e-2,
                      {{"x", {5, 0.1}}}},
        DecomposeCase{
            "sum_bf16_of_five_rounds_once",
            R"(graph "g" (%a: bf16[1], %b: bf16[1], %c: bf16[1], %d: bf16[1], %e: bf16[1]) {
  %y: bf16[1] = Sum(%a, %b, %c, %d, %e)
  return %y
})",
            13,
            1e-2,
            {{"a", {1}},
             {"b", {0.00390625}},
             {"c", {0.00390625}},
             {"d", {0.00390625}},
             {"e", {0.00390625}}}},
        DecomposeCase{"mean_f16_partial_sum_past_f16",
                      R"(graph "g" (%a: f16[2], %b: f16[2]) {
  %y: f16[2] = Mean(%a, %b)
  return %y
})",
                      13,
                      1e-2,
                      {{"a", {60000, -60000}}, {"b", {60000, -65504}}}},
        // Stay in float16 (the header says why) and still agree.
        DecomposeCase{"softmax_f16_extremes",
                      R"(graph "g" (%x: f16[2,4]) {
  %y: f16[2,4] = Softmax(%x)
  return %y
})",
                      13,
                      1e-2,
                      {{"x", {60000, -60000, 0, 1, 65504, 65504, -65504, 0}}}},
        DecomposeCase{"log_softmax_f16_extremes",
                      R"(graph "g" (%x: f16[2,4]) {
  %y: f16[2,4] = LogSoftmax(%x)
  return %y
})",
                      13,
                      1e-2,
                      {{"x", {60000, -60000, 0, 1, 65504, 65504, -65504, 0}}}},
        DecomposeCase{"gelu_tanh_f16_cube_past_f16",
                      R"(graph "g" (%x: f16[6]) {
  %y: f16[6] = Gelu(%x) {approximate="tanh"}
  return %y
})",
                      20,
                      1e-2,
                      {{"x", {-41, 41, 300, -300, 65504, -3}}}},
        DecomposeCase{"hard_swish_f16_extremes",
                      R"(graph "g" (%x: f16[5]) {
  %y: f16[5] = HardSwish(%x)
  return %y
})",
                      14,
                      1e-2,
                      {{"x", {65504, -65504, 3, -3, kNaN}}}}),
    [](const testing::TestParamInfo<DecomposeCase>& info) { return info.param.name; });

}  // namespace
}  // namespace stitch::ir
