// Cross-check of our shape inference against ONNX's own (C++ library 1.12, opsets
// <= 17): small models covering many ops, plus every models/*.onnx of opset <= 17.
// For each value ONNX types, the dtype must match ours and every dim ONNX knows must
// match ours; dims ONNX does not know are skipped. Where our registry has a rule for
// the producing op, our type must be known wherever ONNX's is.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <filesystem>
#include <functional>

#include "ir/core/op_registry.h"
#include "onnx_import/importer.h"
#include "tests/onnx_import/onnx_test_util.h"

namespace stitch::onnx_import {
namespace {

using testing_onnx::add_float_attribute;
using testing_onnx::add_int_attribute;
using testing_onnx::add_ints_attribute;
using testing_onnx::dims_of;
using testing_onnx::kFloat;
using testing_onnx::kInt64;
using testing_onnx::ModelBuilder;

// Runs ONNX's inference on `proto` (graph input shapes replaced by `input_shapes`,
// value_info cleared so nothing is echoed back) and compares with `ours`.
void crosscheck(onnx::ModelProto proto, const ir::Model& ours,
                const std::map<std::string, std::vector<int64_t>>& input_shapes,
                const std::string& label) {
  for (onnx::ValueInfoProto& input : *proto.mutable_graph()->mutable_input()) {
    auto it = input_shapes.find(input.name());
    if (it == input_shapes.end()) continue;
    onnx::TensorShapeProto* shape = input.mutable_type()->mutable_tensor_type()->mutable_shape();
    shape->clear_dim();
    for (int64_t dim : it->second) shape->add_dim()->set_dim_value(dim);
  }
  proto.mutable_graph()->clear_value_info();
  try {
    onnx::shape_inference::InferShapes(proto, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(true, 1, true));
  } catch (const std::exception& error) {
    FAIL() << label << ": ONNX shape inference failed: " << error.what();
  }
  const ir::Graph& graph = ours.graph;
  int compared = 0;
  auto check = [&](const onnx::ValueInfoProto& info) {
    if (!info.type().has_tensor_type()) return;
    const onnx::TypeProto::Tensor& theirs = info.type().tensor_type();
    std::optional<ir::ValueId> id = graph.find_value(info.name());
    ASSERT_TRUE(id.has_value()) << label << ": ONNX knows " << info.name() << ", we don't";
    const ir::Value& value = graph.value(*id);
    bool has_rule = false;
    if (value.producer != ir::kNoId) {
      const ir::Node& producer = graph.node(value.producer);
      has_rule = ir::find_op_schema(producer.domain, producer.op_type) != nullptr;
    }
    std::string where = label + ": value " + info.name() + " ours " + ir::to_string(value.type);
    if (theirs.elem_type() != 0) {
      if (value.type.dtype != ir::DType::kUndefined || has_rule) {
        EXPECT_EQ(static_cast<int32_t>(value.type.dtype), theirs.elem_type()) << where;
      }
    }
    if (!theirs.has_shape()) return;
    if (!value.type.has_shape) {
      EXPECT_FALSE(has_rule) << where << ": ONNX knows the rank " << theirs.shape().dim_size();
      return;
    }
    ASSERT_EQ(static_cast<int>(value.type.dims.size()), theirs.shape().dim_size()) << where;
    for (int i = 0; i < theirs.shape().dim_size(); ++i) {
      const onnx::TensorShapeProto::Dimension& dim = theirs.shape().dim(i);
      if (!dim.has_dim_value()) continue;  // unknown to ONNX: skipped
      int64_t mine = value.type.dims[static_cast<size_t>(i)];
      if (mine < 0 && !has_rule) continue;
      EXPECT_EQ(mine, dim.dim_value()) << where << " dim " << i;
    }
    ++compared;
  };
  for (const onnx::ValueInfoProto& info : proto.graph().value_info()) check(info);
  for (const onnx::ValueInfoProto& info : proto.graph().output()) check(info);
  EXPECT_GT(compared, 0) << label << ": ONNX inferred nothing to compare";
}

struct CrosscheckCase {
  std::string name;
  std::function<ModelBuilder()> build;
};

void PrintTo(const CrosscheckCase& test_case, std::ostream* stream) { *stream << test_case.name; }

void untyped_output(ModelBuilder& builder, const std::string& name) {
  builder.graph()->add_output()->set_name(name);
}

onnx::TensorProto* int64_init(ModelBuilder& builder, const std::string& name,
                              const std::vector<int64_t>& values) {
  return builder.int64_initializer(name, {static_cast<int64_t>(values.size())}, values);
}

std::vector<CrosscheckCase> cases() {
  std::vector<CrosscheckCase> all;
  all.push_back({"broadcast_binary", [] {
                   ModelBuilder b;
                   b.input("a", kFloat, dims_of({2, 1, 4}));
                   b.input("c", kFloat, dims_of({3, 1}));
                   b.node("Add", {"a", "c"}, {"s"});
                   b.node("Mul", {"s", "c"}, {"m"});
                   b.node("Pow", {"m", "a"}, {"p"});
                   b.node("Div", {"p", "s"}, {"y"});
                   untyped_output(b, "y");
                   return b;
                 }});
  all.push_back(
      {"unary_chain", [] {
         ModelBuilder b;
         b.input("x", kFloat, dims_of({3, 5}));
         for (const char* op : {"Relu", "Sigmoid", "Tanh", "Exp", "Abs", "Sqrt", "Erf", "Neg"}) {
           std::string in =
               b.graph()->node_size() == 0 ? "x" : b.graph()->node().rbegin()->output(0);
           b.node(op, {in}, {std::string(op) + "_out"});
         }
         untyped_output(b, "Neg_out");
         return b;
       }});
  all.push_back({"matmul_batched", [] {
                   ModelBuilder b;
                   b.input("a", kFloat, dims_of({2, 3, 4, 5}));
                   b.input("w", kFloat, dims_of({5, 6}));
                   b.input("v", kFloat, dims_of({6}));
                   b.node("MatMul", {"a", "w"}, {"m"});
                   b.node("MatMul", {"m", "v"}, {"y"});
                   untyped_output(b, "y");
                   return b;
                 }});
  all.push_back({"gemm", [] {
                   ModelBuilder b;
                   b.input("a", kFloat, dims_of({4, 3}));
                   b.input("w", kFloat, dims_of({5, 4}));
                   b.input("c", kFloat, dims_of({5}));
                   onnx::NodeProto* gemm = b.node("Gemm", {"a", "w", "c"}, {"y"});
                   add_int_attribute(gemm, "transA", 1);
                   add_int_attribute(gemm, "transB", 1);
                   add_float_attribute(gemm, "alpha", 0.5f);
                   untyped_output(b, "y");
                   return b;
                 }});
  all.push_back({"conv", [] {
                   ModelBuilder b;
                   b.input("x", kFloat, dims_of({1, 4, 17, 15}));
                   b.input("w", kFloat, dims_of({8, 2, 3, 3}));
                   onnx::NodeProto* conv = b.node("Conv", {"x", "w"}, {"c"});
                   add_ints_attribute(conv, "strides", {2, 1});
                   add_ints_attribute(conv, "pads", {1, 0, 1, 2});
                   add_ints_attribute(conv, "dilations", {1, 2});
                   add_int_attribute(conv, "group", 2);
                   onnx::NodeProto* same = b.node("Conv", {"c", "w2"}, {"y"});
                   b.input("w2", kFloat, dims_of({3, 8, 3, 3}));
                   onnx::AttributeProto* pad = same->add_attribute();
                   pad->set_name("auto_pad");
                   pad->set_type(onnx::AttributeProto::STRING);
                   pad->set_s("SAME_UPPER");
                   untyped_output(b, "y");
                   return b;
                 }});
  all.push_back({"pooling", [] {
                   ModelBuilder b;
                   b.input("x", kFloat, dims_of({2, 3, 11, 11}));
                   onnx::NodeProto* max = b.node("MaxPool", {"x"}, {"m"});
                   add_ints_attribute(max, "kernel_shape", {3, 3});
                   add_ints_attribute(max, "strides", {2, 2});
                   add_int_attribute(max, "ceil_mode", 1);
                   onnx::NodeProto* average = b.node("AveragePool", {"m"}, {"a"});
                   add_ints_attribute(average, "kernel_shape", {2, 2});
                   add_ints_attribute(average, "pads", {1, 1, 0, 0});
                   b.node("GlobalAveragePool", {"a"}, {"y"});
                   untyped_output(b, "y");
                   return b;
                 }});
  all.push_back({"reshape_flatten", [] {
                   ModelBuilder b;
                   b.input("x", kFloat, dims_of({2, 3, 4}));
                   int64_init(b, "shape", {0, -1});
                   b.node("Reshape", {"x", "shape"}, {"r"});
                   add_int_attribute(b.node("Flatten", {"x"}, {"f"}), "axis", 2);
                   b.node("Transpose", {"x"}, {"t"});
                   add_ints_attribute(b.node("Transpose", {"x"}, {"t2"}), "perm", {1, 0, 2});
                   untyped_output(b, "r");
                   untyped_output(b, "f");
                   untyped_output(b, "t");
                   untyped_output(b, "t2");
                   return b;
                 }});
  all.push_back({"slice", [] {
                   ModelBuilder b;
                   b.input("x", kFloat, dims_of({10, 8, 6}));
                   int64_init(b, "starts", {-3, 1});
                   int64_init(b, "ends", {-10, 100});
                   int64_init(b, "axes", {0, 2});
                   int64_init(b, "steps", {-1, 2});
                   b.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"});
                   untyped_output(b, "y");
                   return b;
                 }});
  all.push_back({"concat_gather", [] {
                   ModelBuilder b;
                   b.input("a", kFloat, dims_of({2, 3}));
                   b.input("c", kFloat, dims_of({2, 5}));
                   add_int_attribute(b.node("Concat", {"a", "c"}, {"cat"}), "axis", -1);
                   b.input("indices", kInt64, dims_of({4, 2}));
                   add_int_attribute(b.node("Gather", {"cat", "indices"}, {"g"}), "axis", 1);
                   b.node("Gather", {"cat", "indices"}, {"g0"});
                   untyped_output(b, "g");
                   untyped_output(b, "g0");
                   return b;
                 }});
  all.push_back({"squeeze_unsqueeze_13", [] {
                   ModelBuilder b(13);
                   b.input("x", kFloat, dims_of({1, 3, 1, 4}));
                   int64_init(b, "axes", {0, 2});
                   b.node("Squeeze", {"x", "axes"}, {"s"});
                   int64_init(b, "new_axes", {-1, 0});
                   b.node("Unsqueeze", {"s", "new_axes"}, {"y"});
                   untyped_output(b, "y");
                   return b;
                 }});
  all.push_back({"squeeze_unsqueeze_11", [] {
                   ModelBuilder b(11, 6);
                   b.input("x", kFloat, dims_of({1, 3, 1, 4}));
                   add_ints_attribute(b.node("Squeeze", {"x"}, {"s"}), "axes", {0});
                   add_ints_attribute(b.node("Unsqueeze", {"s"}, {"y"}), "axes", {1, 4});
                   b.node("Squeeze", {"x"}, {"all"});
                   untyped_output(b, "y");
                   untyped_output(b, "all");
                   return b;
                 }});
  all.push_back({"reductions", [] {
                   ModelBuilder b(13);
                   b.input("x", kFloat, dims_of({2, 3, 4}));
                   onnx::NodeProto* mean = b.node("ReduceMean", {"x"}, {"mean"});
                   add_ints_attribute(mean, "axes", {-1});
                   add_int_attribute(mean, "keepdims", 0);
                   int64_init(b, "axes", {0, 2});
                   b.node("ReduceSum", {"x", "axes"}, {"sum"});
                   add_int_attribute(b.node("ArgMax", {"x"}, {"arg"}), "axis", 1);
                   b.node("ReduceMax", {"x"}, {"max"});
                   untyped_output(b, "mean");
                   untyped_output(b, "sum");
                   untyped_output(b, "arg");
                   untyped_output(b, "max");
                   return b;
                 }});
  all.push_back({"reductions_17", [] {
                   ModelBuilder b(17);
                   b.input("x", kFloat, dims_of({5, 6}));
                   add_ints_attribute(b.node("ReduceL2", {"x"}, {"l2"}), "axes", {0});
                   onnx::NodeProto* prod = b.node("ReduceProd", {"x"}, {"prod"});
                   add_int_attribute(prod, "keepdims", 0);
                   untyped_output(b, "l2");
                   untyped_output(b, "prod");
                   return b;
                 }});
  all.push_back({"softmax", [] {
                   ModelBuilder b(13);
                   b.input("x", kFloat, dims_of({2, 3, 4}));
                   add_int_attribute(b.node("Softmax", {"x"}, {"s"}), "axis", 1);
                   b.node("LogSoftmax", {"s"}, {"y"});
                   untyped_output(b, "y");
                   return b;
                 }});
  all.push_back({"split", [] {
                   ModelBuilder b(13);
                   b.input("x", kFloat, dims_of({6, 4}));
                   int64_init(b, "sizes", {1, 2, 3});
                   b.node("Split", {"x", "sizes"}, {"a", "c", "d"});
                   add_int_attribute(b.node("Split", {"x"}, {"e", "f"}), "axis", 1);
                   for (const char* name : {"a", "c", "d", "e", "f"}) untyped_output(b, name);
                   return b;
                 }});
  all.push_back({"compare_where_cast", [] {
                   ModelBuilder b;
                   b.input("x", kFloat, dims_of({3, 4}));
                   b.input("z", kFloat, dims_of({4}));
                   b.node("Less", {"x", "z"}, {"lt"});
                   b.node("Not", {"lt"}, {"ge"});
                   b.node("Where", {"ge", "x", "z"}, {"w"});
                   add_int_attribute(b.node("Cast", {"w"}, {"y"}), "to",
                                     onnx::TensorProto::FLOAT16);
                   b.node("Equal", {"x", "z"}, {"eq"});
                   untyped_output(b, "y");
                   untyped_output(b, "eq");
                   return b;
                 }});
  all.push_back({"expand_tile_pad", [] {
                   ModelBuilder b;
                   b.input("x", kFloat, dims_of({3, 1}));
                   int64_init(b, "shape", {2, 1, 5});
                   b.node("Expand", {"x", "shape"}, {"e"});
                   int64_init(b, "repeats", {2, 1, 3});
                   b.node("Tile", {"e", "repeats"}, {"t"});
                   int64_init(b, "pads", {0, 1, 2, 0, 0, 1});
                   b.node("Pad", {"t", "pads"}, {"y"});
                   untyped_output(b, "y");
                   return b;
                 }});
  all.push_back({"normalization", [] {
                   ModelBuilder b(17);
                   b.input("x", kFloat, dims_of({2, 4, 8}));
                   b.float_initializer("scale", {8}, std::vector<float>(8, 1.0f));
                   b.float_initializer("bias", {8}, std::vector<float>(8, 0.0f));
                   add_int_attribute(b.node("LayerNormalization", {"x", "scale", "bias"}, {"ln"}),
                                     "axis", -1);
                   b.input("img", kFloat, dims_of({2, 4, 5, 5}));
                   b.float_initializer("c4", {4}, std::vector<float>(4, 1.0f));
                   b.node("BatchNormalization", {"img", "c4", "c4", "c4", "c4"}, {"bn"});
                   b.node("InstanceNormalization", {"img", "c4", "c4"}, {"in"});
                   untyped_output(b, "ln");
                   untyped_output(b, "bn");
                   untyped_output(b, "in");
                   return b;
                 }});
  all.push_back({"shape_chain", [] {
                   ModelBuilder b;
                   b.input("x", kFloat, dims_of({2, 6, 8}));
                   b.node("Shape", {"x"}, {"shape"});
                   int64_init(b, "index", {0});
                   b.node("Gather", {"shape", "index"}, {"batch"});
                   int64_init(b, "rest", {-1, 4});
                   add_int_attribute(b.node("Concat", {"batch", "rest"}, {"new_shape"}), "axis", 0);
                   b.node("Reshape", {"x", "new_shape"}, {"y"});
                   untyped_output(b, "y");
                   return b;
                 }});
  all.push_back({"misc", [] {
                   ModelBuilder b;
                   b.input("x", kFloat, dims_of({4, 5}));
                   b.float_initializer("low", {}, {0.0f});
                   b.node("Clip", {"x", "low", ""}, {"c"});
                   int64_init(b, "k", {2});
                   b.node("TopK", {"c", "k"}, {"values", "indices"});
                   b.node("Identity", {"values"}, {"i"});
                   b.node("Dropout", {"i"}, {"d"});
                   int64_init(b, "fill_shape", {3, 2});
                   b.node("ConstantOfShape", {"fill_shape"}, {"zeros"});
                   b.node("Sum", {"x", "x", "x"}, {"sum3"});
                   untyped_output(b, "d");
                   untyped_output(b, "indices");
                   untyped_output(b, "zeros");
                   untyped_output(b, "sum3");
                   return b;
                 }});
  return all;
}

class ShapeCrosscheckTest : public ::testing::TestWithParam<CrosscheckCase> {};

TEST_P(ShapeCrosscheckTest, MatchesOnnx) {
  ModelBuilder builder = GetParam().build();
  Result<ir::Model> ours =
      import_model_from_bytes(builder.bytes(), GetParam().name + ".onnx", "/nonexistent", {});
  ASSERT_TRUE(ours.is_ok()) << ours.status().message();
  crosscheck(builder.model, *ours, {}, GetParam().name);
}

INSTANTIATE_TEST_SUITE_P(Ops, ShapeCrosscheckTest, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<CrosscheckCase>& info) {
                           return info.param.name;
                         });

TEST(ShapeCrosscheckModels, ModelsUpToOpset17MatchOnnx) {
  std::string models_dir = std::string(STITCH_SOURCE_DIR) + "/models";
  int checked = 0;
  for (const std::string& path : testing_onnx::model_files(models_dir)) {
    onnx::ModelProto proto;
    std::ifstream stream(path, std::ios::binary);
    ASSERT_TRUE(proto.ParseFromIstream(&stream)) << path;
    int64_t opset = 0;
    for (const onnx::OperatorSetIdProto& import : proto.opset_import()) {
      if (import.domain().empty() || import.domain() == "ai.onnx") opset = import.version();
    }
    if (opset > 17) continue;
    ImportOptions options;
    std::string file = std::filesystem::path(path).filename().string();
    options.input_shapes = testing_onnx::manifest_input_shapes(models_dir, file);
    Result<ir::Model> ours = import_model(path, options);
    ASSERT_TRUE(ours.is_ok()) << ours.status().message();
    crosscheck(proto, *ours, options.input_shapes, path);
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no models/*.onnx of opset <= 17";
}

}  // namespace
}  // namespace stitch::onnx_import
