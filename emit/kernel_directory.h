// Writes out/kernels/: the emitted .cu files and what builds and calls them.
//
//   <kernel>.cu          one per distinct kernel (EmittedKernel::source)
//   stitch_prelude.cuh   the kernel contract's prelude, embedded into the binary at
//                        build time from emit/cuda/stitch_prelude.cuh
//   kernels.h            extern "C" declarations of every launcher
//   kernels.json         the sha256 of the model.fused.onnx the kernels belong to
//                        (`stitchopt run` refuses any other model), and per kernel:
//                        name, file, launcher, inputs/outputs (value name, ONNX dtype
//                        name, shape), workspace bytes, grid, block, shared bytes,
//                        cooperative, template, composition, per-op schedules,
//                        and for a single-op kernel the other unfused nodes that
//                        launch it (shared_by: node name, output value names)
//   CMakeLists.txt       builds libstitch_kernels.so with nvcc (architectures 80;90)
// Kernels are written in the order given; two kernels with one name are an error.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "emit/cuda_emitter.h"
#include "ir/core/status.h"

namespace stitch::emit {

// The embedded prelude text (empty when the build had none).
std::string_view embedded_stitch_prelude();

// kernels.json / kernels.h text (deterministic: kernels in the given order).
std::string render_kernels_json(const std::vector<EmittedKernel>& kernels,
                                const std::string& model_sha256);
std::string render_kernels_header(const std::vector<EmittedKernel>& kernels);

// Everything but kernels.json, which is written once the rewritten model's bytes
// (and so their sha256) exist.
Status write_kernel_directory(const std::vector<EmittedKernel>& kernels,
                              const std::filesystem::path& directory);
Status write_kernels_json(const std::vector<EmittedKernel>& kernels,
                          const std::filesystem::path& directory, const std::string& model_sha256);

}  // namespace stitch::emit
