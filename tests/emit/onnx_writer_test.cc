// The ONNX writer: import -> write -> import is the identity on the IR, ONNX's
// checker accepts the output, external data is written and read back, and writing
// twice gives the same bytes.
#include "emit/onnx_writer.h"

#include <gtest/gtest.h>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "onnx_import/importer.h"
#include "tests/onnx_import/onnx_test_util.h"

namespace stitch::emit {
namespace {

using testing_onnx::add_float_attribute;
using testing_onnx::add_int_attribute;
using testing_onnx::add_ints_attribute;
using testing_onnx::dims_of;
using testing_onnx::kBool;
using testing_onnx::kFloat;
using testing_onnx::ModelBuilder;
using testing_onnx::read_file;
using testing_onnx::ScratchDirectory;

// A small transformer-ish block: MatMul, Add, Softmax, Reshape with a constant
// shape, Transpose, Gemm, an unnamed node, a string initializer, metadata and a
// model-local function.
ModelBuilder block_model() {
  ModelBuilder builder(13, 7);
  builder.model.set_producer_version("9.9");
  builder.model.set_doc_string("a block");
  builder.model.set_model_version(3);
  onnx::StringStringEntryProto* meta = builder.model.add_metadata_props();
  meta->set_key("k");
  meta->set_value("v");
  builder.graph()->set_doc_string("graph doc");
  builder.input("x", kFloat, dims_of({2, 4}));
  builder.float_initializer("w", {4, 4}, std::vector<float>(16, 0.5f));
  builder.float_initializer("b", {4}, {1, 2, 3, 4});
  builder.int64_initializer("shape", {2}, {4, 2});
  onnx::TensorProto* labels = builder.graph()->add_initializer();
  labels->set_name("labels");
  labels->set_data_type(onnx::TensorProto::STRING);
  labels->add_dims(2);
  labels->add_string_data("cat");
  labels->add_string_data("dog");
  builder.node("MatMul", {"x", "w"}, {"mm"}, "matmul");
  builder.node("Add", {"mm", "b"}, {"biased"}, "add")->set_doc_string("bias add");
  add_int_attribute(builder.node("Softmax", {"biased"}, {"probs"}, "softmax"), "axis", -1);
  builder.node("Reshape", {"probs", "shape"}, {"reshaped"}, "reshape");
  add_ints_attribute(builder.node("Transpose", {"reshaped"}, {"t"}, ""), "perm", {1, 0});
  onnx::NodeProto* gemm = builder.node("Gemm", {"t", "t"}, {"y"}, "gemm");
  add_float_attribute(gemm, "alpha", 0.25f);
  add_int_attribute(gemm, "transB", 1);
  builder.output("y", kFloat, dims_of({2, 2}));
  return builder;
}

class OnnxWriterTest : public ::testing::Test {
 protected:
  Result<ir::Model> import_bytes(const std::string& bytes, const std::string& name = "in.onnx") {
    return onnx_import::import_model(scratch_.write(name, bytes), {});
  }
  // Writes `model` to `name` in the scratch directory and imports it again.
  Result<ir::Model> write_and_reimport(const ir::Model& model, const std::string& name,
                                       const OnnxWriteOptions& options = {}) {
    std::string path = scratch_.file(name);
    Status written = write_onnx(model, path, options);
    if (!written.is_ok()) return written;
    return onnx_import::import_model(path, {});
  }
  onnx::ModelProto read_proto(const std::string& name) {
    onnx::ModelProto proto;
    EXPECT_TRUE(proto.ParseFromString(read_file(scratch_.file(name))));
    return proto;
  }
  // ONNX's C++ checker (1.12: IR <= 8, opsets <= 17).
  static std::string cpp_checker_error(const std::string& path) {
    try {
      onnx::checker::check_model(path);
    } catch (const std::exception& error) {
      return error.what();
    }
    return "";
  }
  // The venv's Python checker (onnx >= 1.17), the reference for newer opsets.
  static int python_checker(const std::string& path) {
    std::string python = std::string(STITCH_SOURCE_DIR) + "/.venv/bin/python";
    if (!std::filesystem::exists(python)) return -1;
    std::string command = python +
                          " -c 'import onnx, sys; onnx.checker.check_model(sys.argv[1], "
                          "full_check=True)' '" +
                          path + "'";
    return std::system(command.c_str());
  }

  ScratchDirectory scratch_;
};

TEST_F(OnnxWriterTest, RoundTripKeepsTheModel) {
  ModelBuilder builder = block_model();
  onnx::FunctionProto* function = builder.model.add_functions();
  function->set_name("Helper");
  function->set_domain("com.example");
  Result<ir::Model> first = import_bytes(builder.bytes());
  ASSERT_TRUE(first.is_ok()) << first.status().message();
  Result<ir::Model> second = write_and_reimport(*first, "out.onnx");
  ASSERT_TRUE(second.is_ok()) << second.status().message();
  testing_onnx::expect_same_model(*first, *second);
  // Every intermediate value has value_info with its inferred type.
  onnx::ModelProto written = read_proto("out.onnx");
  std::vector<std::string> infos;
  for (const onnx::ValueInfoProto& info : written.graph().value_info()) {
    infos.push_back(info.name());
    EXPECT_TRUE(info.type().tensor_type().has_shape()) << info.name();
  }
  EXPECT_EQ(infos, (std::vector<std::string>{"mm", "biased", "probs", "reshaped", "t"}));
  EXPECT_EQ(written.graph().initializer(3).string_data_size(), 2);
  EXPECT_EQ(written.graph().initializer(0).raw_data().size(), 64u);
}

TEST_F(OnnxWriterTest, CheckersAcceptTheOutput) {
  ModelBuilder builder = block_model();
  Result<ir::Model> model = import_bytes(builder.bytes());
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  std::string path = scratch_.file("out.onnx");
  ASSERT_TRUE(write_onnx(*model, path).is_ok());
  EXPECT_EQ(cpp_checker_error(path), "");
  int python = python_checker(path);
  if (python >= 0) {
    EXPECT_EQ(python, 0);
  }
}

TEST_F(OnnxWriterTest, PythonCheckerAcceptsOpset21Output) {
  ModelBuilder builder(21, 10);
  builder.input("x", kFloat, dims_of({2, 8}));
  builder.float_initializer("scale", {8}, std::vector<float>(8, 1.0f));
  builder.float_initializer("bias", {8}, std::vector<float>(8, 0.0f));
  add_int_attribute(builder.node("LayerNormalization", {"x", "scale", "bias"}, {"ln"}, "ln"),
                    "axis", -1);
  builder.node("Gelu", {"ln"}, {"y"}, "gelu");
  builder.output("y", kFloat, dims_of({2, 8}));
  Result<ir::Model> model = import_bytes(builder.bytes());
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  std::string path = scratch_.file("out.onnx");
  ASSERT_TRUE(write_onnx(*model, path).is_ok());
  int python = python_checker(path);
  if (python < 0) GTEST_SKIP() << "no .venv (scripts/setup.sh makes it)";
  EXPECT_EQ(python, 0);
  Result<ir::Model> again = onnx_import::import_model(path, {});
  ASSERT_TRUE(again.is_ok()) << again.status().message();
  testing_onnx::expect_same_model(*model, *again);
}

TEST_F(OnnxWriterTest, WritingTwiceGivesTheSameBytes) {
  Result<ir::Model> model = import_bytes(block_model().bytes());
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  std::filesystem::create_directories(scratch_.path() / "a");
  std::filesystem::create_directories(scratch_.path() / "b");
  ASSERT_TRUE(write_onnx(*model, scratch_.file("a/out.onnx")).is_ok());
  ASSERT_TRUE(write_onnx(*model, scratch_.file("b/out.onnx")).is_ok());
  std::string a = read_file(scratch_.file("a/out.onnx"));
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, read_file(scratch_.file("b/out.onnx")));
  EXPECT_FALSE(std::filesystem::exists(scratch_.file("a/out.onnx.tmp")));
}

TEST_F(OnnxWriterTest, NodesAreWrittenInTopologicalOrder) {
  ModelBuilder builder;
  builder.input("x", kFloat, dims_of({4}));
  builder.node("Relu", {"a"}, {"y"}, "second");
  builder.node("Neg", {"x"}, {"a"}, "first");
  builder.output("y", kFloat, dims_of({4}));
  Result<ir::Model> model = import_bytes(builder.bytes());
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  ASSERT_TRUE(write_onnx(*model, scratch_.file("out.onnx")).is_ok());
  onnx::ModelProto written = read_proto("out.onnx");
  ASSERT_EQ(written.graph().node_size(), 2);
  EXPECT_EQ(written.graph().node(0).name(), "first");
  EXPECT_EQ(written.graph().node(1).name(), "second");
  EXPECT_EQ(cpp_checker_error(scratch_.file("out.onnx")), "");
}

TEST_F(OnnxWriterTest, SubgraphsAndOptionalSlotsRoundTrip) {
  ModelBuilder builder;
  builder.input("cond", kBool, {});
  builder.input("x", kFloat, dims_of({3}));
  builder.node("Neg", {"x"}, {"neg"}, "neg");
  onnx::NodeProto* branch = builder.node("If", {"cond"}, {"z"}, "if_1");
  for (const char* name : {"then_branch", "else_branch"}) {
    onnx::AttributeProto* attribute = branch->add_attribute();
    attribute->set_name(name);
    attribute->set_type(onnx::AttributeProto::GRAPH);
    onnx::GraphProto* body = attribute->mutable_g();
    body->set_name(name);
    std::string out = std::string(name) + "_out";
    ModelBuilder::add_node(body, name[0] == 't' ? "Identity" : "Abs", {"neg"}, {out});
    onnx::ValueInfoProto* output = body->add_output();
    output->set_name(out);
    testing_onnx::set_type(output->mutable_type(), kFloat, dims_of({3}));
  }
  builder.float_initializer("high", {}, {1.0f});
  builder.node("Clip", {"z", "", "high"}, {"y"}, "clip");
  builder.output("y", kFloat, dims_of({3}));
  Result<ir::Model> first = import_bytes(builder.bytes());
  ASSERT_TRUE(first.is_ok()) << first.status().message();
  Result<ir::Model> second = write_and_reimport(*first, "out.onnx");
  ASSERT_TRUE(second.is_ok()) << second.status().message();
  testing_onnx::expect_same_model(*first, *second);
  EXPECT_EQ(cpp_checker_error(scratch_.file("out.onnx")), "");
  onnx::ModelProto written = read_proto("out.onnx");
  EXPECT_EQ(written.graph().node(1).attribute(0).SerializeAsString(),
            branch->attribute(0).SerializeAsString());
  EXPECT_EQ(written.graph().node(2).input(1), "");
}

// w (64 bytes) and b (16 bytes) external in the input; s (8 bytes) inline.
ModelBuilder external_model(const ScratchDirectory& scratch) {
  ModelBuilder builder;
  builder.input("x", kFloat, dims_of({2, 4}));
  std::string data(4096 + 64 + 16, '\0');
  std::vector<float> w(16);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i);
  std::vector<float> b = {1, 2, 3, 4};
  std::memcpy(data.data(), w.data(), 64);
  std::memcpy(data.data() + 4096, b.data(), 16);
  scratch.write("in.bin", data);
  auto external = [&](const std::string& name, std::vector<int64_t> dims, int64_t offset) {
    onnx::TensorProto* tensor = builder.graph()->add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(kFloat);
    for (int64_t dim : dims) tensor->add_dims(dim);
    tensor->set_data_location(onnx::TensorProto::EXTERNAL);
    onnx::StringStringEntryProto* location = tensor->add_external_data();
    location->set_key("location");
    location->set_value("in.bin");
    onnx::StringStringEntryProto* start = tensor->add_external_data();
    start->set_key("offset");
    start->set_value(std::to_string(offset));
  };
  external("w", {4, 4}, 0);
  builder.float_initializer("s", {2, 1}, {0.5f, 0.25f});
  external("b", {4}, 4096);
  builder.node("MatMul", {"x", "w"}, {"mm"}, "matmul");
  builder.node("Add", {"mm", "b"}, {"a"}, "add");
  builder.node("Mul", {"a", "s"}, {"y"}, "mul");
  builder.output("y", kFloat, dims_of({2, 4}));
  return builder;
}

TEST_F(OnnxWriterTest, ExternalDataIsWrittenAlignedAndReadBack) {
  Result<ir::Model> first = import_bytes(external_model(scratch_).bytes());
  ASSERT_TRUE(first.is_ok()) << first.status().message();
  std::filesystem::create_directories(scratch_.path() / "out");
  Result<ir::Model> second = write_and_reimport(*first, "out/model.onnx");
  ASSERT_TRUE(second.is_ok()) << second.status().message();
  testing_onnx::expect_same_model(*first, *second);
  const ir::Tensor& w = *second->graph.value(*second->graph.find_value("w")).constant;
  ASSERT_TRUE(w.external.has_value());
  EXPECT_EQ(*w.external, (ir::ExternalDataInfo{"model.onnx.data", 0, 64}));
  const ir::Tensor& b = *second->graph.value(*second->graph.find_value("b")).constant;
  ASSERT_TRUE(b.external.has_value());
  EXPECT_EQ(*b.external, (ir::ExternalDataInfo{"model.onnx.data", 4096, 16}));
  EXPECT_FALSE(second->graph.value(*second->graph.find_value("s")).constant->external);
  EXPECT_EQ(std::filesystem::file_size(scratch_.file("out/model.onnx.data")), 4096u + 16u);
  EXPECT_EQ(cpp_checker_error(scratch_.file("out/model.onnx")), "");
}

TEST_F(OnnxWriterTest, ExternalDataFileNameAndThresholdFollowTheOptions) {
  Result<ir::Model> model = import_bytes(external_model(scratch_).bytes());
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  OnnxWriteOptions options;
  options.external_data_name = "weights.bin";
  options.external_threshold_bytes = 8;  // s (8 bytes) goes out too
  ASSERT_TRUE(write_onnx(*model, scratch_.file("out.onnx"), options).is_ok());
  onnx::ModelProto written = read_proto("out.onnx");
  ASSERT_EQ(written.graph().initializer_size(), 3);
  for (const onnx::TensorProto& tensor : written.graph().initializer()) {
    EXPECT_EQ(tensor.data_location(), onnx::TensorProto::EXTERNAL) << tensor.name();
    EXPECT_EQ(tensor.external_data(0).value(), "weights.bin");
  }
  EXPECT_EQ(written.graph().initializer(1).external_data(1).value(), "4096");
  EXPECT_EQ(written.graph().initializer(2).external_data(1).value(), "8192");
  EXPECT_EQ(std::filesystem::file_size(scratch_.file("weights.bin")), 8192u + 16u);
}

TEST_F(OnnxWriterTest, ModelWithoutExternalDataStaysInline) {
  Result<ir::Model> model = import_bytes(block_model().bytes());
  ASSERT_TRUE(model.is_ok());
  ASSERT_TRUE(write_onnx(*model, scratch_.file("out.onnx")).is_ok());
  EXPECT_FALSE(std::filesystem::exists(scratch_.file("out.onnx.data")));
}

TEST_F(OnnxWriterTest, UnwritableDirectoryIsAnError) {
  Result<ir::Model> model = import_bytes(block_model().bytes());
  ASSERT_TRUE(model.is_ok());
  std::string path = scratch_.file("missing/out.onnx");
  Status written = write_onnx(*model, path);
  ASSERT_FALSE(written.is_ok());
  EXPECT_EQ(written.message(), path +
                                   ": cannot write (No such file or directory); check that "
                                   "the directory exists and is writable");
}

// Every model shipped in models/: import, write, import again gives the same IR,
// and the checkers accept the output (C++ where its opset allows, else Python).
TEST_F(OnnxWriterTest, ShippedModelsRoundTrip) {
  std::string models_dir = std::string(STITCH_SOURCE_DIR) + "/models";
  std::vector<std::string> files = testing_onnx::model_files(models_dir);
  if (files.empty()) GTEST_SKIP() << "no models/*.onnx";
  for (const std::string& path : files) {
    std::string file = std::filesystem::path(path).filename().string();
    onnx_import::ImportOptions options;
    options.input_shapes = testing_onnx::manifest_input_shapes(models_dir, file);
    Result<ir::Model> first = onnx_import::import_model(path, options);
    ASSERT_TRUE(first.is_ok()) << first.status().message();
    std::string out = scratch_.file(file);
    ASSERT_TRUE(write_onnx(*first, out).is_ok()) << file;
    Result<ir::Model> second = onnx_import::import_model(out, options);
    ASSERT_TRUE(second.is_ok()) << second.status().message();
    SCOPED_TRACE(file);
    testing_onnx::expect_same_model(*first, *second);
    if (first->default_opset() <= 17 && first->ir_version <= 8) {
      EXPECT_EQ(cpp_checker_error(out), "");
    }
    int python = python_checker(out);
    if (python >= 0) {
      EXPECT_EQ(python, 0);
    }
  }
}

}  // namespace
}  // namespace stitch::emit
