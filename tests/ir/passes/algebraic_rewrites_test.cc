// The algebraic pass beyond the golden tests: the folded Mul/Add chains are
// bit-exact on random inputs (the reason the pass folds only where exact), and the
// chains it refuses would not be.
#include "ir/passes/algebraic_rewrites.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <string>

#include "ir/core/verifier.h"
#include "ir/reference/interpreter.h"
#include "ir/text/text.h"

namespace stitch::ir {
namespace {

Model parse(const std::string& body) {
  Result<Model> parsed =
      parse_model("stitchopt.ir 1\nmodel ir_version=8 opsets={\"\":17}\n" + body, "test");
  STITCH_CHECK(parsed.is_ok()) << parsed.status().message();
  return parsed.value();
}

Tensor random_floats(DType dtype, std::vector<int64_t> dims, int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> distribution(-100.0f, 100.0f);
  Tensor tensor;
  tensor.dtype = dtype;
  tensor.dims = std::move(dims);
  tensor.bytes.resize(static_cast<size_t>(count * dtype_size(dtype)));
  for (int64_t i = 0; i < count; ++i) {
    float value = distribution(rng);
    if (dtype == DType::kFloat16) {
      uint16_t bits = float_to_half(value);
      std::memcpy(tensor.bytes.data() + i * 2, &bits, 2);
    } else {
      std::memcpy(tensor.bytes.data() + i * 4, &value, 4);
    }
  }
  return tensor;
}

// Runs the pass; returns whether it changed the model and whether the outputs
// before and after are bit-identical on `x`.
std::pair<bool, bool> run_and_compare(Model& model, const Tensor& x) {
  std::map<std::string, Tensor> inputs = {{"x", x}};
  Result<std::map<std::string, Tensor>> before = evaluate_graph(model, inputs);
  STITCH_CHECK(before.is_ok()) << before.status().message();
  PassContext context;
  context.default_opset = 17;
  Result<bool> changed = rewrite_algebraic(model.graph, context);
  STITCH_CHECK(changed.is_ok()) << changed.status().message();
  Status verified = verify(model);
  EXPECT_TRUE(verified.is_ok()) << verified.message();
  Result<std::map<std::string, Tensor>> after = evaluate_graph(model, inputs);
  STITCH_CHECK(after.is_ok()) << after.status().message();
  return {changed.value(), before->at("y").bytes == after->at("y").bytes};
}

TEST(AlgebraicRewriteTest, PowerOfTwoMulChainFoldsBitExactly) {
  Model model = parse(R"(graph "g" (%x: f32[64,3]) {
  %a: f32[3] = dense<f32[3]>[0.125, -4, 1024]
  %b: f32[] = dense<f32[]>[0.1]
  %t: f32[64,3] = Mul(%x, %a) {name="m1"}
  %y: f32[64,3] = Mul(%t, %b) {name="m2"}
  return %y
})");
  auto [changed, identical] =
      run_and_compare(model, random_floats(DType::kFloat32, {64, 3}, 192, 7));
  EXPECT_TRUE(changed);
  EXPECT_TRUE(identical);
  EXPECT_EQ(model.graph.num_nodes(), 1);
}

TEST(AlgebraicRewriteTest, Float16PowerOfTwoOuterConstantFoldsBitExactly) {
  Model model = parse(R"(graph "g" (%x: f16[256]) {
  %a: f16[] = dense<f16[]>[0.3]
  %b: f16[] = dense<f16[]>[0.5]
  %t: f16[256] = Mul(%a, %x) {name="m1"}
  %y: f16[256] = Mul(%b, %t) {name="m2"}
  return %y
})");
  auto [changed, identical] =
      run_and_compare(model, random_floats(DType::kFloat16, {256}, 256, 11));
  EXPECT_TRUE(changed);
  EXPECT_TRUE(identical);
}

TEST(AlgebraicRewriteTest, RefusesMulChainThatReassociationWouldChange) {
  const std::string body = R"(graph "g" (%x: f32[256]) {
  %a: f32[] = dense<f32[]>[3]
  %b: f32[] = dense<f32[]>[0.1]
  %t: f32[256] = Mul(%x, %a) {name="m1"}
  %y: f32[256] = Mul(%t, %b) {name="m2"}
  return %y
})";
  Model model = parse(body);
  Tensor x = random_floats(DType::kFloat32, {256}, 256, 3);
  auto [changed, identical] = run_and_compare(model, x);
  EXPECT_FALSE(changed);
  EXPECT_TRUE(identical);
  // Why: x * (3 * 0.1) rounds differently from (x * 3) * 0.1 for some x.
  bool some_differ = false;
  for (int64_t i = 0; i < 256; ++i) {
    float value = x.element<float>(i);
    some_differ = some_differ || (value * 3.0f) * 0.1f != value * (3.0f * 0.1f);
  }
  EXPECT_TRUE(some_differ);
}

TEST(AlgebraicRewriteTest, NeutralElementKeepsGraphOutputName) {
  Model model = parse(R"(graph "g" (%x: f32[4]) {
  %one: f32[1] = dense<f32[1]>[1]
  %e: f32[4] = Exp(%x) {name="exp"}
  %y: f32[4] = Mul(%e, %one) {name="mul"}
  %z: f32[4] = Relu(%e) {name="relu"}
  return %y, %z
})");
  auto [changed, identical] = run_and_compare(model, random_floats(DType::kFloat32, {4}, 4, 5));
  EXPECT_TRUE(changed);
  EXPECT_TRUE(identical);
  // Exp now produces %y, which Relu reads; %e and %one are gone.
  EXPECT_EQ(print_model(model), R"(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "g" (%x: f32[4]) {
  %y: f32[4] = Exp(%x) {name="exp"}
  %z: f32[4] = Relu(%y) {name="relu"}
  return %y, %z
}
)");
}

}  // namespace
}  // namespace stitch::ir
