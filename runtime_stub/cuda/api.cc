// The one symbol libstitch_runtime_cuda.so exports: the table of entry points
// runtime_stub/cuda_loader.cc looks up with dlsym after dlopen. Everything else in
// the library has hidden visibility (CMakeLists.txt), so `nm -D --defined-only` lists
// stitch_runtime_cuda_api and nothing else of ours.
#include "runtime_stub/cuda/cuda_plugin.h"

extern "C" __attribute__((visibility("default"))) const stitch::runtime::CudaRuntimeApi*
stitch_runtime_cuda_api() {
  static const stitch::runtime::CudaRuntimeApi api = {
      stitch::runtime::kCudaRuntimeAbiVersion,
      &stitch::runtime::cuda::create_cuda_backend,
      &stitch::runtime::cuda::calibrate_cuda_device,
  };
  return &api;
}
