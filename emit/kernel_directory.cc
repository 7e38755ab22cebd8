// Writes out/kernels/ (see kernel_directory.h).
#include "emit/kernel_directory.h"

#include <fstream>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "emit/json_text.h"
#include "ir/core/dtype.h"

// Defined in the .cc that emit/CMakeLists.txt generates from emit/cuda/stitch_prelude.cuh.
extern const char* const kStitchPreludeText;

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

nlohmann::ordered_json tensors_json(const std::vector<KernelTensor>& tensors) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const KernelTensor& tensor : tensors) {
    nlohmann::ordered_json entry;
    entry["name"] = tensor.value_name;
    entry["dtype"] = std::string(ir::dtype_onnx_name(tensor.dtype));
    entry["shape"] = tensor.shape;
    list.push_back(std::move(entry));
  }
  return list;
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

std::string_view embedded_stitch_prelude() { return kStitchPreludeText; }

std::string render_kernels_json(const std::vector<EmittedKernel>& kernels,
                                const std::string& model_sha256) {
  nlohmann::ordered_json root;
  root["schema"] = "stitchopt.kernels/1";
  root["model_sha256"] = model_sha256;
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const EmittedKernel& kernel : kernels) {
    nlohmann::ordered_json entry;
    entry["name"] = kernel.name;
    entry["file"] = kernel.file;
    entry["launcher"] = kernel.name + "_launch";
    entry["workspace_launcher"] = kernel.name + "_workspace_bytes";
    entry["inputs"] = tensors_json(kernel.inputs);
    entry["outputs"] = tensors_json(kernel.outputs);
    entry["workspace_bytes"] = kernel.workspace_bytes;
    entry["grid"] = kernel.launch.grid;
    entry["block"] = kernel.launch.block;
    entry["shared_bytes"] = kernel.launch.shared_bytes;
    entry["shared_bytes_requested"] = kernel.shared_bytes_requested;
    entry["shared_memory_fallback"] = kernel.shared_memory_fallback;
    entry["cooperative"] = kernel.launch.cooperative;
    entry["template"] = kernel.template_text;
    entry["composition"] = kernel.composition;
    entry["vector_width"] = kernel.vector_width;
    nlohmann::ordered_json compositions = nlohmann::ordered_json::array();
    for (const OpSchedule& op : kernel.ops) {
      nlohmann::ordered_json item;
      item["node"] = op.node_name;
      item["op_type"] = op.op_type;
      item["composition"] = op.composition;
      item["template"] = op.template_entry;
      compositions.push_back(std::move(item));
    }
    entry["compositions"] = std::move(compositions);
    entry["fused_nodes"] = kernel.fused_nodes;
    entry["predicted_time_us"] = kernel.predicted_time_us;
    nlohmann::ordered_json shared_by = nlohmann::ordered_json::array();
    for (const SharedLaunch& launch : kernel.shared_by) {
      nlohmann::ordered_json item;
      item["node"] = launch.node;
      item["outputs"] = launch.outputs;
      shared_by.push_back(std::move(item));
    }
    entry["shared_by"] = std::move(shared_by);
    list.push_back(std::move(entry));
  }
  root["kernels"] = std::move(list);
  return dump_json(std::move(root));
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
  std::string_view prelude = embedded_stitch_prelude();
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

Status write_kernels_json(const std::vector<EmittedKernel>& kernels,
                          const std::filesystem::path& directory, const std::string& model_sha256) {
  return write_text(directory / "kernels.json", render_kernels_json(kernels, model_sha256));
}

}  // namespace stitch::emit
