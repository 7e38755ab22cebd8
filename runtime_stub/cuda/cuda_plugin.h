// Internal to libstitch_runtime_cuda.so: the two entry points api.cc puts into the
// CudaRuntimeApi table, the error texts every CUDA call site shares, and Owned<>, the
// RAII holder of CUDA/cuBLASLt/cuDNN handles, descriptors, events and graphs.
//
// Every CUDA return code is checked; a failure becomes a Status whose message names
// the call and the library's own error text, e.g.
//   cudaMalloc(1073741824 bytes): out of memory (error 2)
//   cublasLtMatmul: CUBLAS_STATUS_NOT_SUPPORTED (the functionality requested is not supported)
// The executor prefixes the step ("step \"mm\" (MatMul): ").
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "ir/core/status.h"
#include "runtime_stub/backend.h"
#include "runtime_stub/cuda_loader.h"
#include "runtime_stub/device_measurement.h"

namespace stitch::runtime::cuda {

// CudaRuntimeApi::create_backend (cuda_backend.cc).
Result<std::unique_ptr<Backend>> create_cuda_backend(const CudaBackendOptions& options);
// CudaRuntimeApi::calibrate (calibrate.cc).
Result<DeviceMeasurement> calibrate_cuda_device(const CalibrationOptions& options);

// "<call>: <cudaGetErrorString> (error N)".
inline std::string cuda_error_text(std::string_view call, cudaError_t error) {
  return std::string(call) + ": " + cudaGetErrorString(error) + " (error " +
         std::to_string(static_cast<int>(error)) + ")";
}
// "<call>: CUBLAS_STATUS_X (<description>)".
inline std::string cublas_error_text(std::string_view call, cublasStatus_t status) {
  return std::string(call) + ": " + cublasLtGetStatusName(status) + " (" +
         cublasLtGetStatusString(status) + ")";
}
// "<call>: CUDNN_STATUS_X".
inline std::string cudnn_error_text(std::string_view call, cudnnStatus_t status) {
  return std::string(call) + ": " + cudnnGetErrorString(status);
}

// Status::internal for a failed call, ok otherwise.
inline Status cuda_status(cudaError_t error, std::string_view call) {
  return error == cudaSuccess ? Status::ok() : Status::internal(cuda_error_text(call, error));
}
inline Status cublas_status(cublasStatus_t status, std::string_view call) {
  return status == CUBLAS_STATUS_SUCCESS ? Status::ok()
                                         : Status::internal(cublas_error_text(call, status));
}
inline Status cudnn_status(cudnnStatus_t status, std::string_view call) {
  return status == CUDNN_STATUS_SUCCESS ? Status::ok()
                                        : Status::internal(cudnn_error_text(call, status));
}

// Owns one handle of a C API whose objects are pointers released by `destroy`
// (cudaEventDestroy, cublasLtMatmulDescDestroy, cudnnDestroyTensorDescriptor, ...).
// Move-only. The release status is ignored: a destructor has nowhere to report it,
// and the only failures left at that point are a lost device, which the next checked
// call reports.
template <typename Handle, auto destroy>
class Owned {
 public:
  Owned() = default;
  explicit Owned(Handle handle) : handle_(handle) {}
  ~Owned() { reset(); }
  Owned(Owned&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Owned& operator=(Owned&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;

  Handle get() const { return handle_; }
  explicit operator bool() const { return handle_ != nullptr; }
  // For create calls that write the handle: `cudaEventCreate(event.receive())`.
  Handle* receive() {
    reset();
    return &handle_;
  }
  void reset() {
    if (handle_ != nullptr) static_cast<void>(destroy(handle_));
    handle_ = nullptr;
  }

 private:
  Handle handle_ = nullptr;
};

using OwnedEvent = Owned<cudaEvent_t, cudaEventDestroy>;
using OwnedStream = Owned<cudaStream_t, cudaStreamDestroy>;
using OwnedDeviceMemory = Owned<void*, cudaFree>;

}  // namespace stitch::runtime::cuda
