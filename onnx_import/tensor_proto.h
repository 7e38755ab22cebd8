// TensorProto -> ir::Tensor: every ONNX storage form (raw_data, the typed repeated
// fields, string_data, external data files) to raw little-endian bytes.
//
// Messages returned here have no model-path prefix; the importer adds it. They name
// the tensor with the caller's `what` (`initializer "w"`, `node "c" (Constant)
// attribute "value"`) and say how to fix the model.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

#include "ir/core/status.h"
#include "ir/core/tensor.h"

namespace stitch::onnx_import {

struct TensorReadContext {
  std::string model_path;      // named in messages ("copy it next to model.onnx")
  std::string base_directory;  // where external data files are looked up
};

// Converts `proto`. External data (data_location EXTERNAL) is read from a file whose
// location is relative to `context.base_directory`; absolute locations and ones that
// leave the directory are refused. The tensor remembers where its external bytes
// were (ir::Tensor::external).
Result<ir::Tensor> tensor_from_proto(const onnx::TensorProto& proto, const std::string& what,
                                     const TensorReadContext& context);

}  // namespace stitch::onnx_import
