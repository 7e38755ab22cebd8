// The generated kernels of libstitch_runtime_cuda.so: OUT/kernels/ compiled into
// OUT/kernels/build/libstitch_kernels.so on the first kernel step (runtime_stub/
// kernel_library.h: one nvcc per .cu in parallel, stamped, then one link with the
// shared cudart, so the kernels and this library use the same CUDA runtime), or
// CudaBackendOptions::kernels_library loaded instead. Each kernel step calls its
// launcher `cudaError_t <kernel>_launch(const void* const* inputs, void* const* outputs,
// void* workspace, cudaStream_t stream)` (emit/cuda_emitter.h);
// `<kernel>_workspace_bytes()` must equal kernels.json's workspace_bytes.
#pragma once

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <map>
#include <optional>
#include <vector>

#include "ir/core/status.h"
#include "runtime_stub/backend.h"
#include "runtime_stub/cuda/cuda_plugin.h"
#include "runtime_stub/cuda_loader.h"
#include "runtime_stub/program.h"

namespace stitch::runtime::cuda {

class CudaKernelLibrary {
 public:
  // `properties`: the device the kernels are built for (-arch=sm_XY).
  CudaKernelLibrary(const CudaBackendOptions& options, const cudaDeviceProp& properties)
      : options_(options), properties_(properties) {}

  // Finds the step's launcher, building and loading the library on the first call.
  Result<Placement> prepare(const Program& program, const Step& step);
  void forget(const Step& step) { launchers_.erase(&step); }
  bool planned(const Step& step) const { return launchers_.contains(&step); }
  // Precondition: planned(step).
  Status run(const Step& step, const std::vector<const void*>& inputs,
             const std::vector<void*>& outputs, void* workspace, cudaStream_t stream);

 private:
  using LaunchFn = cudaError_t (*)(const void* const*, void* const*, void*, cudaStream_t);

  Status load(const Program& program);

  CudaBackendOptions options_;
  cudaDeviceProp properties_;
  Owned<void*, dlclose> library_;
  std::optional<Status> library_status_;  // set by the first kernel step
  std::map<const Step*, LaunchFn> launchers_;
};

}  // namespace stitch::runtime::cuda
