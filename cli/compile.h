// The compile command: stitchopt MODEL -o OUT.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/passes/pipeline.h"
#include "ir/status.h"

namespace stitch::cli {

enum class Verbosity { kQuiet, kNormal, kVerbose };

struct CompileOptions {
  std::string model_path;
  std::string output_directory;
  std::map<std::string, std::vector<int64_t>> input_shapes;
  Verbosity verbosity = Verbosity::kNormal;
  bool simplify = true;           // false: --no-simplify
  bool time_passes = false;       // --time-passes: per-pass table on stderr
  ir::PipelineOptions pipeline;   // --passes, --disable-pass, --dump-ir-after, --verify-each
};

// Imports, verifies, simplifies and writes out/model.fused.onnx and out/report.json
// (and out/ir/NN-PASS.ir with --dump-ir-after). Progress
// goes to stderr (one line per phase with -v). Returns the first error.
Status run_compile(const CompileOptions& options);

}  // namespace stitch::cli
