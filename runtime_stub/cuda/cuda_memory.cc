// Device memory: allocation, copies and memsets on the backend's stream.
#include "runtime_stub/cuda/cuda_memory.h"

#include <string>

#include "runtime_stub/cuda/cuda_plugin.h"

namespace stitch::runtime::cuda {

Result<void*> CudaMemory::allocate(int64_t bytes) {
  STITCH_CHECK(bytes >= 0) << "allocate(" << bytes << ")";
  if (bytes == 0) return static_cast<void*>(nullptr);
  void* pointer = nullptr;
  cudaError_t error = cudaMalloc(&pointer, static_cast<size_t>(bytes));
  if (error != cudaSuccess) {
    static_cast<void>(cudaGetLastError());  // out of memory is not sticky; clear it
    size_t free_bytes = 0;
    size_t total_bytes = 0;
    std::string memory;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
      memory = "; " + std::to_string(free_bytes) + " of " + std::to_string(total_bytes) +
               " bytes are free on the device";
    }
    return Status::internal(
        cuda_error_text("cudaMalloc(" + std::to_string(bytes) + " bytes)", error) + memory);
  }
  return pointer;
}

// Copies are ordered on the backend's stream and waited for: a plain cudaMemcpy runs
// on the legacy default stream, which a non-blocking stream does not wait for, and
// from pageable memory it may return before the DMA of the last chunk has landed.
Status CudaMemory::upload(void* destination, const void* source, int64_t bytes) {
  if (bytes == 0) return Status::ok();
  STITCH_RETURN_IF_ERROR(
      cuda_status(cudaMemcpyAsync(destination, source, static_cast<size_t>(bytes),
                                  cudaMemcpyHostToDevice, stream_),
                  "cudaMemcpyAsync(host to device, " + std::to_string(bytes) + " bytes)"));
  return cuda_status(cudaStreamSynchronize(stream_), "cudaStreamSynchronize(upload)");
}

Status CudaMemory::download(void* destination, const void* source, int64_t bytes) {
  if (bytes == 0) return Status::ok();
  STITCH_RETURN_IF_ERROR(
      cuda_status(cudaMemcpyAsync(destination, source, static_cast<size_t>(bytes),
                                  cudaMemcpyDeviceToHost, stream_),
                  "cudaMemcpyAsync(device to host, " + std::to_string(bytes) + " bytes)"));
  return cuda_status(cudaStreamSynchronize(stream_), "cudaStreamSynchronize(download)");
}

Status CudaMemory::zero(void* destination, int64_t bytes) {
  if (bytes == 0) return Status::ok();
  return cuda_status(cudaMemsetAsync(destination, 0, static_cast<size_t>(bytes), stream_),
                     "cudaMemsetAsync(" + std::to_string(bytes) + " bytes)");
}

}  // namespace stitch::runtime::cuda
