// The ONNX writer: ir::Model back to a .onnx file.
#pragma once

#include <string>

#include "ir/core/graph.h"
#include "ir/core/status.h"

namespace stitch::emit {

struct OnnxWriteOptions {
  // Initializers the model had in external data are written to this file beside the
  // model (name relative to the model's directory), in model order. Initializers of
  // at least `external_threshold_bytes` go there too when the input model used
  // external data at all.
  std::string external_data_name;  // default: "<model file name>.data"
  int64_t external_threshold_bytes = 1024;
};

// Writes `model` to `path`: initializers, names, opset imports, producer, doc
// strings, metadata and model-local functions kept; value_info for every
// intermediate value with a known type.
Status write_onnx(const ir::Model& model, const std::string& path,
                  const OnnxWriteOptions& options = {});

}  // namespace stitch::emit
