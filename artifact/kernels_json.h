// OUT/kernels/kernels.json: what an output directory holds for each kernel, as one
// typed schema that emit/ writes (emit/kernel_directory.h fills the records) and
// runtime_stub/program.h and profiling/profile.h read, so that the runtime takes the compile's
// decisions instead of deciding them again.
//
// The document ("schema": "stitchopt.kernels/4"):
//   model_sha256        the sha256 of the model.fused.onnx the kernels belong to
//   sources             {file: sha256} of every file of OUT/kernels the kernels are
//                       built from: each kernel's .cu, stitch_prelude.cuh, kernels.h
//                       (3: new; the reader refuses a directory whose files differ)
//   kernels             one object per distinct kernel, in the order emitted:
//     name              a C identifier (it becomes a symbol and a file name)
//     file              "<name>.cu", directly in OUT/kernels
//     launcher, workspace_launcher   "<name>_launch", "<name>_workspace_bytes"
//     inputs, outputs   lists of {"name", "dtype" (ONNX type name), "shape"}
//     workspace_bytes   bytes of the workspace the launcher needs
//     grid, block, shared_bytes      the launch configuration
//     shared_bytes_requested, shared_memory_fallback   the shared-memory plan
//     cooperative       a cooperative launch (grid barrier)
//     template, composition, vector_width, compositions (per op: node, op_type,
//                       composition, template)
//     fused_nodes       "name (OpType)" in topological order
//     predicted_time_us the analytic estimate of one launch of the kernel as emitted:
//                       cost_model::estimate_group of its nodes with `charges`, launch
//                       and composition charges included; report.json's
//                       groups[].predicted_time_us and profile.json's analytic_us are
//                       the same number (docs/report-schema.md)
//     charges           what the emitted schedule costs beyond bytes and flops
//                       (cost_model::KernelShape's fields, same names): global,
//                       grid_barriers, grid_blocks, workspace_bytes, thread_gemm_macs,
//                       tiled_gemm_macs, attention_macs, load_chain, gemm_load_chain,
//                       stencil_load_chain
//     shared_by         single-op kernels: the other unfused nodes that launch it,
//                       {"node", "outputs"}
//
// An output directory may have been edited since it was written, so nothing in it is
// trusted (DESIGN.md, Untrusted input). It is read only as a regular file reached
// without a symbolic link, of at most kMaxKernelsJsonBytes (support/bounded_file.h),
// and parsed only when it nests at most 32 deep and holds at most 4 Mi values
// (support/json_extent.h: 64 MiB of "{}," would parse into 2.3 GB). The reader checks
// and fills the fields the runtime uses: name, file, inputs, outputs,
// workspace_bytes, grid, block, shared_bytes, cooperative, composition, fused_nodes,
// predicted_time_us, charges and shared_by; the others are for people and tools and
// stay empty in what it returns. Every error names the file, the kernel and the key,
// and is Status::invalid_input (exit 2), e.g.
//   out/kernels/kernels.json: kernel stitch_k0: key "cooperative": expected true or
//     false, got the string "yes"; recompile the model
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "artifact/kernel_charges.h"
#include "ir/core/dtype.h"
#include "ir/core/status.h"

namespace stitch::artifact {

inline constexpr std::string_view kKernelsSchema = "stitchopt.kernels/4";

// A real kernels.json is ~3 KB per kernel; 64 MiB is ~20,000 kernels, and keeps the
// parsed document well under a gigabyte.
inline constexpr size_t kMaxKernelsJsonBytes = size_t{64} << 20;
// A kernel source as the reader hashes it (the largest emitted are ~100 KB).
inline constexpr size_t kMaxKernelSourceBytes = size_t{64} << 20;

struct TensorRecord {
  std::string name;  // the model value (support::valid_utf8 of its name when read)
  ir::DType dtype = ir::DType::kUndefined;
  std::vector<int64_t> shape;
};

// A cooperative kernel's workspace starts with the counters its launcher zeroes before
// each launch (and nothing else is zeroed: every other byte is written before it is
// read): the grid barrier's (stitch_grid_sync) at offset 0, and at
// kArrivalCounterOffset the count of blocks done with the stage before a last-block run
// (emit/compositions/global/global_plan.h).
inline constexpr int64_t kArrivalCounterOffset = 4;
inline constexpr int64_t kZeroedWorkspaceBytes = 8;

struct LaunchRecord {
  int64_t grid = 1;
  int block = 0;
  int64_t shared_bytes = 0;
  bool cooperative = false;  // a cooperative launch with a grid barrier
};

// One op's place in the kernel's schedule (written for people; not read back).
struct OpRecord {
  std::string node;
  std::string op_type;
  std::string composition;
  std::string template_entry;
};

// Another unfused node that launches the same single-op kernel.
struct SharedLaunchRecord {
  std::string node;
  std::vector<std::string> outputs;  // the values it writes, by which it finds the kernel
};

struct KernelRecord {
  std::string name;
  std::string file;  // relative to OUT/kernels
  std::vector<TensorRecord> inputs;
  std::vector<TensorRecord> outputs;
  int64_t workspace_bytes = 0;
  LaunchRecord launch;
  int64_t shared_bytes_requested = 0;  // written only
  std::string shared_memory_fallback;  // written only
  std::string template_text;           // written only
  std::string composition;             // "thread", "warp", "block", "global", ...
  int vector_width = 1;                // written only
  std::vector<OpRecord> ops;           // written only
  std::vector<std::string> fused_nodes;
  double predicted_time_us = 0;
  KernelCharges charges;
  std::vector<SharedLaunchRecord> shared_by;
};

struct KernelsArtifact {
  std::string model_sha256;
  std::map<std::string, std::string> source_sha256;  // file name in OUT/kernels -> sha256
  std::vector<KernelRecord> kernels;                 // in the file's order
};

// The document's text (deterministic; strings through support::valid_utf8).
std::string render_kernels_json(const KernelsArtifact& artifact);

// Parses and checks `text`; `source` (the file's path) starts every error. Checks
// the form of each kernel's file name, not the file.
Result<KernelsArtifact> parse_kernels_json(std::string_view text, const std::string& source);

// OUT_DIR/kernels/kernels.json: nullopt when there is nothing at that path (compiled
// with --no-codegen); otherwise read, parsed, every kernel's file checked to be a
// regular .cu file directly in OUT_DIR/kernels and listed in `sources`, and every
// source's bytes checked against its sha256 (an edited kernel is refused, never built).
Result<std::optional<KernelsArtifact>> read_kernels_json(const std::filesystem::path& out_dir);

}  // namespace stitch::artifact
