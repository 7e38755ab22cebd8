// The ONNX writer: ir::Model -> ModelProto -> file (and external data file).
//
// Nodes go out in topological order (ties by id, so a model imported in
// topological order keeps its node order). Serialization is deterministic and the
// external data layout depends only on the model, so writing the same model twice
// gives the same bytes. Each file is written beside its destination under a
// temporary name and renamed into place: a failed write never leaves a half file.
#include "emit/onnx_writer.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/onnx_pb.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "emit/onnx_proto_convert.h"
#include "ir/core/analysis.h"

namespace stitch::emit {
namespace {

constexpr int64_t kExternalAlignment = 4096;

Status write_file_atomically(const std::string& path, const std::string& bytes) {
  std::string temporary = path + ".tmp";
  {
    std::ofstream stream(temporary, std::ios::binary | std::ios::trunc);
    if (!stream) {
      return Status::invalid_input(path + ": cannot write (" + std::strerror(errno) +
                                   "); check that the directory exists and is writable");
    }
    stream.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    stream.close();
    if (!stream) {
      std::error_code ignored;
      std::filesystem::remove(temporary, ignored);
      return Status::invalid_input(path + ": writing failed (" + std::strerror(errno) +
                                   "); check the free disk space");
    }
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) {
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    return Status::invalid_input(path + ": cannot rename the written file into place (" +
                                 error.message() + "); check the output directory");
  }
  return Status::ok();
}

void write_value_info(const ir::Value& value, onnx::ValueInfoProto* proto) {
  proto->set_name(value.name);
  ir::TensorType type = value.type;
  if (value.is_initializer() && type.dtype == ir::DType::kUndefined) type = value.constant->type();
  type_to_proto(type, proto->mutable_type());
}

// Initializers as TensorProtos; those that go to external data are appended to
// `external_bytes` at 4096-byte-aligned offsets. True when any did.
bool write_initializers(const ir::Graph& graph, const OnnxWriteOptions& options,
                        const std::string& external_name, onnx::GraphProto* proto,
                        std::string& external_bytes) {
  std::vector<ir::ValueId> initializers = graph.initializers();
  bool wrote_external = false;
  bool model_used_external = false;
  for (ir::ValueId id : initializers) {
    model_used_external = model_used_external || graph.value(id).constant->external.has_value();
  }
  for (ir::ValueId id : initializers) {
    const ir::Value& value = graph.value(id);
    const ir::Tensor& tensor = *value.constant;
    onnx::TensorProto* written = proto->add_initializer();
    bool external = model_used_external && tensor.dtype != ir::DType::kString &&
                    (tensor.external.has_value() ||
                     static_cast<int64_t>(tensor.bytes.size()) >= options.external_threshold_bytes);
    if (!external) {
      tensor_to_proto(tensor, value.name, written);
      continue;
    }
    auto offset = static_cast<int64_t>(external_bytes.size());
    offset = (offset + kExternalAlignment - 1) / kExternalAlignment * kExternalAlignment;
    external_bytes.resize(static_cast<size_t>(offset), '\0');
    external_bytes += tensor.bytes;
    written->set_name(value.name);
    written->set_data_type(static_cast<int32_t>(tensor.dtype));
    for (int64_t dim : tensor.dims) written->add_dims(dim);
    written->set_data_location(onnx::TensorProto::EXTERNAL);
    auto add_entry = [&](const std::string& key, const std::string& entry_value) {
      onnx::StringStringEntryProto* entry = written->add_external_data();
      entry->set_key(key);
      entry->set_value(entry_value);
    };
    add_entry("location", external_name);
    add_entry("offset", std::to_string(offset));
    add_entry("length", std::to_string(tensor.bytes.size()));
    wrote_external = true;
  }
  return wrote_external;
}

}  // namespace

Status write_onnx(const ir::Model& model, const std::string& path,
                  const OnnxWriteOptions& options) {
  const ir::Graph& graph = model.graph;
  onnx::ModelProto proto;
  proto.set_ir_version(model.ir_version);
  for (const ir::OpsetImport& opset : model.opset_imports) {
    onnx::OperatorSetIdProto* written = proto.add_opset_import();
    written->set_domain(opset.domain);
    written->set_version(opset.version);
  }
  if (!model.producer_name.empty()) proto.set_producer_name(model.producer_name);
  if (!model.producer_version.empty()) proto.set_producer_version(model.producer_version);
  if (!model.domain.empty()) proto.set_domain(model.domain);
  if (model.model_version != 0) proto.set_model_version(model.model_version);
  if (!model.doc_string.empty()) proto.set_doc_string(model.doc_string);
  for (const auto& [key, value] : model.metadata_props) {
    onnx::StringStringEntryProto* entry = proto.add_metadata_props();
    entry->set_key(key);
    entry->set_value(value);
  }
  for (const std::string& function : model.functions) {
    if (!proto.add_functions()->ParseFromString(function)) {
      return Status::internal(path + ": a model-local function does not parse as FunctionProto");
    }
  }

  onnx::GraphProto* graph_proto = proto.mutable_graph();
  graph_proto->set_name(graph.name);
  if (!graph.doc_string.empty()) graph_proto->set_doc_string(graph.doc_string);
  for (ir::ValueId id : graph.graph_inputs()) {
    write_value_info(graph.value(id), graph_proto->add_input());
  }
  std::string external_name = options.external_data_name;
  if (external_name.empty()) {
    external_name = std::filesystem::path(path).filename().string() + ".data";
  }
  std::string external_bytes;
  bool wrote_external =
      write_initializers(graph, options, external_name, graph_proto, external_bytes);

  Result<std::vector<ir::NodeId>> order = ir::topological_order(graph);
  if (!order.is_ok()) return order.status().with_prefix(path + ": ");
  auto value_name = [&](ir::ValueId id) {
    return id == ir::kNoId ? std::string() : graph.value(id).name;
  };
  for (ir::NodeId id : *order) {
    const ir::Node& node = graph.node(id);
    Status converted = node_to_proto(node, value_name, graph_proto->add_node());
    if (!converted.is_ok()) {
      return converted.with_prefix(path + ": node " + node.display_name() + ": ");
    }
  }
  for (ir::ValueId id : graph.graph_outputs()) {
    write_value_info(graph.value(id), graph_proto->add_output());
  }
  for (ir::ValueId id = 0; id < graph.value_capacity(); ++id) {
    const ir::Value& value = graph.value(id);
    if (value.dead || value.is_graph_input || value.is_graph_output || value.is_initializer() ||
        value.producer == ir::kNoId || value.type.dtype == ir::DType::kUndefined) {
      continue;
    }
    write_value_info(value, graph_proto->add_value_info());
  }

  if (proto.ByteSizeLong() > static_cast<size_t>(INT_MAX)) {
    return Status::invalid_input(path +
                                 ": the model is over 2 GiB, protobuf's limit; "
                                 "keep its weights in external data");
  }
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    if (!proto.SerializeToCodedStream(&coded)) {
      return Status::internal(path + ": protobuf serialization failed");
    }
  }
  if (wrote_external) {
    std::filesystem::path external_path = std::filesystem::path(path).parent_path() / external_name;
    STITCH_RETURN_IF_ERROR(write_file_atomically(external_path.string(), external_bytes));
  }
  return write_file_atomically(path, bytes);
}

}  // namespace stitch::emit
