// --precision's products in the reference interpreter (ir/core/precision.h,
// ir::EvaluationOptions): TF32 rounding with ties away from zero, the operands of
// MatMul, Gemm and dense Conv rounded (grouped Conv and float16 untouched), and the
// 3xTF32 split recovering float32 accuracy.
#include "ir/core/precision.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ir/reference/interpreter.h"

namespace stitch::ir {
namespace {

TEST(PrecisionTest, Tf32RoundsToTenMantissaBitsTiesAway) {
  EXPECT_EQ(round_to_tf32(1.0f + 0x1p-11f), 1.0f + 0x1p-10f);  // a tie: away from zero
  EXPECT_EQ(round_to_tf32(-(1.0f + 0x1p-11f)), -(1.0f + 0x1p-10f));
  EXPECT_EQ(round_to_tf32(1.0f + 0x1p-12f), 1.0f);
  EXPECT_EQ(round_to_tf32(1.0f + 3 * 0x1p-12f), 1.0f + 0x1p-10f);
  EXPECT_TRUE(std::isinf(round_to_tf32(std::numeric_limits<float>::max())));  // carries over
  EXPECT_TRUE(std::isnan(round_to_tf32(std::nanf(""))));
  EXPECT_EQ(round_to_tf32(-INFINITY), -INFINITY);
  const float x = 0.1f;
  const Tf32Split split = split_tf32(x);
  EXPECT_EQ(split.big, round_to_tf32(x));
  EXPECT_EQ(split.small, round_to_tf32(x - split.big));
  EXPECT_LT(std::fabs(static_cast<double>(split.big) + split.small - x), std::fabs(x) * 0x1p-21);
}

TEST(PrecisionTest, NamesRoundTrip) {
  for (Precision p : {Precision::kFloat32, Precision::kTf32, Precision::kFloat32x3,
                      Precision::kBFloat16, Precision::kFloat16}) {
    EXPECT_EQ(precision_from_name(precision_name(p)), p);
  }
  EXPECT_FALSE(precision_from_name("int8").has_value());
}

Node node_of(const std::string& op, int64_t group = 0) {
  Node node;
  node.op_type = op;
  node.name = op;
  node.outputs = {0};
  if (group > 0) node.attributes.push_back(Attribute::make_int("group", group));
  return node;
}

double product(const Node& node, const std::vector<const Tensor*>& inputs, Precision p) {
  EvaluationOptions options;
  options.products = p;
  Result<std::vector<Tensor>> out = evaluate_node(node, 17, inputs, options);
  EXPECT_TRUE(out.is_ok()) << out.status().message();
  return out.is_ok() ? (*out)[0].float_at(0) : NAN;
}

// 1 x 1 products of a = 1 + 2^-12 + 2^-20 and b = 3: tf32 drops a's low bits, fp32x3
// keeps them to float32's precision.
TEST(PrecisionTest, MatMulGemmAndDenseConvRoundTheirOperands) {
  const float a = 1.0f + 0x1p-12f + 0x1p-20f;
  const Tensor lhs = Tensor::from_float({1, 1}, {a});
  const Tensor rhs = Tensor::from_float({1, 1}, {3.0f});
  for (const char* op : {"MatMul", "Gemm"}) {
    EXPECT_EQ(product(node_of(op), {&lhs, &rhs}, Precision::kFloat32), static_cast<float>(3.0 * a));
    EXPECT_EQ(product(node_of(op), {&lhs, &rhs}, Precision::kTf32), 3.0) << op;
    // bf16/fp16 change storage (ir/passes/reduced_precision.h), not float32 products.
    EXPECT_EQ(product(node_of(op), {&lhs, &rhs}, Precision::kBFloat16),
              static_cast<float>(3.0 * a));
    EXPECT_EQ(product(node_of(op), {&lhs, &rhs}, Precision::kFloat32x3),
              static_cast<float>(3.0 * a))
        << op;
  }
  const Tensor x = Tensor::from_float({1, 1, 1, 1}, {a});
  const Tensor w = Tensor::from_float({1, 1, 1, 1}, {3.0f});
  EXPECT_EQ(product(node_of("Conv"), {&x, &w}, Precision::kTf32), 3.0);
  // A grouped (here depthwise) Conv is a memory-bound stencil: float32 products.
  const Tensor x2 = Tensor::from_float({1, 2, 1, 1}, {a, a});
  const Tensor w2 = Tensor::from_float({2, 1, 1, 1}, {3.0f, 3.0f});
  EXPECT_EQ(product(node_of("Conv", 2), {&x2, &w2}, Precision::kTf32), static_cast<float>(3.0 * a));
}

}  // namespace
}  // namespace stitch::ir
