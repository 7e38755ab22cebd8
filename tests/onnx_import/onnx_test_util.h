// Test helpers: build small ModelProtos with the ONNX protobuf API, save them in a
// scratch directory and compare imported models. Header-only: tests/onnx_import and
// tests/emit include it.
#pragma once

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "ir/core/graph.h"

namespace stitch::testing_onnx {

// Dims of a value_info: a number is dim_value, "?" an empty dim, anything else a
// dim_param.
using DimList = std::vector<std::string>;

inline DimList dims_of(std::initializer_list<int64_t> dims) {
  DimList list;
  for (int64_t dim : dims) list.push_back(dim < 0 ? "?" : std::to_string(dim));
  return list;
}

inline void set_type(onnx::TypeProto* type, int32_t elem_type, const DimList& dims) {
  onnx::TypeProto::Tensor* tensor = type->mutable_tensor_type();
  tensor->set_elem_type(elem_type);
  onnx::TensorShapeProto* shape = tensor->mutable_shape();
  for (const std::string& dim : dims) {
    onnx::TensorShapeProto::Dimension* added = shape->add_dim();
    if (dim == "?") continue;
    if (!dim.empty() && (std::isdigit(static_cast<unsigned char>(dim[0])) != 0)) {
      added->set_dim_value(std::stoll(dim));
    } else {
      added->set_dim_param(dim);
    }
  }
}

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;
constexpr int32_t kInt64 = onnx::TensorProto::INT64;
constexpr int32_t kBool = onnx::TensorProto::BOOL;

class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 17, int64_t ir_version = 8) {
    model.set_ir_version(ir_version);
    onnx::OperatorSetIdProto* import = model.add_opset_import();
    import->set_domain("");
    import->set_version(opset);
    model.set_producer_name("stitchopt-test");
    graph()->set_name("test_graph");
  }

  onnx::GraphProto* graph() { return model.mutable_graph(); }

  onnx::ValueInfoProto* input(const std::string& name, int32_t elem_type, const DimList& dims) {
    onnx::ValueInfoProto* added = graph()->add_input();
    added->set_name(name);
    set_type(added->mutable_type(), elem_type, dims);
    return added;
  }
  onnx::ValueInfoProto* output(const std::string& name, int32_t elem_type, const DimList& dims) {
    onnx::ValueInfoProto* added = graph()->add_output();
    added->set_name(name);
    set_type(added->mutable_type(), elem_type, dims);
    return added;
  }
  onnx::ValueInfoProto* value_info(const std::string& name, int32_t elem_type,
                                   const DimList& dims) {
    onnx::ValueInfoProto* added = graph()->add_value_info();
    added->set_name(name);
    set_type(added->mutable_type(), elem_type, dims);
    return added;
  }
  onnx::NodeProto* node(const std::string& op_type, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name = "",
                        const std::string& domain = "") {
    return add_node(graph(), op_type, inputs, outputs, name, domain);
  }
  static onnx::NodeProto* add_node(onnx::GraphProto* graph, const std::string& op_type,
                                   const std::vector<std::string>& inputs,
                                   const std::vector<std::string>& outputs,
                                   const std::string& name = "", const std::string& domain = "") {
    onnx::NodeProto* added = graph->add_node();
    added->set_op_type(op_type);
    if (!name.empty()) added->set_name(name);
    if (!domain.empty()) added->set_domain(domain);
    for (const std::string& input : inputs) added->add_input(input);
    for (const std::string& output : outputs) added->add_output(output);
    return added;
  }
  onnx::TensorProto* float_initializer(const std::string& name, std::vector<int64_t> dims,
                                       const std::vector<float>& values) {
    onnx::TensorProto* added = graph()->add_initializer();
    added->set_name(name);
    added->set_data_type(kFloat);
    for (int64_t dim : dims) added->add_dims(dim);
    added->set_raw_data(
        std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
    return added;
  }
  onnx::TensorProto* int64_initializer(const std::string& name, std::vector<int64_t> dims,
                                       const std::vector<int64_t>& values) {
    onnx::TensorProto* added = graph()->add_initializer();
    added->set_name(name);
    added->set_data_type(kInt64);
    for (int64_t dim : dims) added->add_dims(dim);
    for (int64_t value : values) added->add_int64_data(value);
    return added;
  }
  void add_opset(const std::string& domain, int64_t version) {
    onnx::OperatorSetIdProto* import = model.add_opset_import();
    import->set_domain(domain);
    import->set_version(version);
  }

  std::string bytes() const { return model.SerializeAsString(); }

  onnx::ModelProto model;
};

inline onnx::AttributeProto* add_int_attribute(onnx::NodeProto* node, const std::string& name,
                                               int64_t value) {
  onnx::AttributeProto* attribute = node->add_attribute();
  attribute->set_name(name);
  attribute->set_type(onnx::AttributeProto::INT);
  attribute->set_i(value);
  return attribute;
}

inline onnx::AttributeProto* add_ints_attribute(onnx::NodeProto* node, const std::string& name,
                                                const std::vector<int64_t>& values) {
  onnx::AttributeProto* attribute = node->add_attribute();
  attribute->set_name(name);
  attribute->set_type(onnx::AttributeProto::INTS);
  for (int64_t value : values) attribute->add_ints(value);
  return attribute;
}

inline onnx::AttributeProto* add_float_attribute(onnx::NodeProto* node, const std::string& name,
                                                 float value) {
  onnx::AttributeProto* attribute = node->add_attribute();
  attribute->set_name(name);
  attribute->set_type(onnx::AttributeProto::FLOAT);
  attribute->set_f(value);
  return attribute;
}

// A fresh directory under the test temp dir, removed when the object goes away.
class ScratchDirectory {
 public:
  ScratchDirectory() {
    std::string pattern = (std::filesystem::temp_directory_path() / "stitch_onnx_XXXXXX").string();
    STITCH_CHECK(mkdtemp(pattern.data()) != nullptr) << "mkdtemp failed";
    path_ = pattern;
  }
  ~ScratchDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;

  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string write(const std::string& name, const std::string& bytes) const {
    std::string target = file(name);
    std::filesystem::create_directories(std::filesystem::path(target).parent_path());
    std::ofstream stream(target, std::ios::binary);
    stream.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return target;
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline std::string read_file(const std::string& path) {
  std::ifstream stream(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(stream), std::istreambuf_iterator<char>());
}

// Everything the IR says about a model, by name (ids may differ between two imports
// of equivalent files): used to check that import -> write -> import is the identity.
// External data placement is not compared (the writer chooses its own file).
inline void expect_same_model(const ir::Model& a, const ir::Model& b) {
  EXPECT_EQ(a.ir_version, b.ir_version);
  EXPECT_EQ(a.opset_imports, b.opset_imports);
  EXPECT_EQ(a.producer_name, b.producer_name);
  EXPECT_EQ(a.producer_version, b.producer_version);
  EXPECT_EQ(a.domain, b.domain);
  EXPECT_EQ(a.model_version, b.model_version);
  EXPECT_EQ(a.doc_string, b.doc_string);
  EXPECT_EQ(a.metadata_props, b.metadata_props);
  EXPECT_EQ(a.functions, b.functions);
  const ir::Graph& ga = a.graph;
  const ir::Graph& gb = b.graph;
  EXPECT_EQ(ga.name, gb.name);
  EXPECT_EQ(ga.doc_string, gb.doc_string);
  auto names = [](const ir::Graph& graph, const std::vector<ir::ValueId>& ids) {
    std::vector<std::string> result;
    for (ir::ValueId id : ids) result.push_back(id == ir::kNoId ? "" : graph.value(id).name);
    return result;
  };
  EXPECT_EQ(names(ga, ga.graph_inputs()), names(gb, gb.graph_inputs()));
  EXPECT_EQ(names(ga, ga.graph_outputs()), names(gb, gb.graph_outputs()));
  EXPECT_EQ(names(ga, ga.initializers()), names(gb, gb.initializers()));
  ASSERT_EQ(ga.value_capacity(), gb.value_capacity());
  for (ir::ValueId id = 0; id < ga.value_capacity(); ++id) {
    const ir::Value& va = ga.value(id);
    std::optional<ir::ValueId> other = gb.find_value(va.name);
    ASSERT_TRUE(other.has_value()) << va.name;
    const ir::Value& vb = gb.value(*other);
    EXPECT_EQ(va.type, vb.type) << va.name << ": " << ir::to_string(va.type) << " vs "
                                << ir::to_string(vb.type);
    EXPECT_EQ(va.is_graph_input, vb.is_graph_input) << va.name;
    EXPECT_EQ(va.is_graph_output, vb.is_graph_output) << va.name;
    ASSERT_EQ(va.constant == nullptr, vb.constant == nullptr) << va.name;
    if (va.constant != nullptr) {
      EXPECT_EQ(va.constant->dtype, vb.constant->dtype) << va.name;
      EXPECT_EQ(va.constant->dims, vb.constant->dims) << va.name;
      EXPECT_EQ(va.constant->bytes, vb.constant->bytes) << va.name;
      EXPECT_EQ(va.constant->strings, vb.constant->strings) << va.name;
    }
    EXPECT_EQ(va.producer == ir::kNoId, vb.producer == ir::kNoId) << va.name;
    if (va.producer != ir::kNoId && vb.producer != ir::kNoId) {
      EXPECT_EQ(ga.node(va.producer).name, gb.node(vb.producer).name) << va.name;
    }
  }
  std::vector<ir::NodeId> na = ga.node_ids();
  std::vector<ir::NodeId> nb = gb.node_ids();
  ASSERT_EQ(na.size(), nb.size());
  for (size_t i = 0; i < na.size(); ++i) {
    const ir::Node& x = ga.node(na[i]);
    const ir::Node& y = gb.node(nb[i]);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.op_type, y.op_type);
    EXPECT_EQ(x.domain, y.domain);
    EXPECT_EQ(x.opset, y.opset);
    EXPECT_EQ(x.attributes, y.attributes) << x.name;
    EXPECT_EQ(names(ga, x.inputs), names(gb, y.inputs)) << x.name;
    EXPECT_EQ(names(ga, x.outputs), names(gb, y.outputs)) << x.name;
    EXPECT_EQ(names(ga, x.implicit_inputs), names(gb, y.implicit_inputs)) << x.name;
    EXPECT_EQ(x.doc_string, y.doc_string);
    EXPECT_EQ(x.origin, y.origin);
  }
}

// --input-shape flags the model manifest lists for a model ("name=2,16").
inline std::map<std::string, std::vector<int64_t>> manifest_input_shapes(
    const std::string& models_dir, const std::string& file) {
  std::map<std::string, std::vector<int64_t>> shapes;
  std::ifstream stream(models_dir + "/manifest.json");
  if (!stream) return shapes;
  nlohmann::json manifest = nlohmann::json::parse(stream, nullptr, false);
  if (manifest.is_discarded() || !manifest.contains("models")) return shapes;
  for (const nlohmann::json& entry : manifest["models"]) {
    if (entry.value("file", "") != file || !entry.contains("input_shape_flags")) continue;
    for (const nlohmann::json& flag : entry["input_shape_flags"]) {
      std::string text = flag.get<std::string>();
      size_t equals = text.find('=');
      std::vector<int64_t> dims;
      std::stringstream parts(text.substr(equals + 1));
      for (std::string part; std::getline(parts, part, ',');) dims.push_back(std::stoll(part));
      shapes[text.substr(0, equals)] = dims;
    }
  }
  return shapes;
}

// models/*.onnx, sorted.
inline std::vector<std::string> model_files(const std::string& models_dir) {
  std::vector<std::string> files;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(models_dir, error)) {
    if (entry.path().extension() == ".onnx") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace stitch::testing_onnx
