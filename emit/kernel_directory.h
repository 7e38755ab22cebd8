// Writes out/kernels/: the emitted .cu files and what builds and calls them.
//
//   <kernel>.cu          one per distinct kernel (EmittedKernel::source)
//   stitch_prelude.cuh   the kernel contract's prelude (artifact/kernel_prelude.h,
//                        embedded at build time from emit/cuda/stitch_prelude.cuh)
//   kernels.h            extern "C" declarations of every launcher
//   kernels.json         the artifact the runtime reads (artifact/kernels_json.h): the
//                        sha256 of the model.fused.onnx the kernels belong to
//                        (`stitchopt run` refuses any other model), and per kernel
//                        its EmittedKernel fields, the charges of the schedule it was
//                        emitted with and its predicted time (KernelPrediction)
//   CMakeLists.txt       builds libstitch_kernels.so with nvcc (architectures 80;90)
// Kernels are written in the order given; two kernels with one name are an error.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "artifact/kernels_json.h"
#include "cost_model/device_profile.h"
#include "emit/cuda_emitter.h"
#include "emit/group_boundary.h"
#include "emit/schedule.h"
#include "ir/core/graph.h"
#include "ir/core/status.h"

namespace stitch::emit {

// What the cost model says of a kernel as emitted: the charges of its schedule
// (kernel_shape) and one launch's predicted time, cost_model::estimate_group of the
// kernel's nodes with those charges (launch and composition charges included). For a
// group that is report.json's groups[].predicted_time_us, computed from the same nodes
// in the same order.
struct KernelPrediction {
  artifact::KernelCharges charges;
  double predicted_time_us = 0;
};

// The prediction for `kernel` as emitted (its charges, --no-stencil-tiles included):
// `nodes` are the group's nodes as the plan lists them, the order estimate_group sums
// in, so a group's figure is exactly report.json's.
KernelPrediction predict_kernel(const ir::Graph& graph, const std::vector<ir::NodeId>& nodes,
                                const EmittedKernel& kernel,
                                const cost_model::DeviceProfile& profile);

// The artifact: each kernel with its prediction (`predictions[i]` is `kernels[i]`'s).
artifact::KernelsArtifact kernels_artifact(const std::vector<EmittedKernel>& kernels,
                                           const std::vector<KernelPrediction>& predictions,
                                           const std::string& model_sha256);

// kernels.h text (deterministic: kernels in the given order).
std::string render_kernels_header(const std::vector<EmittedKernel>& kernels);

// Everything but kernels.json, which is written once the rewritten model's bytes
// (and so their sha256) exist.
Status write_kernel_directory(const std::vector<EmittedKernel>& kernels,
                              const std::filesystem::path& directory);
Status write_kernels_json(const artifact::KernelsArtifact& artifact,
                          const std::filesystem::path& directory);

}  // namespace stitch::emit
