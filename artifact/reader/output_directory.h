// An output directory as the runtime reads it (artifact/README.md): model.fused.onnx,
// imported, and kernels/kernels.json (artifact/kernels_json.h), checked to belong to
// each other, and each fused node's function body. The one reader of the whole
// directory, so that runtime_stub/ (and any other reader) takes the files as the
// artifact defines them and never parses ONNX itself.
//
// It sits in its own library (stitch_artifact_reader) because the model file is ONNX
// protobuf, which only onnx_import/ parses: the records of artifact/ stay free of
// protobuf for the compiler's layers that use them (cost_model/, fusion/).
//
// Nothing in an output directory is trusted (DESIGN.md, Untrusted input): the model is
// read only as a regular file reached without a symbolic link inside OUT, of at most
// protobuf's 2 GiB; kernels.json as artifact/kernels_json.h says. Every error is
// Status::invalid_input and names the file:
//   out: no model.fused.onnx; give the directory stitchopt MODEL -o DIR wrote
//   out/kernels/kernels.json is missing, but out/model.fused.onnx was compiled with
//     kernels; recompile the model
//   out/kernels/kernels.json: was written for another model than out/model.fused.onnx
//     (its sha256 differs: ...); recompile the model
#pragma once

#include <optional>
#include <string>

#include "artifact/kernels_json.h"
#include "ir/core/graph.h"
#include "ir/core/precision.h"
#include "ir/core/status.h"

namespace stitch::artifact {

struct OutputDirectory {
  std::string out_dir;
  std::string model_path;  // OUT/model.fused.onnx
  ir::Model model;         // model.fused.onnx as imported, "stitchopt" nodes allowed
  // kernels.json; nullopt when the model was compiled without kernels (its metadata
  // "stitchopt.kernels" is absent; docs/report-schema.md).
  std::optional<KernelsArtifact> kernels;
  std::string kernels_path;  // OUT/kernels/kernels.json, for messages
  std::string kernels_dir;   // OUT/kernels when `kernels`, else empty
  // The products the model was compiled for: metadata "stitchopt.precision"
  // (ir/core/precision.h), kFloat32 when absent.
  ir::Precision precision = ir::Precision::kFloat32;
};

// Reads and checks OUT_DIR as above.
Result<OutputDirectory> read_output_directory(const std::string& out_dir);

// The function body of a "stitchopt" node of `model` as a model of its own: graph
// inputs the function's formal inputs in order (typed as the call's), graph outputs
// its outputs (onnx_import/function_body.h). Errors name the node and the function.
Result<ir::Model> fused_node_body(const ir::Model& model, const ir::Node& node);

}  // namespace stitch::artifact
