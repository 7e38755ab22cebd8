// ONNX import: reads a .onnx file (with external data), validates it, specializes
// dynamic dimensions and builds an ir::Model with every shape inferred by our rules.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"

namespace stitch::onnx_import {

struct ImportOptions {
  // --input-shape NAME=1,128: replaces the dims of graph input NAME.
  std::map<std::string, std::vector<int64_t>> input_shapes;
};

// Every failure is Status::invalid_input with a one-line message that starts with the
// model path, names the node (name and op type) or input concerned, and says how to
// fix it, e.g.
//   model.onnx: graph input "x" has symbolic or unknown dims [batch,128]; give them with --input-shape x=1,128
Result<ir::Model> import_model(const std::string& path, const ImportOptions& options);

// The same from bytes already in memory (fuzzing, tests). External data is looked up
// relative to `base_directory`; `path` is only used in messages.
Result<ir::Model> import_model_from_bytes(const std::string& bytes, const std::string& path,
                                          const std::string& base_directory,
                                          const ImportOptions& options);

}  // namespace stitch::onnx_import
