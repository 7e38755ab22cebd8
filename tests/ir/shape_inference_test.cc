// Tests of whole-graph shape inference: data propagation through exporters' shape
// chains, unknown types downstream of Opaque ops, and the model's declared types.
#include "ir/shapes/shape_inference.h"

#include <gtest/gtest.h>

#include <limits>

namespace stitch::ir {
namespace {

constexpr DType f32 = DType::kFloat32;

// Adds a node with fresh output values named after `outputs`.
std::vector<ValueId> add(Graph& graph, const std::string& op, std::vector<ValueId> inputs,
                         std::vector<std::string> outputs, std::vector<Attribute> attributes = {},
                         int64_t opset = 17, const std::string& domain = "") {
  std::vector<ValueId> ids;
  for (const std::string& name : outputs) ids.push_back(graph.add_value(name, TensorType{}));
  NodeId node = graph.add_node(op, std::move(inputs), ids, domain, outputs[0] + "_node");
  graph.node(node).opset = opset;
  for (Attribute& attribute : attributes) graph.node(node).set_attribute(std::move(attribute));
  return ids;
}

ValueId input(Graph& graph, const std::string& name, TensorType type) {
  ValueId id = graph.add_value(name, std::move(type));
  graph.add_graph_input(id);
  return id;
}

std::string type_of(const Graph& graph, ValueId id) { return to_string(graph.value(id).type); }

// The exporter pattern x.reshape(x.shape[0], x.shape[1] * x.shape[2]) written with
// Shape, Gather, Mul, Unsqueeze, Concat, Cast and a Constant node.
TEST(ShapeInferenceTest, ShapeChainGivesStaticReshape) {
  Graph graph;
  ValueId x = input(graph, "x", TensorType::make(f32, {2, 3, 4}));
  ValueId zero = graph.add_initializer("zero", Tensor::from_int64({}, {0}));
  ValueId one = graph.add_initializer("one", Tensor::from_int64({}, {1}));
  ValueId shape = add(graph, "Shape", {x}, {"shape"})[0];
  ValueId dim0 = add(graph, "Gather", {shape, zero}, {"dim0"}, {Attribute::make_int("axis", 0)})[0];
  ValueId dim1 = add(graph, "Gather", {shape, one}, {"dim1"})[0];
  ValueId two = add(graph, "Constant", {}, {"two"},
                    {Attribute::make_tensor("value", Tensor::from_int64({}, {2}))})[0];
  ValueId dim2 = add(graph, "Gather", {shape, two}, {"dim2"})[0];
  ValueId inner = add(graph, "Mul", {dim1, dim2}, {"inner"})[0];
  ValueId axes = graph.add_initializer("axes", Tensor::from_int64({1}, {0}));
  ValueId u0 = add(graph, "Unsqueeze", {dim0, axes}, {"u0"}, {}, 13)[0];
  ValueId u1 = add(graph, "Unsqueeze", {inner}, {"u1"}, {Attribute::make_ints("axes", {0})}, 11)[0];
  ValueId cat = add(graph, "Concat", {u0, u1}, {"cat"}, {Attribute::make_int("axis", 0)})[0];
  ValueId cast = add(graph, "Cast", {cat}, {"cast"}, {Attribute::make_int("to", 7)})[0];
  ValueId y = add(graph, "Reshape", {x, cast}, {"y"})[0];
  graph.add_graph_output(y);
  ASSERT_TRUE(infer_shapes(graph, 17, {"model.onnx"}).is_ok());
  EXPECT_EQ(type_of(graph, shape), "i64[3]");
  EXPECT_EQ(type_of(graph, dim0), "i64[]");
  EXPECT_EQ(type_of(graph, cat), "i64[2]");
  EXPECT_EQ(type_of(graph, y), "f32[2,12]");
}

// Slice of a shape, Equal/Where on it (the "replace 0 by the input dim" pattern),
// ConstantOfShape from it, and a Range whose limit comes from it.
TEST(ShapeInferenceTest, PropagatesThroughSliceEqualWhereRange) {
  Graph graph;
  ValueId x = input(graph, "x", TensorType::make(f32, {6, 5}));
  ValueId shape = add(graph, "Shape", {x}, {"shape"})[0];
  ValueId starts = graph.add_initializer("starts", Tensor::from_int64({1}, {1}));
  ValueId ends = graph.add_initializer("ends", Tensor::from_int64({1}, {2}));
  ValueId last = add(graph, "Slice", {shape, starts, ends}, {"last"})[0];
  ValueId target = graph.add_initializer("target", Tensor::from_int64({2}, {0, -1}));
  ValueId zeros = graph.add_initializer("zeros", Tensor::from_int64({2}, {0, 0}));
  ValueId is_zero = add(graph, "Equal", {target, zeros}, {"is_zero"})[0];
  ValueId fixed = add(graph, "Where", {is_zero, shape, target}, {"fixed"})[0];
  ValueId y = add(graph, "Reshape", {x, fixed}, {"y"})[0];
  ValueId filled = add(graph, "ConstantOfShape", {last}, {"filled"})[0];
  ValueId start = graph.add_initializer("start", Tensor::from_int64({}, {0}));
  ValueId step = graph.add_initializer("step", Tensor::from_int64({}, {1}));
  ValueId squeezed = add(graph, "Squeeze", {last}, {"squeezed"}, {}, 13)[0];
  ValueId range = add(graph, "Range", {start, squeezed, step}, {"range"})[0];
  ASSERT_TRUE(infer_shapes(graph, 17, {"model.onnx"}).is_ok());
  EXPECT_EQ(type_of(graph, last), "i64[1]");
  EXPECT_EQ(type_of(graph, is_zero), "bool[2]");
  EXPECT_EQ(type_of(graph, y), "f32[6,5]");
  EXPECT_EQ(type_of(graph, filled), "f32[5]");
  EXPECT_EQ(type_of(graph, range), "i64[5]");
}

// Integer Div on shape values follows the interpreter (ir/core/integer_arithmetic.h): a
// zero divisor gives 0 and INT64_MIN / -1 wraps, instead of trapping the compiler.
TEST(ShapeInferenceTest, ShapeValueDivisionNeverTraps) {
  Graph graph;
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  ValueId numerators = graph.add_initializer("numerators", Tensor::from_int64({2}, {12, kMin}));
  ValueId divisors = graph.add_initializer("divisors", Tensor::from_int64({2}, {0, -1}));
  ValueId quotients = add(graph, "Div", {numerators, divisors}, {"quotients"})[0];
  ValueId zero = graph.add_initializer("zero", Tensor::from_int64({}, {0}));
  ValueId one = graph.add_initializer("one", Tensor::from_int64({}, {1}));
  ValueId three = graph.add_initializer("three", Tensor::from_int64({}, {3}));
  ValueId by_zero = add(graph, "Gather", {quotients, zero}, {"by_zero"})[0];
  ValueId wrapped = add(graph, "Gather", {quotients, one}, {"wrapped"})[0];
  ValueId end = add(graph, "Add", {wrapped, three}, {"end"})[0];
  ValueId empty = add(graph, "Range", {zero, by_zero, one}, {"empty"})[0];
  ValueId from_min = add(graph, "Range", {wrapped, end, one}, {"from_min"})[0];
  ASSERT_TRUE(infer_shapes(graph, 17, {"model.onnx"}).is_ok());
  EXPECT_EQ(type_of(graph, empty), "i64[0]");
  EXPECT_EQ(type_of(graph, from_min), "i64[3]");
}

TEST(ShapeInferenceTest, UnknownTypesFlowDownstreamOfOpaqueOps) {
  Graph graph;
  ValueId x = input(graph, "x", TensorType::make(f32, {2, 3}));
  ValueId opaque = add(graph, "Custom", {x}, {"opaque"}, {}, 1, "com.example")[0];
  ValueId relu = add(graph, "Relu", {opaque}, {"relu"})[0];
  ValueId sum = add(graph, "Add", {relu, x}, {"sum"})[0];
  ValueId target = graph.add_initializer("target", Tensor::from_int64({2}, {3, -1}));
  ValueId reshaped = add(graph, "Reshape", {sum, target}, {"reshaped"})[0];
  ValueId shape = add(graph, "Shape", {reshaped}, {"shape"})[0];
  ValueId expanded = add(graph, "Expand", {x, shape}, {"expanded"})[0];
  ValueId product = add(graph, "MatMul", {relu, x}, {"product"})[0];
  ValueId pooled =
      add(graph, "MaxPool", {relu}, {"pooled"}, {Attribute::make_ints("kernel_shape", {2})})[0];
  ASSERT_TRUE(infer_shapes(graph, 17, {"model.onnx"}).is_ok());
  EXPECT_EQ(type_of(graph, opaque), "undef[*]");
  EXPECT_EQ(type_of(graph, relu), "undef[*]");
  EXPECT_EQ(type_of(graph, sum), "f32[*]");
  EXPECT_EQ(type_of(graph, reshaped), "f32[3,?]");
  EXPECT_EQ(type_of(graph, shape), "i64[2]");
  EXPECT_EQ(type_of(graph, expanded), "f32[?,?]");
  EXPECT_EQ(type_of(graph, product), "f32[*]");
  EXPECT_EQ(type_of(graph, pooled), "undef[*]");
}

TEST(ShapeInferenceTest, OpaqueOpsKeepTheModelsTypes) {
  Graph graph;
  ValueId x = input(graph, "x", TensorType::make(f32, {2, 3}));
  ValueId opaque = add(graph, "Loop", {x}, {"opaque"})[0];
  graph.value(opaque).type = TensorType::make(f32, {4, 3});
  graph.value(opaque).type_from_model = true;
  ValueId relu = add(graph, "Relu", {opaque}, {"relu"})[0];
  ASSERT_TRUE(infer_shapes(graph, 17, {"model.onnx"}).is_ok());
  EXPECT_EQ(type_of(graph, opaque), "f32[4,3]");
  EXPECT_EQ(type_of(graph, relu), "f32[4,3]");
}

TEST(ShapeInferenceTest, ModelTypesFillUnknownDims) {
  Graph graph;
  ValueId x = input(graph, "x", TensorType::make(f32, {-1, 3}));
  ValueId relu = add(graph, "Relu", {x}, {"relu"})[0];
  graph.value(relu).type = TensorType::make(f32, {8, -1});
  graph.value(relu).type_from_model = true;
  ASSERT_TRUE(infer_shapes(graph, 17, {"model.onnx"}).is_ok());
  EXPECT_EQ(type_of(graph, relu), "f32[8,3]");
}

TEST(ShapeInferenceTest, DisagreementWithStaticModelTypeIsAnError) {
  Graph graph;
  ValueId x = input(graph, "x", TensorType::make(f32, {2, 3}));
  ValueId relu = add(graph, "Relu", {x}, {"relu"})[0];
  graph.value(relu).type = TensorType::make(f32, {2, 4});
  graph.value(relu).type_from_model = true;
  Status status = infer_shapes(graph, 17, {"model.onnx"});
  EXPECT_EQ(status.message(),
            "model.onnx: node \"relu_node\" (Relu): output 0 \"relu\" is inferred as f32[2,3] but "
            "the model declares f32[2,4]; fix the value_info of \"relu\" or re-export the model");
}

// ceil_mode's last window starting in the end padding: dropped (3 + 1 + 1 - 2 = 3,
// ceil(3 / 2) + 1 = 3 windows, the last starting at 4 >= 3 + 1), as PyTorch does; a model
// declaring the opset-17 formula's 3 is told why.
TEST(ShapeInferenceTest, CeilModeWindowInTheEndPaddingIsExplained) {
  Graph graph;
  ValueId x = input(graph, "x", TensorType::make(f32, {1, 1, 3}));
  ValueId pool =
      add(graph, "MaxPool", {x}, {"pool"},
          {Attribute::make_ints("kernel_shape", {2}), Attribute::make_ints("strides", {2}),
           Attribute::make_ints("pads", {1, 1}), Attribute::make_int("ceil_mode", 1)})[0];
  graph.value(pool).type = TensorType::make(f32, {1, 1, 3});
  graph.value(pool).type_from_model = true;
  Status status = infer_shapes(graph, 17, {"model.onnx"});
  EXPECT_NE(status.message().find("is inferred as f32[1,1,2] but the model declares f32[1,1,3]"),
            std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("with ceil_mode, a window that would start in the end padding"),
            std::string::npos)
      << status.message();
  // Without ceil_mode a mismatch gets no such hint.
  Graph plain;
  ValueId y = input(plain, "x", TensorType::make(f32, {1, 1, 4}));
  ValueId floor_pool =
      add(plain, "MaxPool", {y}, {"pool"},
          {Attribute::make_ints("kernel_shape", {2}), Attribute::make_ints("strides", {2})})[0];
  plain.value(floor_pool).type = TensorType::make(f32, {1, 1, 3});
  plain.value(floor_pool).type_from_model = true;
  status = infer_shapes(plain, 17, {"model.onnx"});
  EXPECT_FALSE(status.is_ok());
  EXPECT_EQ(status.message().find("ceil_mode"), std::string::npos) << status.message();
}

TEST(ShapeInferenceTest, NodeOpsetFallsBackToTheDefault) {
  Graph graph;
  ValueId x = input(graph, "x", TensorType::make(f32, {2, 3}));
  ValueId y = graph.add_value("y", TensorType{});
  // opset 0 on the node: the default opset (11) applies, where Softmax's axis is 1
  // and axes of ReduceSum are an attribute.
  graph.add_node("ReduceSum", {x}, {y});
  graph.node(0).set_attribute(Attribute::make_ints("axes", {1}));
  ASSERT_TRUE(infer_shapes(graph, 11, {"model.onnx"}).is_ok());
  EXPECT_EQ(type_of(graph, y), "f32[2,1]");
}

TEST(ShapeInferenceTest, ErrorsStopAtTheFirstBadNode) {
  Graph graph;
  ValueId x = input(graph, "x", TensorType::make(f32, {2, 3}));
  ValueId target = graph.add_initializer("target", Tensor::from_int64({1}, {7}));
  add(graph, "Reshape", {x, target}, {"y"});
  Status status = infer_shapes(graph, 17, {"net.onnx"});
  EXPECT_EQ(status.code(), StatusCode::kInvalidInput);
  EXPECT_EQ(status.message(),
            "net.onnx: node \"y_node\" (Reshape): cannot reshape input 0 \"x\" f32[2,3] (6 "
            "elements) to [7] (7 elements); fix the shape input so the element counts match");
}

// A long chain runs in one pass (timing lives in bench/, not here).
TEST(ShapeInferenceTest, HundredThousandNodeChain) {
  Graph graph;
  ValueId current = input(graph, "x", TensorType::make(f32, {16, 64}));
  ValueId bias = input(graph, "b", TensorType::make(f32, {64}));
  for (int i = 0; i < 100000; ++i) {
    std::string name = "v" + std::to_string(i);
    current = i % 2 == 0 ? add(graph, "Add", {current, bias}, {name})[0]
                         : add(graph, "Relu", {current}, {name})[0];
  }
  ASSERT_TRUE(infer_shapes(graph, 17, {"model.onnx"}).is_ok());
  EXPECT_EQ(type_of(graph, current), "f32[16,64]");
}

}  // namespace
}  // namespace stitch::ir
