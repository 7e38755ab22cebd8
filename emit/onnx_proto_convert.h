// ir -> ONNX protobuf conversions shared by the ONNX writer: tensors (as raw_data,
// strings as string_data), tensor types and attributes. Private to emit/: only the
// writer includes ONNX protobuf headers (DESIGN.md).
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>
#include <string>

#include "ir/core/attribute.h"
#include "ir/core/graph.h"
#include "ir/core/status.h"
#include "ir/core/tensor.h"

namespace stitch::emit {

// Writes `tensor` inline: numeric data as raw_data, string elements as string_data.
void tensor_to_proto(const ir::Tensor& tensor, const std::string& name, onnx::TensorProto* proto);

// elem_type and, when the rank is known, the shape; unknown dims are left without a
// value or a name. An undefined dtype writes nothing (the TypeProto stays empty).
void type_to_proto(const ir::TensorType& type, onnx::TypeProto* proto);

// The attribute as the model had it. Kinds kept as a serialized AttributeProto
// (graphs, sparse tensors, type protos) are parsed back byte for byte; an attribute
// of such a kind without its proto is an internal error.
Status attribute_to_proto(const ir::Attribute& attribute, onnx::AttributeProto* proto);

// The node with its inputs and outputs named by `value_name` (kNoId: "").
Status node_to_proto(const ir::Node& node,
                     const std::function<std::string(ir::ValueId)>& value_name,
                     onnx::NodeProto* proto);

}  // namespace stitch::emit
