// Writes out/kernels/ (see kernel_directory.h).
#include "emit/kernel_directory.h"

#include <fstream>
#include <set>
#include <string_view>
#include <utility>

#include "artifact/kernel_prelude.h"
#include "cost_model/cost_model.h"
#include "support/sha256.h"

namespace stitch::emit {
namespace {

Status write_text(const std::filesystem::path& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out)
    return Status::invalid_input("cannot write " + path.string() + "; check the output directory");
  return Status::ok();
}

std::vector<artifact::TensorRecord> tensor_records(const std::vector<KernelTensor>& tensors) {
  std::vector<artifact::TensorRecord> records;
  for (const KernelTensor& tensor : tensors) {
    records.push_back(artifact::TensorRecord{tensor.value_name, tensor.dtype, tensor.shape});
  }
  return records;
}

artifact::KernelRecord kernel_record(const EmittedKernel& kernel,
                                     const KernelPrediction& prediction) {
  artifact::KernelRecord record;
  record.name = kernel.name;
  record.file = kernel.file;
  record.inputs = tensor_records(kernel.inputs);
  record.outputs = tensor_records(kernel.outputs);
  record.workspace_bytes = kernel.workspace_bytes;
  record.launch = kernel.launch;
  record.shared_bytes_requested = kernel.shared_bytes_requested;
  record.shared_memory_fallback = kernel.shared_memory_fallback;
  record.template_text = kernel.template_text;
  record.composition = kernel.composition;
  record.vector_width = kernel.vector_width;
  for (const OpSchedule& op : kernel.ops) {
    record.ops.push_back(
        artifact::OpRecord{op.node_name, op.op_type, op.composition, op.template_entry});
  }
  record.fused_nodes = kernel.fused_nodes;
  record.predicted_time_us = prediction.predicted_time_us;
  record.charges = prediction.charges;
  for (const SharedLaunch& launch : kernel.shared_by) {
    record.shared_by.push_back(artifact::SharedLaunchRecord{launch.node, launch.outputs});
  }
  return record;
}

constexpr const char* kCMakeLists =
    R"(# Builds libstitch_kernels.so from the kernels stitchopt emitted (generated file).
cmake_minimum_required(VERSION 3.25)
project(stitch_kernels LANGUAGES CXX CUDA)
set(CMAKE_CUDA_ARCHITECTURES 80;90)
set(CMAKE_CUDA_STANDARD 17)
file(GLOB STITCH_KERNEL_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/*.cu)
add_library(stitch_kernels SHARED ${STITCH_KERNEL_SOURCES})
target_include_directories(stitch_kernels PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_options(stitch_kernels PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Werror all-warnings>)
set_target_properties(stitch_kernels PROPERTIES CUDA_SEPARABLE_COMPILATION OFF
                                                POSITION_INDEPENDENT_CODE ON)
)";

}  // namespace

KernelPrediction predict_kernel(const ir::Graph& graph, const std::vector<ir::NodeId>& nodes,
                                const EmittedKernel& kernel,
                                const cost_model::DeviceProfile& profile) {
  return KernelPrediction{
      kernel.charges,
      cost_model::estimate_group(graph, nodes, profile, &kernel.charges).time.total_us};
}

artifact::KernelsArtifact kernels_artifact(const std::vector<EmittedKernel>& kernels,
                                           const std::vector<KernelPrediction>& predictions,
                                           const std::string& model_sha256) {
  STITCH_CHECK(predictions.size() == kernels.size())
      << predictions.size() << " predictions for " << kernels.size() << " kernels";
  artifact::KernelsArtifact artifact;
  artifact.model_sha256 = model_sha256;
  for (size_t k = 0; k < kernels.size(); ++k) {
    artifact.kernels.push_back(kernel_record(kernels[k], predictions[k]));
    artifact.source_sha256[kernels[k].file] = support::sha256_hex(kernels[k].source);
  }
  // The other files write_kernel_directory writes that a kernel build reads.
  artifact.source_sha256["stitch_prelude.cuh"] = support::sha256_hex(artifact::kernel_prelude());
  artifact.source_sha256["kernels.h"] = support::sha256_hex(render_kernels_header(kernels));
  return artifact;
}

std::string render_kernels_header(const std::vector<EmittedKernel>& kernels) {
  std::string text =
      "// kernels.h: launchers of the kernels stitchopt emitted (generated file).\n"
      "// inputs/outputs are device pointers in the fused node's order; workspace holds\n"
      "// <kernel>_workspace_bytes() bytes, zeroed before each launch (may be null when 0).\n"
      "#pragma once\n\n#include <stddef.h>\n\n#include <cuda_runtime.h>\n\n#ifdef "
      "__cplusplus\nextern \"C\" {\n#endif\n\n";
  for (const EmittedKernel& kernel : kernels) {
    text += "cudaError_t " + kernel.name +
            "_launch(const void* const* inputs, void* const* outputs, void* workspace, "
            "cudaStream_t stream);\n";
    text += "size_t " + kernel.name + "_workspace_bytes(void);\n";
  }
  text += "\n#ifdef __cplusplus\n}  // extern \"C\"\n#endif\n";
  return text;
}

Status write_kernel_directory(const std::vector<EmittedKernel>& kernels,
                              const std::filesystem::path& directory) {
  std::string_view prelude = artifact::kernel_prelude();
  if (prelude.empty()) {
    return Status::internal(
        "this stitchopt was built without emit/cuda/stitch_prelude.cuh; rebuild it");
  }
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error) {
    return Status::invalid_input("cannot create " + directory.string() + ": " + error.message());
  }
  std::set<std::string> names;
  for (const EmittedKernel& kernel : kernels) {
    if (!names.insert(kernel.name).second) {
      return Status::internal("kernel " + kernel.name + " is emitted twice");
    }
    STITCH_RETURN_IF_ERROR(write_text(directory / kernel.file, kernel.source));
  }
  STITCH_RETURN_IF_ERROR(write_text(directory / "stitch_prelude.cuh", prelude));
  STITCH_RETURN_IF_ERROR(write_text(directory / "kernels.h", render_kernels_header(kernels)));
  return write_text(directory / "CMakeLists.txt", kCMakeLists);
}

Status write_kernels_json(const artifact::KernelsArtifact& artifact,
                          const std::filesystem::path& directory) {
  return write_text(directory / "kernels.json", artifact::render_kernels_json(artifact));
}

}  // namespace stitch::emit
