// ir::reduce_precision (--precision bf16 | fp16): which nodes store the reduced type,
// which keep float32 and why, where Casts go, weights converted once, graph outputs
// keeping their types and names, fp16's range rule; the rewritten model verifies and
// evaluates close to the float32 one.
#include "ir/passes/reduced_precision.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "ir/core/verifier.h"
#include "ir/reference/interpreter.h"
#include "ir/text/text.h"

namespace stitch::ir {
namespace {

constexpr const char* kModel = R"(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "g" (%x: f32[2,4]) {
  %w: f32[4,3] = dense<f32[4,3]>[0.5, -1.25, 2, 0.1, 0.2, 0.3, -0.7, 1.5, 0.01, 3, -2, 0.25]
  %b: f32[3] = dense<f32[3]>[1, 2, 3]
  %axes: i64[1] = dense<i64[1]>[1]
  %m: f32[2,3] = MatMul(%x, %w) {name="mm"}
  %a: f32[2,3] = Add(%m, %b) {name="bias"}
  %r: f32[2,3] = Relu(%a) {name="relu"}
  %s: f32[2] = ReduceSum(%r, %axes) {name="sum", keepdims=0}
  %e: f32[2,3] = Exp(%r) {name="exp"}
  return %s, %e
}
)";

Model parsed() {
  Result<Model> model = parse_model(kModel, "reduced_precision_test");
  EXPECT_TRUE(model.is_ok()) << model.status().message();
  return model.is_ok() ? std::move(model).value() : Model{};
}

DType dtype_of(const Model& model, const std::string& name) {
  return model.graph.value(*model.graph.find_value(name)).type.dtype;
}

const Node& producer_of(const Model& model, const std::string& name) {
  return model.graph.node(model.graph.value(*model.graph.find_value(name)).producer);
}

std::map<std::string, std::string> kept_of(const ReducedPrecisionResult& result) {
  std::map<std::string, std::string> kept;
  for (const KeptFloat32Value& value : result.kept) kept[value.value] = value.rule;
  return kept;
}

TEST(ReducedPrecisionTest, Bfloat16StoresActivationsAndWeightsKeepsStatistics) {
  Model model = parsed();
  Model float32 = model;
  ReducedPrecisionOptions options;
  options.reduced = DType::kBFloat16;
  Result<ReducedPrecisionResult> result = reduce_precision(model, options);
  ASSERT_TRUE(result.is_ok()) << result.status().message();
  ASSERT_TRUE(verify(model).is_ok()) << verify(model).message();
  for (const char* name : {"m", "a", "r"}) EXPECT_EQ(dtype_of(model, name), DType::kBFloat16);
  // The graph keeps its interface: x and both outputs float32, under their names.
  EXPECT_EQ(dtype_of(model, "x"), DType::kFloat32);
  EXPECT_EQ(dtype_of(model, "s"), DType::kFloat32);
  EXPECT_EQ(dtype_of(model, "e"), DType::kFloat32);
  EXPECT_EQ(producer_of(model, "e").op_type, "Cast");  // Exp writes bf16, a Cast the output
  EXPECT_EQ(producer_of(model, "s").op_type, "ReduceSum");
  EXPECT_EQ(result->converted_weights, 2);  // w and b, copied as bf16
  EXPECT_EQ(result->converted_nodes, 4);    // MatMul, Add, Relu, Exp
  // x -> bf16, r -> f32 for the ReduceSum, Exp's bf16 result -> the f32 output.
  EXPECT_EQ(result->casts, 3);
  const std::map<std::string, std::string> kept = kept_of(*result);
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_NE(kept.at("s").find("a reduction"), std::string::npos);
  EXPECT_FALSE(model.graph.find_value("w").has_value()) << "the float32 weight is gone";

  std::map<std::string, Tensor> inputs = {
      {"x", Tensor::from_float({2, 4}, {0.3f, -0.2f, 0.9f, 0.5f, -1.0f, 0.25f, 0.6f, 0.1f})}};
  Result<std::map<std::string, Tensor>> expected = evaluate_graph(float32, inputs);
  Result<std::map<std::string, Tensor>> got = evaluate_graph(model, inputs);
  ASSERT_TRUE(expected.is_ok() && got.is_ok());
  for (const char* name : {"s", "e"}) {
    for (int64_t i = 0; i < expected->at(name).num_elements(); ++i) {
      const double want = expected->at(name).float_at(i);
      EXPECT_NEAR(got->at(name).float_at(i), want, 2e-2 * std::fabs(want) + 1e-3) << name << i;
    }
  }
}

TEST(ReducedPrecisionTest, Float16KeepsRangeOpsAndWhatWouldOverflow) {
  Model model = parsed();
  ReducedPrecisionOptions options;
  options.reduced = DType::kFloat16;
  options.max_abs[*model.graph.find_value("a")] = 1e5;  // the bias add overflows float16
  Result<ReducedPrecisionResult> result = reduce_precision(model, options);
  ASSERT_TRUE(result.is_ok()) << result.status().message();
  ASSERT_TRUE(verify(model).is_ok()) << verify(model).message();
  EXPECT_EQ(dtype_of(model, "m"), DType::kFloat16);
  EXPECT_EQ(dtype_of(model, "a"), DType::kFloat32);  // kept: range
  EXPECT_EQ(dtype_of(model, "r"), DType::kFloat16);
  EXPECT_EQ(producer_of(model, "e").op_type, "Exp");  // kept: Exp under fp16
  const std::map<std::string, std::string> kept = kept_of(*result);
  EXPECT_NE(kept.at("a").find("max |x| = 1e+05"), std::string::npos) << kept.at("a");
  EXPECT_NE(kept.at("e").find("Exp under fp16"), std::string::npos);
  EXPECT_NE(kept.at("s").find("a reduction"), std::string::npos);
}

// --io-precision reduced: x and both outputs take bf16 under their names; the kept
// ReduceSum's output is written by a Cast to bf16, Exp's converted output directly; an
// input out of range by the calibration keeps float32 and says why.
TEST(ReducedPrecisionTest, ReducedIoGivesGraphInputsAndOutputsTheReducedType) {
  Model model = parsed();
  Model float32 = model;
  ReducedPrecisionOptions options;
  options.reduced = DType::kBFloat16;
  options.reduced_io = true;
  Result<ReducedPrecisionResult> result = reduce_precision(model, options);
  ASSERT_TRUE(result.is_ok()) << result.status().message();
  ASSERT_TRUE(verify(model).is_ok()) << verify(model).message();
  for (const char* name : {"x", "s", "e", "m", "r"}) {
    EXPECT_EQ(dtype_of(model, name), DType::kBFloat16) << name;
  }
  EXPECT_EQ(producer_of(model, "e").op_type, "Exp");  // stored bf16 directly
  const Node& cast = producer_of(model, "s");
  EXPECT_EQ(cast.op_type, "Cast");
  EXPECT_EQ(model.graph.node(model.graph.value(cast.inputs[0]).producer).op_type, "ReduceSum");
  EXPECT_EQ(result->reduced_io, 3);  // x, s, e
  // r -> f32 for the ReduceSum, its f32 sum -> the bf16 output.
  EXPECT_EQ(result->casts, 2);
  const std::vector<ValueId>& outputs = model.graph.graph_outputs();
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_EQ(model.graph.value(outputs[0]).name, "s");
  EXPECT_EQ(model.graph.value(outputs[1]).name, "e");

  const std::vector<float> x = {0.3f, -0.2f, 0.9f, 0.5f, -1.0f, 0.25f, 0.6f, 0.1f};
  std::vector<double> rounded(x.begin(), x.end());
  Result<std::map<std::string, Tensor>> expected =
      evaluate_graph(float32, {{"x", Tensor::from_float({2, 4}, x)}});
  Result<std::map<std::string, Tensor>> got =
      evaluate_graph(model, {{"x", Tensor::from_doubles(DType::kBFloat16, {2, 4}, rounded)}});
  ASSERT_TRUE(expected.is_ok() && got.is_ok()) << got.status().message();
  for (const char* name : {"s", "e"}) {
    EXPECT_EQ(got->at(name).dtype, DType::kBFloat16);
    for (int64_t i = 0; i < expected->at(name).num_elements(); ++i) {
      const double want = expected->at(name).float_at(i);
      EXPECT_NEAR(got->at(name).float_at(i), want, 3e-2 * std::fabs(want) + 1e-3) << name << i;
    }
  }

  Model fp16 = parsed();
  ReducedPrecisionOptions out_of_range;
  out_of_range.reduced = DType::kFloat16;
  out_of_range.reduced_io = true;
  out_of_range.max_abs[*fp16.graph.find_value("x")] = 1e6;
  Result<ReducedPrecisionResult> kept = reduce_precision(fp16, out_of_range);
  ASSERT_TRUE(kept.is_ok());
  EXPECT_EQ(dtype_of(fp16, "x"), DType::kFloat32);
  EXPECT_NE(kept_of(*kept).at("x").find("despite --io-precision reduced"), std::string::npos);
  EXPECT_TRUE(verify(fp16).is_ok());
}

// A Cast of an integer tensor to float32 (a mask) casts to the reduced type instead; a
// Cast from a float type to float32 is what the model asks for and keeps float32.
TEST(ReducedPrecisionTest, CastsFromIntegersTakeTheReducedType) {
  Result<Model> parsed_model = parse_model(R"(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "g" (%ids: i64[2,3], %h: f16[2,3]) {
  %c: f32[2,3] = Cast(%ids) {name="mask", to=1}
  %f: f32[2,3] = Cast(%h) {name="widen", to=1}
  %y: f32[2,3] = Mul(%c, %f) {name="mul"}
  return %y
}
)",
                                           "casts");
  ASSERT_TRUE(parsed_model.is_ok()) << parsed_model.status().message();
  Model model = std::move(parsed_model).value();
  ReducedPrecisionOptions options;
  options.reduced = DType::kBFloat16;
  Result<ReducedPrecisionResult> result = reduce_precision(model, options);
  ASSERT_TRUE(result.is_ok()) << result.status().message();
  ASSERT_TRUE(verify(model).is_ok()) << verify(model).message();
  EXPECT_EQ(dtype_of(model, "c"), DType::kBFloat16);
  EXPECT_EQ(producer_of(model, "c").int_attribute("to", -1),
            static_cast<int64_t>(DType::kBFloat16));
  EXPECT_EQ(dtype_of(model, "f"), DType::kFloat32);
  EXPECT_NE(kept_of(*result).at("f").find("a Cast from a float type"), std::string::npos);
}

// Values too small for float16's normal numbers keep float32 (they would be subnormal or
// flushed), an all-zero one is converted (zero is exact), and bfloat16, with float32's
// exponent range, converts both.
TEST(ReducedPrecisionTest, WhatWouldUnderflowFloat16KeepsFloat32) {
  for (DType reduced : {DType::kFloat16, DType::kBFloat16}) {
    Model model = parsed();
    ReducedPrecisionOptions options;
    options.reduced = reduced;
    options.max_abs[*model.graph.find_value("m")] = 3e-8;  // below float16's subnormals
    options.max_abs[*model.graph.find_value("a")] = 2e-4;  // normal, but under 4 x 6.1e-5
    options.max_abs[*model.graph.find_value("r")] = 0;     // all zero
    Result<ReducedPrecisionResult> result = reduce_precision(model, options);
    ASSERT_TRUE(result.is_ok()) << result.status().message();
    ASSERT_TRUE(verify(model).is_ok()) << verify(model).message();
    const std::map<std::string, std::string> kept = kept_of(*result);
    if (reduced == DType::kBFloat16) {
      EXPECT_EQ(dtype_of(model, "m"), DType::kBFloat16);
      EXPECT_EQ(dtype_of(model, "a"), DType::kBFloat16);
      EXPECT_EQ(kept.count("m") + kept.count("a"), 0u);
    } else {
      EXPECT_EQ(dtype_of(model, "m"), DType::kFloat32);
      EXPECT_EQ(dtype_of(model, "a"), DType::kFloat32);
      EXPECT_NE(kept.at("m").find("max |x| = 3e-08"), std::string::npos) << kept.at("m");
      EXPECT_NE(kept.at("a").find("flush to zero"), std::string::npos) << kept.at("a");
    }
    EXPECT_EQ(dtype_of(model, "r"), reduced);
  }
}

TEST(ReducedPrecisionTest, AWeightBeyondTheRangeKeepsItsReaderFloat32) {
  Model model = parsed();
  Graph& graph = model.graph;
  const ValueId w = *graph.find_value("w");
  std::vector<float> values(12, 1.0f);
  values[5] = 1e6f;  // beyond float16's 65504
  graph.make_initializer(w, Tensor::from_float({4, 3}, values));
  ReducedPrecisionOptions options;
  options.reduced = DType::kFloat16;
  Result<ReducedPrecisionResult> result = reduce_precision(model, options);
  ASSERT_TRUE(result.is_ok());
  EXPECT_EQ(dtype_of(model, "m"), DType::kFloat32);
  EXPECT_NE(kept_of(*result).at("m").find("never clamped"), std::string::npos);
  EXPECT_TRUE(verify(model).is_ok());
}

// A slot with a type of its own (Pow's exponent) keeps the type it had: a reduced value
// there is read back through a Cast to float32.
TEST(ReducedPrecisionTest, ASlotOfItsOwnTypeReadsFloat32) {
  Result<Model> parsed = parse_model(R"(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "g" (%x: f32[4], %y: f32[4]) {
  %p: f32[4] = Relu(%x) {name="base"}
  %q: f32[4] = Relu(%y) {name="exponent"}
  %z: f32[4] = Pow(%p, %q) {name="pow"}
  return %z
}
)",
                                     "pow");
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().message();
  Model model = std::move(parsed).value();
  ReducedPrecisionOptions options;
  options.reduced = DType::kBFloat16;
  Result<ReducedPrecisionResult> result = reduce_precision(model, options);
  ASSERT_TRUE(result.is_ok());
  EXPECT_TRUE(verify(model).is_ok()) << verify(model).message();
  const Node& pow =
      model.graph.node(producer_of(model, "z").op_type == "Cast"
                           ? model.graph.value(producer_of(model, "z").inputs[0]).producer
                           : model.graph.value(*model.graph.find_value("z")).producer);
  EXPECT_EQ(model.graph.value(pow.inputs[0]).type.dtype, DType::kBFloat16);
  EXPECT_EQ(model.graph.value(pow.inputs[1]).type.dtype, DType::kFloat32);
  EXPECT_EQ(model.graph.node(model.graph.value(pow.inputs[1]).producer).op_type, "Cast");
}

}  // namespace
}  // namespace stitch::ir
