// ONNX import: models built with the ONNX protobuf API, saved to a scratch
// directory and imported; every validation error is asserted word for word.
#include "onnx_import/importer.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <sys/stat.h>

#include <cstring>

#include "onnx_import/subgraph_nesting.h"
#include "tests/onnx_import/onnx_test_util.h"

namespace stitch::onnx_import {
namespace {

using testing_onnx::add_float_attribute;
using testing_onnx::add_int_attribute;
using testing_onnx::add_ints_attribute;
using testing_onnx::dims_of;
using testing_onnx::kBool;
using testing_onnx::kFloat;
using testing_onnx::kInt64;
using testing_onnx::ModelBuilder;
using testing_onnx::ScratchDirectory;

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.starts_with(prefix);
}

// x:f32[2,3] + bias (initializer) -> Relu -> y
ModelBuilder add_relu_model() {
  ModelBuilder builder;
  builder.input("x", kFloat, dims_of({2, 3}));
  builder.float_initializer("bias", {3}, {1.0f, 2.0f, 3.0f});
  builder.node("Add", {"x", "bias"}, {"sum"}, "add_1");
  builder.node("Relu", {"sum"}, {"y"}, "relu_1");
  builder.output("y", kFloat, dims_of({2, 3}));
  return builder;
}

class ImporterTest : public ::testing::Test {
 protected:
  // Saves the model as model.onnx in the scratch directory and imports it.
  Result<ir::Model> import(const ModelBuilder& builder, const ImportOptions& options = {}) {
    scratch_.write("model.onnx", builder.bytes());
    return import_model(path_, options);
  }
  std::string error_of(const ModelBuilder& builder, const ImportOptions& options = {}) {
    Result<ir::Model> result = import(builder, options);
    if (result.is_ok()) return "<imported without error>";
    EXPECT_EQ(result.status().code(), StatusCode::kInvalidInput);
    return result.status().message();
  }

  ScratchDirectory scratch_;
  std::string path_ = scratch_.file("model.onnx");
};

TEST_F(ImporterTest, ImportsGraphAndMetadata) {
  ModelBuilder builder = add_relu_model();
  builder.add_opset("com.example", 3);
  builder.model.set_producer_version("1.2");
  builder.model.set_domain("ai.test");
  builder.model.set_model_version(5);
  builder.model.set_doc_string("model doc");
  onnx::StringStringEntryProto* meta = builder.model.add_metadata_props();
  meta->set_key("author");
  meta->set_value("me");
  builder.graph()->set_doc_string("graph doc");
  builder.graph()->mutable_node(0)->set_doc_string("adds");
  onnx::FunctionProto* function = builder.model.add_functions();
  function->set_name("MyFunc");
  function->set_domain("com.example");
  Result<ir::Model> result = import(builder);
  ASSERT_TRUE(result.is_ok()) << result.status().message();
  const ir::Model& model = *result;
  EXPECT_EQ(model.ir_version, 8);
  ASSERT_EQ(model.opset_imports.size(), 2u);
  EXPECT_EQ(model.opset_imports[0], (ir::OpsetImport{"", 17}));
  EXPECT_EQ(model.opset_imports[1], (ir::OpsetImport{"com.example", 3}));
  EXPECT_EQ(model.producer_name, "stitchopt-test");
  EXPECT_EQ(model.producer_version, "1.2");
  EXPECT_EQ(model.domain, "ai.test");
  EXPECT_EQ(model.model_version, 5);
  EXPECT_EQ(model.doc_string, "model doc");
  ASSERT_EQ(model.metadata_props.size(), 1u);
  EXPECT_EQ(model.metadata_props[0], (std::pair<std::string, std::string>{"author", "me"}));
  ASSERT_EQ(model.functions.size(), 1u);
  EXPECT_EQ(model.functions[0], function->SerializeAsString());

  const ir::Graph& graph = model.graph;
  EXPECT_EQ(graph.name, "test_graph");
  EXPECT_EQ(graph.doc_string, "graph doc");
  ASSERT_EQ(graph.graph_inputs().size(), 1u);
  const ir::Value& x = graph.value(graph.graph_inputs()[0]);
  EXPECT_EQ(x.name, "x");
  EXPECT_EQ(x.type, ir::TensorType::make(ir::DType::kFloat32, {2, 3}));
  ASSERT_EQ(graph.initializers().size(), 1u);
  const ir::Value& bias = graph.value(graph.initializers()[0]);
  EXPECT_EQ(bias.name, "bias");
  EXPECT_FALSE(bias.is_graph_input);
  ASSERT_NE(bias.constant, nullptr);
  EXPECT_EQ(bias.constant->float_at(2), 3.0);

  std::vector<ir::NodeId> nodes = graph.node_ids();
  ASSERT_EQ(nodes.size(), 2u);
  const ir::Node& add = graph.node(nodes[0]);
  EXPECT_EQ(add.name, "add_1");
  EXPECT_EQ(add.op_type, "Add");
  EXPECT_EQ(add.domain, "");
  EXPECT_EQ(add.opset, 17);
  EXPECT_EQ(add.doc_string, "adds");
  EXPECT_EQ(add.origin, std::vector<std::string>{"add_1"});
  EXPECT_EQ(add.inputs, (std::vector<ir::ValueId>{x.id, bias.id}));
  const ir::Value& sum = graph.value(add.outputs[0]);
  EXPECT_EQ(sum.type, ir::TensorType::make(ir::DType::kFloat32, {2, 3}));
  EXPECT_FALSE(sum.type_from_model);
  ASSERT_EQ(graph.graph_outputs().size(), 1u);
  const ir::Value& y = graph.value(graph.graph_outputs()[0]);
  EXPECT_EQ(y.name, "y");
  EXPECT_TRUE(y.type_from_model);
  EXPECT_EQ(y.producer, nodes[1]);
}

TEST_F(ImporterTest, ConvertsAttributesOfEveryKind) {
  ModelBuilder builder;
  builder.input("x", kFloat, dims_of({1, 4}));
  onnx::NodeProto* node = builder.node("Custom", {"x"}, {"y"}, "custom", "com.example");
  builder.add_opset("com.example", 1);
  add_int_attribute(node, "i", 7);
  add_float_attribute(node, "f", 0.5f);
  add_ints_attribute(node, "ints", {1, -2, 3});
  onnx::AttributeProto* s = node->add_attribute();
  s->set_name("s");
  s->set_type(onnx::AttributeProto::STRING);
  s->set_s("hello");
  onnx::AttributeProto* floats = node->add_attribute();
  floats->set_name("floats");
  floats->set_type(onnx::AttributeProto::FLOATS);
  floats->add_floats(1.5f);
  onnx::AttributeProto* strings = node->add_attribute();
  strings->set_name("strings");
  strings->set_type(onnx::AttributeProto::STRINGS);
  strings->add_strings("a");
  strings->add_strings("b");
  onnx::AttributeProto* tensor = node->add_attribute();
  tensor->set_name("t");
  tensor->set_type(onnx::AttributeProto::TENSOR);
  tensor->mutable_t()->set_data_type(kInt64);
  tensor->mutable_t()->add_dims(2);
  tensor->mutable_t()->add_int64_data(10);
  tensor->mutable_t()->add_int64_data(-20);
  onnx::AttributeProto* type_proto = node->add_attribute();
  type_proto->set_name("tp");
  type_proto->set_type(onnx::AttributeProto::TYPE_PROTO);
  type_proto->mutable_tp()->mutable_tensor_type()->set_elem_type(kFloat);
  builder.output("y", kFloat, dims_of({1, 4}));
  Result<ir::Model> result = import(builder);
  ASSERT_TRUE(result.is_ok()) << result.status().message();
  const ir::Node& imported = result->graph.node(0);
  EXPECT_EQ(imported.domain, "com.example");
  EXPECT_EQ(imported.opset, 1);
  ASSERT_EQ(imported.attributes.size(), 8u);
  EXPECT_EQ(imported.int_attribute("i", 0), 7);
  EXPECT_EQ(imported.float_attribute("f", 0), 0.5f);
  EXPECT_EQ(imported.ints_attribute("ints", {}), (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(imported.string_attribute("s", ""), "hello");
  EXPECT_EQ(imported.find_attribute("floats")->floats, std::vector<float>{1.5f});
  EXPECT_EQ(imported.find_attribute("strings")->strings, (std::vector<std::string>{"a", "b"}));
  const ir::Attribute* t = imported.find_attribute("t");
  ASSERT_EQ(t->kind, ir::AttributeKind::kTensor);
  EXPECT_EQ(t->tensor->to_int64_vector(), (std::vector<int64_t>{10, -20}));
  const ir::Attribute* tp = imported.find_attribute("tp");
  EXPECT_EQ(tp->kind, ir::AttributeKind::kTypeProto);
  EXPECT_EQ(tp->opaque_proto, type_proto->SerializeAsString());
  // An Opaque op with value_info keeps the model's type.
  const ir::Value& y = result->graph.value(imported.outputs[0]);
  EXPECT_EQ(y.type, ir::TensorType::make(ir::DType::kFloat32, {1, 4}));
}

TEST_F(ImporterTest, ConvertsEveryTensorStorageForm) {
  ModelBuilder builder;
  builder.input("x", kFloat, dims_of({1}));
  auto add = [&](const std::string& name, int32_t type, std::vector<int64_t> dims) {
    onnx::TensorProto* tensor = builder.graph()->add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(type);
    for (int64_t dim : dims) tensor->add_dims(dim);
    return tensor;
  };
  add("f32", onnx::TensorProto::FLOAT, {2})->add_float_data(1.5f);
  builder.graph()->mutable_initializer(0)->add_float_data(-2.0f);
  onnx::TensorProto* i8 = add("i8", onnx::TensorProto::INT8, {2});
  i8->add_int32_data(-3);
  i8->add_int32_data(127);
  onnx::TensorProto* u16 = add("u16", onnx::TensorProto::UINT16, {1});
  u16->add_int32_data(65535);
  onnx::TensorProto* f16 = add("f16", onnx::TensorProto::FLOAT16, {1});
  f16->add_int32_data(0x3C00);  // 1.0
  onnx::TensorProto* bf16 = add("bf16", onnx::TensorProto::BFLOAT16, {1});
  bf16->add_int32_data(0x4000);  // 2.0
  onnx::TensorProto* flags = add("flags", onnx::TensorProto::BOOL, {3});
  flags->add_int32_data(1);
  flags->add_int32_data(0);
  flags->add_int32_data(1);
  add("i32", onnx::TensorProto::INT32, {1})->add_int32_data(-100000);
  add("i64", onnx::TensorProto::INT64, {1})->add_int64_data(int64_t{1} << 40);
  add("f64", onnx::TensorProto::DOUBLE, {1})->add_double_data(0.25);
  add("u32", onnx::TensorProto::UINT32, {1})->add_uint64_data(4000000000u);
  add("u64", onnx::TensorProto::UINT64, {1})->add_uint64_data(uint64_t{1} << 63);
  onnx::TensorProto* text = add("text", onnx::TensorProto::STRING, {2});
  text->add_string_data("ab");
  text->add_string_data("");
  onnx::TensorProto* raw = add("raw", onnx::TensorProto::INT16, {2});
  raw->set_raw_data(std::string("\x01\x00\xff\xff", 4));
  add("empty", onnx::TensorProto::FLOAT, {0, 3});
  builder.node("Identity", {"x"}, {"y"});
  builder.output("y", kFloat, dims_of({1}));
  Result<ir::Model> result = import(builder);
  ASSERT_TRUE(result.is_ok()) << result.status().message();
  const ir::Graph& graph = result->graph;
  auto constant = [&](const std::string& name) -> const ir::Tensor& {
    return *graph.value(*graph.find_value(name)).constant;
  };
  EXPECT_EQ(constant("f32").float_at(0), 1.5);
  EXPECT_EQ(constant("f32").float_at(1), -2.0);
  EXPECT_EQ(constant("f32").bytes.size(), 8u);
  EXPECT_EQ(constant("i8").bytes, std::string("\xfd\x7f", 2));
  EXPECT_EQ(constant("u16").int_at(0), 65535);
  EXPECT_EQ(constant("f16").float_at(0), 1.0);
  EXPECT_EQ(constant("bf16").float_at(0), 2.0);
  EXPECT_EQ(constant("flags").bytes, std::string("\x01\x00\x01", 3));
  EXPECT_EQ(constant("i32").int_at(0), -100000);
  EXPECT_EQ(constant("i64").int_at(0), int64_t{1} << 40);
  EXPECT_EQ(constant("f64").float_at(0), 0.25);
  EXPECT_EQ(constant("u32").bytes.size(), 4u);
  EXPECT_EQ(constant("u32").int_at(0), 4000000000);
  EXPECT_EQ(constant("u64").element<uint64_t>(0), uint64_t{1} << 63);
  EXPECT_EQ(constant("text").strings, (std::vector<std::string>{"ab", ""}));
  EXPECT_EQ(constant("raw").int_at(0), 1);
  EXPECT_EQ(constant("raw").int_at(1), -1);
  EXPECT_EQ(constant("empty").dims, (std::vector<int64_t>{0, 3}));
  EXPECT_TRUE(constant("empty").bytes.empty());
}

TEST_F(ImporterTest, TensorDataOfTheWrongSizeIsAnError) {
  ModelBuilder builder = add_relu_model();
  builder.graph()->mutable_initializer(0)->set_raw_data(std::string(8, '\0'));
  EXPECT_EQ(error_of(builder),
            path_ +
                ": initializer \"bias\" has 8 bytes of data but its type f32[3] needs 12; "
                "re-export the model");
}

TEST_F(ImporterTest, InitializerThatIsAlsoAnInputStaysAnInputWithADefault) {
  ModelBuilder builder = add_relu_model();
  builder.input("bias", kFloat, dims_of({3}));
  Result<ir::Model> result = import(builder);
  ASSERT_TRUE(result.is_ok()) << result.status().message();
  const ir::Graph& graph = result->graph;
  ASSERT_EQ(graph.graph_inputs().size(), 2u);
  const ir::Value& bias = graph.value(graph.graph_inputs()[1]);
  EXPECT_EQ(bias.name, "bias");
  EXPECT_TRUE(bias.is_graph_input);
  EXPECT_TRUE(bias.is_initializer());
  EXPECT_EQ(graph.initializers(), std::vector<ir::ValueId>{bias.id});
}

TEST_F(ImporterTest, OmittedOptionalInputsAndOutputsHaveNoValue) {
  ModelBuilder builder;
  builder.input("x", kFloat, dims_of({4}));
  builder.float_initializer("high", {}, {6.0f});
  builder.node("Clip", {"x", "", "high"}, {"y"}, "clip");
  builder.node("Dropout", {"y"}, {"z", ""}, "drop");
  builder.output("z", kFloat, dims_of({4}));
  Result<ir::Model> result = import(builder);
  ASSERT_TRUE(result.is_ok()) << result.status().message();
  const ir::Node& clip = result->graph.node(0);
  ASSERT_EQ(clip.inputs.size(), 3u);
  EXPECT_EQ(clip.inputs[1], ir::kNoId);
  const ir::Node& drop = result->graph.node(1);
  ASSERT_EQ(drop.outputs.size(), 2u);
  EXPECT_EQ(drop.outputs[1], ir::kNoId);
}

TEST_F(ImporterTest, NodesOutOfTopologicalOrderAreAccepted) {
  ModelBuilder builder;
  builder.input("x", kFloat, dims_of({4}));
  builder.node("Relu", {"a"}, {"y"}, "second");
  builder.node("Neg", {"x"}, {"a"}, "first");
  builder.output("y", kFloat, dims_of({4}));
  Result<ir::Model> result = import(builder);
  ASSERT_TRUE(result.is_ok()) << result.status().message();
  EXPECT_EQ(result->graph.value(*result->graph.find_value("y")).type,
            ir::TensorType::make(ir::DType::kFloat32, {4}));
}

TEST_F(ImporterTest, OpaqueOpWithoutValueInfoHasUnknownType) {
  ModelBuilder builder;
  builder.add_opset("com.example", 1);
  builder.input("x", kFloat, dims_of({2}));
  builder.node("Mystery", {"x"}, {"m"}, "mystery", "com.example");
  builder.node("Relu", {"m"}, {"y"}, "relu");
  onnx::ValueInfoProto* output = builder.graph()->add_output();
  output->set_name("y");
  Result<ir::Model> without = import(builder);
  ASSERT_TRUE(without.is_ok()) << without.status().message();
  const ir::Value& m = without->graph.value(*without->graph.find_value("m"));
  EXPECT_FALSE(m.type.is_static());
  EXPECT_FALSE(m.type_from_model);
  EXPECT_FALSE(without->graph.value(*without->graph.find_value("y")).type.is_static());

  builder.value_info("m", kFloat, dims_of({2, 5}));
  Result<ir::Model> with = import(builder);
  ASSERT_TRUE(with.is_ok()) << with.status().message();
  const ir::Value& typed = with->graph.value(*with->graph.find_value("m"));
  EXPECT_EQ(typed.type, ir::TensorType::make(ir::DType::kFloat32, {2, 5}));
  EXPECT_TRUE(typed.type_from_model);
  EXPECT_EQ(with->graph.value(*with->graph.find_value("y")).type,
            ir::TensorType::make(ir::DType::kFloat32, {2, 5}));
}

// If whose branches read `x` and `scale` from the outer graph (one of them from a
// nested subgraph), and one branch outputs an outer value directly.
TEST_F(ImporterTest, SubgraphOuterScopeReadsBecomeImplicitInputs) {
  ModelBuilder builder;
  builder.input("cond", kBool, {});
  builder.input("x", kFloat, dims_of({3}));
  builder.float_initializer("scale", {}, {2.0f});
  builder.node("Neg", {"x"}, {"neg"}, "neg");
  onnx::NodeProto* branch = builder.node("If", {"cond"}, {"y"}, "if_1");
  onnx::AttributeProto* then_branch = branch->add_attribute();
  then_branch->set_name("then_branch");
  then_branch->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto* then_graph = then_branch->mutable_g();
  then_graph->set_name("then");
  ModelBuilder::add_node(then_graph, "Mul", {"neg", "scale"}, {"then_out"});
  testing_onnx::set_type(then_graph->add_output()->mutable_type(), kFloat, dims_of({3}));
  then_graph->mutable_output(0)->set_name("then_out");
  onnx::AttributeProto* else_branch = branch->add_attribute();
  else_branch->set_name("else_branch");
  else_branch->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto* else_graph = else_branch->mutable_g();
  else_graph->set_name("else");
  else_graph->add_output()->set_name("x");
  testing_onnx::set_type(else_graph->mutable_output(0)->mutable_type(), kFloat, dims_of({3}));
  builder.output("y", kFloat, dims_of({3}));
  Result<ir::Model> result = import(builder);
  ASSERT_TRUE(result.is_ok()) << result.status().message();
  const ir::Graph& graph = result->graph;
  const ir::Node& if_node = graph.node(1);
  EXPECT_EQ(if_node.op_type, "If");
  std::vector<std::string> captured;
  for (ir::ValueId id : if_node.implicit_inputs) captured.push_back(graph.value(id).name);
  EXPECT_EQ(captured, (std::vector<std::string>{"neg", "scale", "x"}));
  const ir::Value& neg = graph.value(*graph.find_value("neg"));
  ASSERT_EQ(neg.users.size(), 1u);
  EXPECT_EQ(neg.users[0], (ir::Use{if_node.id, 1}));
  const ir::Attribute* attribute = if_node.find_attribute("then_branch");
  ASSERT_NE(attribute, nullptr);
  EXPECT_EQ(attribute->kind, ir::AttributeKind::kGraph);
  EXPECT_EQ(attribute->opaque_proto, then_branch->SerializeAsString());
  EXPECT_EQ(graph.value(if_node.outputs[0]).type, ir::TensorType::make(ir::DType::kFloat32, {3}));
}

TEST_F(ImporterTest, SubgraphReadingAnUndefinedNameIsAnError) {
  ModelBuilder builder;
  builder.input("cond", kBool, {});
  onnx::NodeProto* branch = builder.node("If", {"cond"}, {"y"}, "if_1");
  onnx::AttributeProto* then_branch = branch->add_attribute();
  then_branch->set_name("then_branch");
  then_branch->set_type(onnx::AttributeProto::GRAPH);
  ModelBuilder::add_node(then_branch->mutable_g(), "Identity", {"ghost"}, {"out"});
  then_branch->mutable_g()->add_output()->set_name("out");
  onnx::AttributeProto* else_branch = branch->add_attribute();
  *else_branch = *then_branch;
  else_branch->set_name("else_branch");
  builder.output("y", kFloat, dims_of({3}));
  EXPECT_EQ(error_of(builder),
            path_ +
                ": node \"if_1\" (If) reads \"ghost\" in a subgraph, which is not a graph "
                "input, initializer or node output of any enclosing graph; fix the name or "
                "add the node that produces it");
}

TEST_F(ImporterTest, NotAProtobufIsAnError) {
  path_ = scratch_.write("model.onnx", std::string("\xff\xff\xff\xff garbage", 12));
  Result<ir::Model> result = import_model(path_, {});
  ASSERT_FALSE(result.is_ok());
  EXPECT_EQ(result.status().message(),
            path_ +
                ": not a valid ONNX model (the protobuf could not be parsed: the file is "
                "truncated or not a .onnx file); check the path or re-export the model");
}

TEST_F(ImporterTest, TruncatedFileIsAnError) {
  std::string bytes = add_relu_model().bytes();
  path_ = scratch_.write("model.onnx", bytes.substr(0, bytes.size() - 7));
  Result<ir::Model> result = import_model(path_, {});
  ASSERT_FALSE(result.is_ok());
  EXPECT_EQ(result.status().message(),
            path_ +
                ": not a valid ONNX model (the protobuf could not be parsed: the file is "
                "truncated or not a .onnx file); check the path or re-export the model");
}

TEST_F(ImporterTest, EmptyFileIsAnError) {
  path_ = scratch_.write("model.onnx", "");
  Result<ir::Model> result = import_model(path_, {});
  ASSERT_FALSE(result.is_ok());
  EXPECT_EQ(
      result.status().message(),
      path_ + ": the file is empty, not an ONNX model; check the path or re-export the model");
}

TEST_F(ImporterTest, MissingFileIsAnError) {
  std::string missing = scratch_.file("absent.onnx");
  Result<ir::Model> result = import_model(missing, {});
  ASSERT_FALSE(result.is_ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(result.status().message(),
            missing + ": cannot open the model (No such file or directory); check the path");
}

TEST_F(ImporterTest, UnsupportedIrVersionIsAnError) {
  for (int64_t version : {2, 11}) {
    ModelBuilder builder = add_relu_model();
    builder.model.set_ir_version(version);
    EXPECT_EQ(error_of(builder), path_ + ": unsupported IR version " + std::to_string(version) +
                                     "; stitchopt reads IR versions 3 to 10: re-export the model "
                                     "with an ONNX version that writes one of them");
  }
}

TEST_F(ImporterTest, OpsetOutOfRangeIsAnError) {
  ModelBuilder high = add_relu_model();
  high.model.mutable_opset_import(0)->set_version(22);
  EXPECT_EQ(error_of(high), path_ +
                                ": default-domain opset 22 is above 21, the newest stitchopt "
                                "reads; convert the model to opset 21 or lower with "
                                "onnx.version_converter");
  ModelBuilder low = add_relu_model();
  low.model.mutable_opset_import(0)->set_domain("ai.onnx");
  low.model.mutable_opset_import(0)->set_version(6);
  EXPECT_EQ(error_of(low), path_ +
                               ": default-domain opset 6 is below 7, the oldest stitchopt "
                               "reads; convert the model to opset 7 or newer with "
                               "onnx.version_converter");
}

// An int attribute that names a data type must name one the op takes there; a
// stash_type of 99 was decomposed into a Cast to type 99.
TEST_F(ImporterTest, DataTypeAttributeTheOpDoesNotTakeIsAnError) {
  auto layer_norm = [](int64_t stash_type) {
    ModelBuilder builder(17);
    builder.input("x", kFloat, dims_of({2, 3}));
    builder.float_initializer("scale", {3}, {1.0f, 2.0f, 3.0f});
    add_int_attribute(builder.node("LayerNormalization", {"x", "scale"}, {"y"}, "ln"), "stash_type",
                      stash_type);
    builder.output("y", kFloat, dims_of({2, 3}));
    return builder;
  };
  EXPECT_EQ(error_of(layer_norm(99)),
            path_ +
                ": node \"ln\" (LayerNormalization): attribute \"stash_type\" is 99, which "
                "is no data type LayerNormalization takes there; set it to 1 (float) or 16 "
                "(bfloat16)");
  EXPECT_EQ(error_of(layer_norm(10)),
            path_ +
                ": node \"ln\" (LayerNormalization): attribute \"stash_type\" is 10, which "
                "is no data type LayerNormalization takes there; set it to 1 (float) or 16 "
                "(bfloat16)");
  EXPECT_TRUE(import(layer_norm(16)).is_ok());

  ModelBuilder multinomial(17);
  multinomial.input("x", kFloat, dims_of({2, 3}));
  add_int_attribute(multinomial.node("Multinomial", {"x"}, {"y"}, "sample"), "dtype", 1);
  multinomial.output("y", kFloat, dims_of({2, 1}));
  EXPECT_EQ(error_of(multinomial),
            path_ +
                ": node \"sample\" (Multinomial): attribute \"dtype\" is 1, which is no data "
                "type Multinomial takes there; set it to 6 (int32) or 7 (int64)");

  // GroupNormalization has no ONNX 1.12 schema: its stash_type is checked all the same.
  ModelBuilder group_norm(21, 10);
  group_norm.input("x", kFloat, dims_of({1, 4, 3}));
  group_norm.float_initializer("scale", {4}, {1.0f, 1.0f, 1.0f, 1.0f});
  group_norm.float_initializer("bias", {4}, {0.0f, 0.0f, 0.0f, 0.0f});
  onnx::NodeProto* node =
      group_norm.node("GroupNormalization", {"x", "scale", "bias"}, {"y"}, "gn");
  add_int_attribute(node, "num_groups", 2);
  add_int_attribute(node, "stash_type", -1);
  group_norm.output("y", kFloat, dims_of({1, 4, 3}));
  EXPECT_EQ(error_of(group_norm),
            path_ +
                ": node \"gn\" (GroupNormalization): attribute \"stash_type\" is -1, which is "
                "no data type GroupNormalization takes there; set it to 1 (float), 10 "
                "(float16), 11 (double) or 16 (bfloat16)");
}

TEST_F(ImporterTest, AcceptsEveryIrVersionAndOpsetInRange) {
  for (int64_t ir_version : {3, 10}) {
    for (int64_t opset : {7, 13, 21}) {
      ModelBuilder builder = add_relu_model();
      builder.model.set_ir_version(ir_version);
      builder.model.mutable_opset_import(0)->set_version(opset);
      Result<ir::Model> result = import(builder);
      EXPECT_TRUE(result.is_ok()) << result.status().message();
      if (result.is_ok()) {
        EXPECT_EQ(result->default_opset(), opset);
      }
    }
  }
}

TEST_F(ImporterTest, DefaultDomainNodeWithoutOpsetImportIsAnError) {
  ModelBuilder builder = add_relu_model();
  builder.model.mutable_opset_import(0)->set_domain("com.example");
  EXPECT_EQ(error_of(builder),
            path_ +
                ": node \"add_1\" (Add) is in the default ONNX domain, but the model imports "
                "no opset for it; add an opset_import for domain \"\" with a version from 7 "
                "to 21");
}

TEST_F(ImporterTest, CycleIsAnError) {
  ModelBuilder builder;
  builder.input("x", kFloat, dims_of({2}));
  builder.node("Add", {"x", "b"}, {"a"}, "first");
  builder.node("Relu", {"a"}, {"b"}, "second");
  builder.output("b", kFloat, dims_of({2}));
  EXPECT_EQ(error_of(builder),
            path_ +
                ": the graph has a cycle through node \"first\" (Add); ONNX graphs must be "
                "acyclic: re-export the model");
}

TEST_F(ImporterTest, ValueNeverProducedIsAnError) {
  ModelBuilder builder = add_relu_model();
  builder.graph()->mutable_node(1)->set_input(0, "sun");
  EXPECT_EQ(error_of(builder),
            path_ +
                ": node \"relu_1\" (Relu) reads \"sun\", which is not a graph input, "
                "initializer or node output; fix the name or add the node that produces it");
  builder.graph()->mutable_node(1)->clear_name();
  EXPECT_EQ(error_of(builder),
            path_ +
                ": node <unnamed> (Relu) reads \"sun\", which is not a graph input, "
                "initializer or node output; fix the name or add the node that produces it");
}

TEST_F(ImporterTest, DuplicateProducerIsAnError) {
  ModelBuilder builder = add_relu_model();
  builder.node("Neg", {"x"}, {"sum"}, "neg_1");
  EXPECT_EQ(error_of(builder),
            path_ +
                ": node \"neg_1\" (Neg) outputs \"sum\", which node \"add_1\" (Add) already "
                "produces; give every node output a unique name");
}

TEST_F(ImporterTest, NodeOutputShadowingAnInputOrInitializerIsAnError) {
  ModelBuilder input = add_relu_model();
  input.node("Neg", {"y"}, {"x"}, "neg_1");
  EXPECT_EQ(error_of(input), path_ +
                                 ": node \"neg_1\" (Neg) outputs \"x\", which is already a "
                                 "graph input; rename the node output");
  ModelBuilder initializer = add_relu_model();
  initializer.node("Neg", {"y"}, {"bias"}, "neg_1");
  EXPECT_EQ(error_of(initializer), path_ +
                                       ": node \"neg_1\" (Neg) outputs \"bias\", which is "
                                       "already an initializer; rename the node output");
}

TEST_F(ImporterTest, GraphOutputNeverProducedIsAnError) {
  ModelBuilder builder = add_relu_model();
  builder.output("z", kFloat, dims_of({2, 3}));
  EXPECT_EQ(error_of(builder),
            path_ +
                ": graph output \"z\" is never produced (it is not a graph input, initializer "
                "or node output); fix the output name or add the node that produces it");
}

ModelBuilder symbolic_model() {
  ModelBuilder builder;
  builder.input("input_ids", kFloat, {"batch", "seq"});
  builder.input("attention_mask", kFloat, {"batch", "seq"});
  builder.node("Add", {"input_ids", "attention_mask"}, {"y"}, "add");
  builder.output("y", kFloat, {"batch", "seq"});
  return builder;
}

TEST_F(ImporterTest, SymbolicInputDimsAreOneErrorListingEveryInput) {
  EXPECT_EQ(error_of(symbolic_model()),
            path_ +
                ": graph inputs have symbolic or unknown dims: input_ids [batch,seq], "
                "attention_mask [batch,seq]; give them with --input-shape input_ids=1,128 "
                "--input-shape attention_mask=1,128");
  ModelBuilder partial;
  partial.input("image", kFloat, {"?", "3", "h", "224"});
  onnx::ValueInfoProto* unranked = partial.graph()->add_input();
  unranked->set_name("extra");
  unranked->mutable_type()->mutable_tensor_type()->set_elem_type(kFloat);
  partial.node("Relu", {"image"}, {"y"}, "relu");
  partial.output("y", kFloat, dims_of({1, 3, 224, 224}));
  EXPECT_EQ(error_of(partial),
            path_ +
                ": graph inputs have symbolic or unknown dims: image [?,3,h,224], extra [*]; "
                "give them with --input-shape image=1,3,128,224 --input-shape extra=<dims>");
}

// The CLI imports with symbolic_dims and explains after propagation
// (ir/shapes/symbolic_dims.h): a dim_param names a symbol, the same name the same
// symbol, an unnamed dim is INPUT[AXIS]; inference carries them.
TEST_F(ImporterTest, SymbolicDimsOptionNamesOpenDims) {
  ImportOptions options;
  options.symbolic_dims = true;
  Result<ir::Model> result = import(symbolic_model(), options);
  ASSERT_TRUE(result.is_ok()) << result.status().message();
  const ir::Graph& graph = result->graph;
  EXPECT_EQ(graph.dim_symbols, (std::vector<std::string>{"batch", "seq"}));
  auto type_of = [&](const std::string& name) { return graph.value(*graph.find_value(name)).type; };
  const std::vector<int64_t> symbolic = {ir::symbolic_dim(0), ir::symbolic_dim(1)};
  EXPECT_EQ(type_of("attention_mask").dims, symbolic);
  EXPECT_EQ(type_of("y").dims, symbolic);

  ModelBuilder unnamed;
  unnamed.input("image", kFloat, {"?", "3", "8", "8"});
  unnamed.node("Relu", {"image"}, {"y"}, "relu");
  unnamed.output("y", kFloat, {"?", "3", "8", "8"});
  Result<ir::Model> image = import(unnamed, options);
  ASSERT_TRUE(image.is_ok()) << image.status().message();
  EXPECT_EQ(image->graph.dim_symbols, (std::vector<std::string>{"image[0]"}));

  // An unranked input cannot be made symbolic: the plain error stays.
  ModelBuilder unranked;
  onnx::ValueInfoProto* extra = unranked.graph()->add_input();
  extra->set_name("extra");
  extra->mutable_type()->mutable_tensor_type()->set_elem_type(kFloat);
  unranked.node("Relu", {"extra"}, {"y"}, "relu");
  unranked.output("y", kFloat, dims_of({2}));
  EXPECT_EQ(error_of(unranked, options),
            path_ +
                ": graph inputs have symbolic or unknown dims: extra [*]; give them with "
                "--input-shape extra=<dims>");
}

TEST_F(ImporterTest, InputShapeSpecializesInputsBeforeInference) {
  ImportOptions options;
  options.input_shapes["input_ids"] = {2, 16};
  options.input_shapes["attention_mask"] = {2, 16};
  Result<ir::Model> result = import(symbolic_model(), options);
  ASSERT_TRUE(result.is_ok()) << result.status().message();
  const ir::Graph& graph = result->graph;
  auto type_of = [&](const std::string& name) { return graph.value(*graph.find_value(name)).type; };
  EXPECT_EQ(type_of("input_ids"), ir::TensorType::make(ir::DType::kFloat32, {2, 16}));
  EXPECT_EQ(type_of("y"), ir::TensorType::make(ir::DType::kFloat32, {2, 16}));

  ImportOptions one;
  one.input_shapes["input_ids"] = {2, 16};
  EXPECT_EQ(error_of(symbolic_model(), one),
            path_ +
                ": graph inputs have symbolic or unknown dims: attention_mask [batch,seq]; "
                "give them with --input-shape attention_mask=1,128");
}

TEST_F(ImporterTest, InputShapeNamingNoInputSuggestsTheClosest) {
  ImportOptions options;
  options.input_shapes["input_idz"] = {1, 8};
  EXPECT_EQ(error_of(symbolic_model(), options),
            path_ +
                ": --input-shape input_idz=1,8 names no graph input; did you mean "
                "--input-shape input_ids=1,8?");
}

TEST_F(ImporterTest, InputShapeWithTheWrongRankIsAnError) {
  ImportOptions options;
  options.input_shapes["attention_mask"] = {1, 8, 4};
  options.input_shapes["input_ids"] = {1, 8};
  EXPECT_EQ(error_of(symbolic_model(), options),
            path_ +
                ": --input-shape attention_mask=1,8,4 gives 3 dims, but graph input "
                "\"attention_mask\" has rank 2 [batch,seq]; give 2 dims");
}

TEST_F(ImporterTest, InputTooLargeToAddressIsAnError) {
  ImportOptions options;
  options.input_shapes["input_ids"] = {int64_t{1} << 40, int64_t{1} << 30};
  options.input_shapes["attention_mask"] = {int64_t{1} << 40, int64_t{1} << 30};
  EXPECT_EQ(error_of(symbolic_model(), options),
            path_ +
                ": graph input \"input_ids\" has dims f32[1099511627776,1073741824] too large "
                "to address; give smaller dims with --input-shape input_ids=...");
}

// Inputs that share a dim_param share the dim: two flags that size it differently are
// named, not left to a broadcast error at some Add inside (issue 36 W10).
TEST_F(ImporterTest, InputShapesDisagreeingOnASharedDimAreAnError) {
  ImportOptions options;
  options.input_shapes["input_ids"] = {2, 16};
  options.input_shapes["attention_mask"] = {3, 16};
  EXPECT_EQ(error_of(symbolic_model(), options),
            path_ +
                ": --input-shape attention_mask=3,16 and --input-shape input_ids=2,16 give the dim "
                "\"batch\" the sizes 3 and 2 (dim 0 of both); the model declares them one dim: "
                "give it the same size in every --input-shape");
}

// --input-shape sets dynamic dims only: a static one keeps the model's size, which
// every shape the model declares was derived from (issue 36 W10).
TEST_F(ImporterTest, InputShapeChangingAStaticDimIsAnError) {
  ModelBuilder builder = add_relu_model();
  ImportOptions options;
  options.input_shapes["x"] = {64, 3};
  EXPECT_EQ(error_of(builder, options),
            path_ +
                ": --input-shape x=64,3 sets dim 0 of graph input \"x\" to 64, but the model "
                "declares it [2,3], static 2 there; --input-shape only sets dynamic dims: give 2 "
                "for that dim, or re-export the model with it dynamic");
  options.input_shapes["x"] = {2, 3};
  EXPECT_TRUE(import(builder, options).is_ok());
}

TEST_F(ImporterTest, InputShapeNamingAnInitializerIsAnError) {
  ModelBuilder builder = add_relu_model();
  builder.input("bias", kFloat, dims_of({3}));
  ImportOptions options;
  options.input_shapes["bias"] = {4};
  EXPECT_EQ(error_of(builder, options),
            path_ +
                ": --input-shape bias=4 names \"bias\", an initializer with fixed shape f32[3]; "
                "remove the flag");
}

// bias (12 bytes) at offset 4096 of weights/w.bin.
ModelBuilder external_model(const std::string& location, const std::string& length = "12") {
  ModelBuilder builder = add_relu_model();
  onnx::TensorProto* bias = builder.graph()->mutable_initializer(0);
  bias->clear_raw_data();
  bias->set_data_location(onnx::TensorProto::EXTERNAL);
  auto entry = [&](const std::string& key, const std::string& value) {
    onnx::StringStringEntryProto* added = bias->add_external_data();
    added->set_key(key);
    added->set_value(value);
  };
  entry("location", location);
  entry("offset", "4096");
  if (!length.empty()) entry("length", length);
  return builder;
}

std::string external_file_bytes() {
  std::string bytes(4096, '\0');
  std::vector<float> values = {4.0f, 5.0f, 6.0f};
  bytes.append(reinterpret_cast<const char*>(values.data()), 12);
  return bytes;
}

TEST_F(ImporterTest, ReadsExternalData) {
  scratch_.write("weights/w.bin", external_file_bytes());
  for (const std::string& length : {std::string("12"), std::string()}) {
    Result<ir::Model> result = import(external_model("weights/w.bin", length));
    ASSERT_TRUE(result.is_ok()) << result.status().message();
    const ir::Value& bias = result->graph.value(*result->graph.find_value("bias"));
    EXPECT_EQ(bias.constant->float_at(0), 4.0);
    EXPECT_EQ(bias.constant->float_at(2), 6.0);
    ASSERT_TRUE(bias.constant->external.has_value());
    EXPECT_EQ(*bias.constant->external, (ir::ExternalDataInfo{"weights/w.bin", 4096, 12}));
  }
}

TEST_F(ImporterTest, ReadsExternalDataRelativeToTheBaseDirectory) {
  scratch_.write("w.bin", external_file_bytes());
  Result<ir::Model> result = import_model_from_bytes(external_model("w.bin").bytes(), "memory.onnx",
                                                     scratch_.path().string(), {});
  ASSERT_TRUE(result.is_ok()) << result.status().message();
  EXPECT_EQ(result->graph.value(*result->graph.find_value("bias")).constant->float_at(1), 5.0);
}

TEST_F(ImporterTest, MissingExternalFileIsAnError) {
  EXPECT_EQ(error_of(external_model("w.bin")),
            path_ +
                ": initializer \"bias\" is stored in external file \"w.bin\", which does not "
                "exist beside the model; copy it next to " +
                path_);
}

TEST_F(ImporterTest, ShortExternalFileIsAnError) {
  scratch_.write("w.bin", external_file_bytes().substr(0, 4100));
  EXPECT_EQ(error_of(external_model("w.bin")),
            path_ +
                ": initializer \"bias\" needs 12 bytes at offset 4096 of external file "
                "\"w.bin\", but the file has only 4100 bytes; copy the complete file next "
                "to " +
                path_);
}

TEST_F(ImporterTest, ExternalLengthDisagreeingWithTheTypeIsAnError) {
  scratch_.write("w.bin", external_file_bytes());
  EXPECT_EQ(error_of(external_model("w.bin", "8")),
            path_ +
                ": initializer \"bias\" has external data length 8 but its type f32[3] needs "
                "12 bytes; re-save the model with its external data");
}

TEST_F(ImporterTest, ExternalPathsOutsideTheModelDirectoryAreRefused) {
  EXPECT_EQ(error_of(external_model("/etc/passwd")),
            path_ +
                ": initializer \"bias\" is stored in external file \"/etc/passwd\", an "
                "absolute path; external data must be a path relative to the model's "
                "directory: re-save the model with relative external data locations");
  EXPECT_EQ(error_of(external_model("sub/../../w.bin")),
            path_ +
                ": initializer \"bias\" is stored in external file \"sub/../../w.bin\", which "
                "is outside the model's directory; move the file beside the model and "
                "re-save it with a relative location");
}

TEST_F(ImporterTest, ShapeInferenceErrorsStartWithThePathOnce) {
  ModelBuilder builder;
  builder.input("a", kFloat, dims_of({2, 3}));
  builder.input("b", kFloat, dims_of({4, 5}));
  builder.node("Add", {"a", "b"}, {"y"}, "bad_add");
  builder.output("y", kFloat, dims_of({2, 3}));
  std::string message = error_of(builder);
  EXPECT_EQ(message.rfind(path_ + ": ", 0), 0u) << message;
  EXPECT_EQ(message.find(path_, 1), std::string::npos) << message;
  EXPECT_NE(message.find("bad_add"), std::string::npos) << message;
}

// Nothing compiles strings: a string tensor is refused at import, where its type is
// known, not by `stitchopt run` after a compile that succeeded (issue 36 W1).
TEST_F(ImporterTest, StringTensorsAreAnError) {
  constexpr int32_t kString = onnx::TensorProto::STRING;
  ModelBuilder input;
  input.input("words", kString, dims_of({2}));
  input.node("Identity", {"words"}, {"y"}, "copy");
  input.output("y", kString, dims_of({2}));
  EXPECT_EQ(error_of(input),
            path_ +
                ": graph input \"words\" is a string tensor (string[2]); stitchopt compiles models "
                "of numeric tensors: do the string work (tokenizing, vocabulary lookups) outside "
                "the model, or split the graph before it");
  ModelBuilder cast;
  cast.input("x", kFloat, dims_of({2}));
  add_int_attribute(cast.node("Cast", {"x"}, {"y"}, "to_text"), "to", kString);
  cast.output("y", kString, dims_of({2}));
  EXPECT_PRED2(starts_with, error_of(cast),
               path_ + ": node \"to_text\" (Cast) output 0 \"y\" is a string tensor (string[2]);");
  ModelBuilder initializer;
  onnx::TensorProto* table = initializer.graph()->add_initializer();
  table->set_name("table");
  table->set_data_type(kString);
  table->add_dims(1);
  table->add_string_data("word");
  initializer.output("table", kString, dims_of({1}));
  EXPECT_PRED2(starts_with, error_of(initializer),
               path_ + ": graph output \"table\" is a string tensor (string[1]);");
}

// A model-local function whose calls lead back to itself would expand forever
// (issue 36 W1); the chain is named.
TEST_F(ImporterTest, RecursiveFunctionsAreAnError) {
  auto function_calling = [](ModelBuilder& builder, const std::string& name,
                             const std::string& callee) {
    onnx::FunctionProto* function = builder.model.add_functions();
    function->set_name(name);
    function->set_domain("cust");
    function->add_input("a");
    function->add_output("b");
    onnx::NodeProto* call = function->add_node();
    call->set_op_type(callee);
    call->set_domain("cust");
    call->add_input("a");
    call->add_output("b");
  };
  ModelBuilder self;
  self.add_opset("cust", 1);
  function_calling(self, "rec", "rec");
  self.input("x", kFloat, dims_of({2}));
  self.node("rec", {"x"}, {"y"}, "call", "cust");
  self.output("y", kFloat, dims_of({2}));
  EXPECT_EQ(error_of(self),
            path_ +
                ": model-local function \"cust.rec\" calls itself (1 call: \"cust.rec\" -> "
                "\"cust.rec\"); a function cannot be recursive: remove the call or write the body "
                "out (ONNX Runtime and the ONNX checker refuse such a model too)");
  ModelBuilder pair;
  pair.add_opset("cust", 1);
  function_calling(pair, "f", "g");
  function_calling(pair, "g", "f");
  function_calling(pair, "h", "f");
  pair.input("x", kFloat, dims_of({2}));
  pair.node("h", {"x"}, {"y"}, "call", "cust");
  pair.output("y", kFloat, dims_of({2}));
  EXPECT_PRED2(
      starts_with, error_of(pair),
      path_ +
          ": model-local function \"cust.f\" calls itself (2 calls: \"cust.f\" -> \"cust.g\" "
          "-> \"cust.f\");");
}

// Ifs nested inside each other: 31 parse; past protobuf's recursion limit the
// message says so instead of calling the file truncated (issue 36 W11).
TEST_F(ImporterTest, SubgraphsNestedPastTheParserLimitAreNamed) {
  auto nested_ifs = [](int depth) {
    ModelBuilder builder;
    builder.input("c", kBool, {});
    builder.input("x", kFloat, dims_of({2}));
    onnx::GraphProto* graph = builder.graph();
    std::string output = "y";
    for (int level = 0; level < depth; ++level) {
      onnx::NodeProto* branch = ModelBuilder::add_node(graph, "If", {"c"}, {output});
      for (const char* name : {"then_branch", "else_branch"}) {
        onnx::AttributeProto* attribute = branch->add_attribute();
        attribute->set_name(name);
        attribute->set_type(onnx::AttributeProto::GRAPH);
      }
      onnx::GraphProto* leaf = branch->mutable_attribute(1)->mutable_g();
      ModelBuilder::add_node(leaf, "Identity", {"x"}, {"l" + std::to_string(level)});
      testing_onnx::set_type(leaf->add_output()->mutable_type(), kFloat, dims_of({2}));
      leaf->mutable_output(0)->set_name("l" + std::to_string(level));
      graph = branch->mutable_attribute(0)->mutable_g();
      output = "o" + std::to_string(level);
      testing_onnx::set_type(graph->add_output()->mutable_type(), kFloat, dims_of({2}));
      graph->mutable_output(0)->set_name(output);
    }
    ModelBuilder::add_node(graph, "Identity", {"x"}, {output});
    builder.output("y", kFloat, dims_of({2}));
    return builder;
  };
  EXPECT_TRUE(import(nested_ifs(31)).is_ok());
  EXPECT_EQ(error_of(nested_ifs(200)),
            path_ +
                ": the model nests subgraphs 200 deep (If, Loop or Scan bodies inside each "
                "other), more than the 31 that stitchopt's protobuf parser reads (it stops at 100 "
                "nested messages); flatten the nested control flow or re-export the model");
  Result<ir::Model> from_bytes =
      import_model_from_bytes(nested_ifs(32).bytes(), "given.onnx", "/nonexistent", {});
  ASSERT_FALSE(from_bytes.is_ok());
  EXPECT_EQ(from_bytes.status().message().rfind("given.onnx: the model nests subgraphs 32 deep", 0),
            0u);
}

// The scan behind that message follows only the graph-holding fields and gives up
// on bytes that are not wire data, so a truncated file keeps parse_error's message.
TEST(SubgraphNestingTest, MeasuresGraphFieldsAndRejectsMalformedBytes) {
  ModelBuilder builder = add_relu_model();
  std::optional<SubgraphNesting> flat = measure_subgraph_nesting(builder.bytes());
  ASSERT_TRUE(flat.has_value());
  EXPECT_EQ(flat->subgraphs, 0);
  EXPECT_EQ(flat->message_depth, 1);                                 // ModelProto.graph
  EXPECT_FALSE(measure_subgraph_nesting("\x3a\x05xy").has_value());  // graph longer than the bytes
  EXPECT_FALSE(measure_subgraph_nesting("\x0b").has_value());        // a group
  EXPECT_FALSE(measure_subgraph_nesting("\x08\xff").has_value());    // a cut varint
}

// A directory, a FIFO or a device is refused before a byte is read: a FIFO would
// block the read, /dev/zero never end it (issue 36 W11).
TEST_F(ImporterTest, NonRegularModelFilesAreAnError) {
  const std::string suffix =
      ": is not a regular file (a directory, a FIFO or a device); give the model file's path";
  std::string directory = scratch_.path().string();
  EXPECT_EQ(import_model(directory, {}).status().message(), directory + suffix);
  std::string fifo = scratch_.file("fifo.onnx");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(import_model(fifo, {}).status().message(), fifo + suffix);
  EXPECT_EQ(import_model("/dev/zero", {}).status().message(), "/dev/zero" + suffix);
}

TEST_F(ImporterTest, ImportFromBytesNamesThePathInMessages) {
  Result<ir::Model> result = import_model_from_bytes("junk", "given.onnx", "/nonexistent", {});
  ASSERT_FALSE(result.is_ok());
  EXPECT_EQ(result.status().message().rfind("given.onnx: not a valid ONNX model", 0), 0u);
}

}  // namespace
}  // namespace stitch::onnx_import
