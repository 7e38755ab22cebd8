// KernelsManifest: OUT/kernels/kernels.json as `stitchopt run` and `profile` use it,
// typed and checked field by field when it is read.
//
// emit/kernel_directory.cc writes the file (render_kernels_json); an output directory
// may have been edited since, so nothing in it is trusted (DESIGN.md, Untrusted
// input). It is read only as a regular file reached without a symbolic link, of at
// most kMaxKernelsManifestBytes (support/bounded_file.h), and parsed only when it
// nests at most 32 deep and holds at most 4 Mi values (support/json_extent.h: 64 MiB
// of "{}," would parse into 2.3 GB). The fields the runtime uses, with what each must
// be:
//   schema            "stitchopt.kernels/1"
//   model_sha256      a string (load_program compares it with model.fused.onnx's)
//   kernels           a list of objects, names unique, each with
//     name            a C identifier (it becomes a symbol and a file name)
//     file            "<identifier>.cu"; read_kernels_manifest also requires a regular
//                     file directly in OUT/kernels (links resolved)
//     inputs, outputs lists of {"name": string, "dtype": an ONNX type name such as
//                     "float", "shape": list of dimensions 0 .. 2^40}
//     workspace_bytes an integer 0 .. 2^40
//     cooperative     true or false
//     fused_nodes     a non-empty list of strings ("name (OpType)")
//     shared_by       a list of {"node": string, "outputs": list of strings}
// Other keys (launcher, grid, block, template, compositions, ...) are for people and
// tools and are not read. Every error names the file, the kernel and the key, and is
// Status::invalid_input (exit 2), e.g.
//   out/kernels/kernels.json: kernel stitch_k0: key "cooperative": expected true or
//     false, got the string "yes"; recompile the model
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/core/dtype.h"
#include "ir/core/status.h"

namespace stitch::runtime {

// A real kernels.json is ~3 KB per kernel; 64 MiB is ~20,000 kernels, and keeps the
// parsed document well under a gigabyte.
inline constexpr size_t kMaxKernelsManifestBytes = size_t{64} << 20;

struct ManifestTensor {
  std::string name;  // the model value (support::valid_utf8 of its name)
  ir::DType dtype = ir::DType::kUndefined;
  std::vector<int64_t> shape;
};

// Another unfused node that launches the same single-op kernel.
struct ManifestLaunch {
  std::string node;
  std::vector<std::string> outputs;  // the values it writes, by which it finds the kernel
};

struct ManifestKernel {
  std::string name;
  std::string file;  // relative to OUT/kernels
  std::vector<ManifestTensor> inputs;
  std::vector<ManifestTensor> outputs;
  int64_t workspace_bytes = 0;
  bool cooperative = false;  // a cooperative launch with a grid barrier
  std::vector<std::string> fused_nodes;
  std::vector<ManifestLaunch> shared_by;
};

struct KernelsManifest {
  std::string model_sha256;
  std::vector<ManifestKernel> kernels;  // in the file's order
};

// Parses and checks `text`; `source` (the file's path) starts every error. Checks
// the form of each kernel's file name, not the file.
Result<KernelsManifest> parse_kernels_manifest(std::string_view text, const std::string& source);

// OUT_DIR/kernels/kernels.json: nullopt when there is nothing at that path (compiled
// with --no-codegen); otherwise read, parsed, and every kernel's file checked to be a
// regular .cu file directly in OUT_DIR/kernels.
Result<std::optional<KernelsManifest>> read_kernels_manifest(const std::filesystem::path& out_dir);

}  // namespace stitch::runtime
