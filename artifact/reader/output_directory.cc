// The output directory's reader (artifact/reader/output_directory.h).
#include "artifact/reader/output_directory.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <system_error>
#include <utility>

#include "onnx_import/function_body.h"
#include "onnx_import/importer.h"
#include "support/bounded_file.h"
#include "support/escape.h"
#include "support/sha256.h"

namespace stitch::artifact {

namespace fs = std::filesystem;

namespace {

// protobuf's own limit on a serialized message (INT_MAX bytes); weights past it are
// external data, which the importer reads.
constexpr size_t kMaxModelBytes = std::numeric_limits<int32_t>::max();

}  // namespace

Result<OutputDirectory> read_output_directory(const std::string& out_dir) {
  OutputDirectory directory;
  directory.out_dir = out_dir;
  const fs::path model_path = fs::path(out_dir) / "model.fused.onnx";
  directory.model_path = model_path.string();
  std::error_code error;
  if (!fs::exists(fs::symlink_status(model_path, error))) {
    return Status::invalid_input(out_dir +
                                 ": no model.fused.onnx; give the directory stitchopt "
                                 "MODEL -o DIR wrote");
  }
  STITCH_ASSIGN_OR_RETURN(
      std::string model_bytes,
      support::read_regular_file_under(out_dir, "model.fused.onnx", kMaxModelBytes, "model"));
  onnx_import::ImportOptions import_options;
  import_options.allow_stitchopt_domain = true;  // the fused nodes are ours
  STITCH_ASSIGN_OR_RETURN(directory.model, onnx_import::import_model_bytes(
                                               model_bytes, directory.model_path, import_options));
  const fs::path kernels_dir = fs::path(out_dir) / "kernels";
  directory.kernels_path = (kernels_dir / "kernels.json").string();
  STITCH_ASSIGN_OR_RETURN(directory.kernels, read_kernels_json(out_dir));
  const bool expects_kernels =
      std::any_of(directory.model.metadata_props.begin(), directory.model.metadata_props.end(),
                  [](const auto& entry) { return entry.first == "stitchopt.kernels"; });
  for (const auto& [key, value] : directory.model.metadata_props) {
    if (key != "stitchopt.precision") continue;
    const std::optional<ir::Precision> precision = ir::precision_from_name(value);
    if (!precision) {
      return Status::invalid_input(directory.model_path + ": metadata stitchopt.precision is " +
                                   support::quote_bounded(value) +
                                   ", not fp32, tf32, fp32x3, bf16 or fp16; recompile the model");
    }
    directory.precision = *precision;
  }
  if (expects_kernels && !directory.kernels) {
    return Status::invalid_input(directory.kernels_path + " is missing, but " +
                                 directory.model_path +
                                 " was compiled with kernels; recompile the model");
  }
  if (directory.kernels) {
    if (directory.kernels->model_sha256 != support::sha256_hex(model_bytes)) {
      return Status::invalid_input(directory.kernels_path +
                                   ": was written for another model than " + directory.model_path +
                                   " (its sha256 differs: the model was replaced or edited "
                                   "after stitchopt wrote it); recompile the model");
    }
    directory.kernels_dir = kernels_dir.string();
  }
  return directory;
}

Result<ir::Model> fused_node_body(const ir::Model& model, const ir::Node& node) {
  return onnx_import::import_function_call(model, node);
}

}  // namespace stitch::artifact
