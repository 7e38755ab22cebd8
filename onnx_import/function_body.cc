#include "onnx_import/function_body.h"

#include <onnx/onnx_pb.h>

#include <string>

#include "ir/core/dtype.h"
#include "onnx_import/importer.h"

namespace stitch::onnx_import {
namespace {

void set_type(const ir::TensorType& type, onnx::ValueInfoProto& info) {
  onnx::TypeProto_Tensor* tensor = info.mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(static_cast<int32_t>(type.dtype));
  onnx::TensorShapeProto* shape = tensor->mutable_shape();
  for (int64_t dim : type.dims) shape->add_dim()->set_dim_value(dim);
}

}  // namespace

Result<ir::Model> import_function_call(const ir::Model& model, const ir::Node& call) {
  const std::string where = "node \"" + call.name + "\" (" + call.op_type + ")";
  onnx::FunctionProto function;
  bool found = false;
  for (const std::string& bytes : model.functions) {
    if (!function.ParseFromString(bytes)) {
      return Status::invalid_input("a model-local function does not parse as a FunctionProto");
    }
    if (function.name() == call.op_type && function.domain() == call.domain) {
      found = true;
      break;
    }
  }
  if (!found) {
    return Status::invalid_input(where + ": the model has no function " + call.domain + "." +
                                 call.op_type);
  }
  if (function.input_size() != static_cast<int>(call.inputs.size()) ||
      function.output_size() != static_cast<int>(call.outputs.size())) {
    return Status::invalid_input(where + ": function " + function.name() + " takes " +
                                 std::to_string(function.input_size()) + " inputs and " +
                                 std::to_string(function.output_size()) + " outputs, the call " +
                                 std::to_string(call.inputs.size()) + " and " +
                                 std::to_string(call.outputs.size()));
  }

  onnx::ModelProto proto;
  proto.set_ir_version(model.ir_version);
  proto.set_producer_name("stitchopt function body");
  for (const onnx::OperatorSetIdProto& opset : function.opset_import()) {
    *proto.add_opset_import() = opset;
  }
  for (const ir::OpsetImport& opset : model.opset_imports) {
    bool listed = false;
    for (const onnx::OperatorSetIdProto& existing : proto.opset_import()) {
      listed = listed || existing.domain() == opset.domain;
    }
    if (listed) continue;
    onnx::OperatorSetIdProto* added = proto.add_opset_import();
    added->set_domain(opset.domain);
    added->set_version(opset.version);
  }
  onnx::GraphProto* graph = proto.mutable_graph();
  graph->set_name(function.name());
  for (int i = 0; i < function.input_size(); ++i) {
    ir::ValueId value = call.inputs[static_cast<size_t>(i)];
    if (value == ir::kNoId) {
      return Status::invalid_input(where + ": input " + std::to_string(i) + " of function " +
                                   function.name() + " is omitted");
    }
    onnx::ValueInfoProto* input = graph->add_input();
    input->set_name(function.input(i));
    const ir::Value& argument = model.graph.value(value);
    set_type(argument.type, *input);
    // A constant argument (a Reshape's shape, a reduction's axes) becomes the input's
    // default, so shape inference inside the body sees it as the outer graph did.
    if (argument.constant != nullptr && argument.constant->strings.empty()) {
      onnx::TensorProto* initializer = graph->add_initializer();
      initializer->set_name(function.input(i));
      initializer->set_data_type(static_cast<int32_t>(argument.constant->dtype));
      for (int64_t dim : argument.constant->dims) initializer->add_dims(dim);
      initializer->set_raw_data(argument.constant->bytes);
    }
  }
  for (int i = 0; i < function.output_size(); ++i) {
    onnx::ValueInfoProto* output = graph->add_output();
    output->set_name(function.output(i));
    ir::ValueId value = call.outputs[static_cast<size_t>(i)];
    if (value != ir::kNoId) set_type(model.graph.value(value).type, *output);
  }
  for (const onnx::NodeProto& node : function.node()) *graph->add_node() = node;

  std::string bytes;
  if (!proto.SerializeToString(&bytes)) {
    return Status::internal(where + ": cannot serialize the body of function " + function.name());
  }
  Result<ir::Model> body =
      import_model_from_bytes(bytes, "function " + function.name(), "", ImportOptions{});
  if (!body.is_ok()) return body.status().with_prefix(where + ": ");
  return body;
}

}  // namespace stitch::onnx_import
