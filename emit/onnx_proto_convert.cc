// ir -> ONNX protobuf conversions.
#include "emit/onnx_proto_convert.h"

namespace stitch::emit {

void tensor_to_proto(const ir::Tensor& tensor, const std::string& name, onnx::TensorProto* proto) {
  if (!name.empty()) proto->set_name(name);
  proto->set_data_type(static_cast<int32_t>(tensor.dtype));
  for (int64_t dim : tensor.dims) proto->add_dims(dim);
  if (tensor.dtype == ir::DType::kString) {
    for (const std::string& element : tensor.strings) proto->add_string_data(element);
  } else {
    proto->set_raw_data(tensor.bytes);
  }
}

void type_to_proto(const ir::TensorType& type, onnx::TypeProto* proto) {
  if (type.dtype == ir::DType::kUndefined) return;
  onnx::TypeProto::Tensor* tensor = proto->mutable_tensor_type();
  tensor->set_elem_type(static_cast<int32_t>(type.dtype));
  if (!type.has_shape) return;
  onnx::TensorShapeProto* shape = tensor->mutable_shape();
  for (int64_t dim : type.dims) {
    onnx::TensorShapeProto::Dimension* written = shape->add_dim();
    if (dim >= 0) written->set_dim_value(dim);
  }
}

Status attribute_to_proto(const ir::Attribute& attribute, onnx::AttributeProto* proto) {
  if (!attribute.opaque_proto.empty()) {
    if (!proto->ParseFromString(attribute.opaque_proto)) {
      return Status::internal("attribute \"" + attribute.name +
                              "\" keeps a serialized AttributeProto that does not parse");
    }
    return Status::ok();
  }
  proto->set_name(attribute.name);
  if (!attribute.ref_attr_name.empty()) proto->set_ref_attr_name(attribute.ref_attr_name);
  if (!attribute.doc_string.empty()) proto->set_doc_string(attribute.doc_string);
  proto->set_type(static_cast<onnx::AttributeProto::AttributeType>(attribute.kind));
  switch (attribute.kind) {
    case ir::AttributeKind::kFloat:
      proto->set_f(attribute.f);
      break;
    case ir::AttributeKind::kInt:
      proto->set_i(attribute.i);
      break;
    case ir::AttributeKind::kString:
      proto->set_s(attribute.s);
      break;
    case ir::AttributeKind::kFloats:
      for (float value : attribute.floats) proto->add_floats(value);
      break;
    case ir::AttributeKind::kInts:
      for (int64_t value : attribute.ints) proto->add_ints(value);
      break;
    case ir::AttributeKind::kStrings:
      for (const std::string& value : attribute.strings) proto->add_strings(value);
      break;
    case ir::AttributeKind::kTensor:
      if (attribute.tensor == nullptr) {
        return Status::internal("tensor attribute \"" + attribute.name + "\" has no tensor");
      }
      tensor_to_proto(*attribute.tensor, "", proto->mutable_t());
      break;
    case ir::AttributeKind::kTensors:
      for (const ir::Tensor& tensor : attribute.tensors) {
        tensor_to_proto(tensor, "", proto->add_tensors());
      }
      break;
    default:
      return Status::internal("attribute \"" + attribute.name + "\" of kind " +
                              std::to_string(static_cast<int>(attribute.kind)) +
                              " has no serialized AttributeProto to write");
  }
  return Status::ok();
}

Status node_to_proto(const ir::Node& node,
                     const std::function<std::string(ir::ValueId)>& value_name,
                     onnx::NodeProto* proto) {
  for (ir::ValueId input : node.inputs) proto->add_input(value_name(input));
  for (ir::ValueId output : node.outputs) proto->add_output(value_name(output));
  if (!node.name.empty()) proto->set_name(node.name);
  proto->set_op_type(node.op_type);
  if (!node.domain.empty()) proto->set_domain(node.domain);
  for (const ir::Attribute& attribute : node.attributes) {
    STITCH_RETURN_IF_ERROR(attribute_to_proto(attribute, proto->add_attribute()));
  }
  if (!node.doc_string.empty()) proto->set_doc_string(node.doc_string);
  return Status::ok();
}

}  // namespace stitch::emit
