// Loads libstitch_runtime_cuda.so (runtime_stub/cuda/), the only part of stitchopt
// linked against the CUDA libraries, with dlopen, so that the stitchopt binary starts
// and compiles models on machines without CUDA and `run`, `bench` and `calibrate`
// can say exactly why no GPU is usable.
//
// The library is looked up beside the stitchopt binary, then in ../lib relative to
// it, then through $STITCH_RUNTIME_CUDA (a full path), in that order.
#pragma once

#include <memory>
#include <string>

#include "ir/core/status.h"
#include "runtime_stub/backend.h"
#include "runtime_stub/device_measurement.h"

namespace stitch::runtime {

struct CudaBackendOptions {
  int device = 0;
  // libstitch_kernels.so to load instead of building one from OUT/kernels/ with nvcc
  // (e.g. built with OUT/kernels/CMakeLists.txt). Empty: build it into
  // OUT/kernels/build/ (reused while the sources are unchanged).
  std::string kernels_library;
  std::string nvcc = "nvcc";  // used to build libstitch_kernels.so
  bool verbose = false;
};

struct CalibrationOptions {
  int device = 0;
  int64_t min_bytes = 1 << 10;  // bytes read plus written by the smallest copy
  int64_t max_bytes = int64_t{1} << 30;
  int points_per_decade = 4;  // sizes spaced evenly on a log scale
  int repetitions = 20;       // timed runs per size; the median is kept
  bool verbose = false;
};

// The entry points of libstitch_runtime_cuda.so; the library exports one C symbol,
// stitch_runtime_cuda_api, returning this table.
struct CudaRuntimeApi {
  int abi_version;  // kCudaRuntimeAbiVersion
  // Unavailable (Status::unavailable) when no device is usable: the message names
  // the CUDA call and its error (e.g. "cudaGetDeviceCount: no CUDA-capable device is
  // detected (error 100)").
  Result<std::unique_ptr<Backend>> (*create_backend)(const CudaBackendOptions& options);
  // Measures the bandwidth curve (a streaming copy kernel over sizes from min_bytes to
  // max_bytes, bytes read plus written), the L2 bandwidth, the launch latency phi
  // (back-to-back empty kernels), the grid barrier and the global load latency, and
  // reads the device properties. The measurement only: driver::calibrated_profile
  // makes the DeviceProfile of it (the datasheet peaks the device does not report
  // come from the shipped profile of the same GPU, or are estimated).
  Result<DeviceMeasurement> (*calibrate)(const CalibrationOptions& options);
};
// 2: calibrate returns a DeviceMeasurement (1 returned a cost_model::DeviceProfile).
// 3: Backend has device memory, caller streams and capture (runtime::Session).
inline constexpr int kCudaRuntimeAbiVersion = 3;

// dlopens the library (once) and returns its table. Unavailable with the reason when
// it was not built (no CUDA toolkit at build time), cannot be loaded (a CUDA library
// is missing: dlerror's message) or has another ABI version.
Result<const CudaRuntimeApi*> load_cuda_runtime();

}  // namespace stitch::runtime
