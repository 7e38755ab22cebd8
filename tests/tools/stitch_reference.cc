// stitch_reference MODEL.onnx DIR: evaluates MODEL with the reference interpreter.
//
// A development tool for the differential tests (tests/reference/): reads
// DIR/input_N.pb (serialized onnx.TensorProto, in graph input order: the ONNX
// backend test-data layout), runs ir::evaluate_graph and writes DIR/ref_output_N.pb
// in graph output order. Graph inputs with an initializer default may have no file.
// Every graph input is specialized to the shape of its tensor (symbolic dims too).
// Exit codes: 0 success, 2 bad input or usage (one line on stderr).
#include <onnx/onnx_pb.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "emit/onnx_proto_convert.h"
#include "ir/reference/interpreter.h"
#include "onnx_import/importer.h"
#include "onnx_import/tensor_proto.h"

namespace {

int fail(const std::string& message) {
  std::cerr << "stitch_reference: " << message << std::endl;
  return 2;
}

stitch::Result<std::string> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return stitch::Status::invalid_input(path.string() + ": cannot open");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

int run(const std::string& model_path, const std::filesystem::path& directory) {
  // The model's own graph inputs (initializers excluded), to pair with input_N.pb and
  // to specialize symbolic dims to the shapes of the given tensors.
  stitch::Result<std::string> model_bytes = read_file(model_path);
  if (!model_bytes.is_ok()) return fail(model_bytes.status().message());
  onnx::ModelProto model_proto;
  if (!model_proto.ParseFromString(*model_bytes)) return fail(model_path + ": not an ONNX model");
  std::set<std::string> initializer_names;
  for (const onnx::TensorProto& initializer : model_proto.graph().initializer()) {
    initializer_names.insert(initializer.name());
  }
  const stitch::onnx_import::TensorReadContext context{model_path, directory.string()};
  std::map<std::string, stitch::ir::Tensor> inputs;
  stitch::onnx_import::ImportOptions options;
  for (int i = 0; i < model_proto.graph().input_size(); ++i) {
    const std::string& name = model_proto.graph().input(i).name();
    std::filesystem::path file = directory / ("input_" + std::to_string(i) + ".pb");
    if (!std::filesystem::exists(file) && initializer_names.count(name) > 0) continue;
    stitch::Result<std::string> bytes = read_file(file);
    if (!bytes.is_ok()) return fail(bytes.status().message());
    onnx::TensorProto proto;
    if (!proto.ParseFromString(*bytes)) return fail(file.string() + ": not a TensorProto");
    stitch::Result<stitch::ir::Tensor> tensor =
        stitch::onnx_import::tensor_from_proto(proto, file.string(), context);
    if (!tensor.is_ok()) return fail(tensor.status().message());
    options.input_shapes[name] = tensor->dims;
    inputs[name] = std::move(tensor).value();
  }
  stitch::Result<stitch::ir::Model> model =
      stitch::onnx_import::import_model_bytes(*model_bytes, model_path, options);
  if (!model.is_ok()) return fail(model.status().message());
  const stitch::ir::Graph& graph = model->graph;
  stitch::Result<std::map<std::string, stitch::ir::Tensor>> outputs =
      stitch::ir::evaluate_graph(*model, inputs);
  if (!outputs.is_ok()) return fail(model_path + ": " + outputs.status().message());
  for (size_t i = 0; i < graph.graph_outputs().size(); ++i) {
    const std::string& name = graph.value(graph.graph_outputs()[i]).name;
    onnx::TensorProto proto;
    stitch::emit::tensor_to_proto(outputs->at(name), name, &proto);
    std::filesystem::path file = directory / ("ref_output_" + std::to_string(i) + ".pb");
    std::ofstream out(file, std::ios::binary);
    if (!out || !proto.SerializeToOstream(&out)) return fail(file.string() + ": cannot write");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return fail("usage: stitch_reference MODEL.onnx DIR");
  return run(argv[1], argv[2]);
}
