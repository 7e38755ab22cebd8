// The compile command: stitchopt MODEL -o OUT.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/status.h"

namespace stitch::cli {

enum class Verbosity { kQuiet, kNormal, kVerbose };

struct CompileOptions {
  std::string model_path;
  std::string output_directory;
  std::map<std::string, std::vector<int64_t>> input_shapes;
  Verbosity verbosity = Verbosity::kNormal;
};

// Imports, verifies and writes out/model.fused.onnx and out/report.json. Progress
// goes to stderr (one line per phase with -v). Returns the first error.
Status run_compile(const CompileOptions& options);

}  // namespace stitch::cli
