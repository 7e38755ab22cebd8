// Device memory of libstitch_runtime_cuda.so: cudaMalloc'd buffers (256-byte
// aligned) and the copies and memsets the executor asks for, ordered on the backend's
// stream and, for copies, waited for.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "ir/core/status.h"

namespace stitch::runtime::cuda {

class CudaMemory {
 public:
  explicit CudaMemory(cudaStream_t stream) : stream_(stream) {}

  // nullptr for 0 bytes; an error naming the free and total device memory when
  // cudaMalloc fails.
  Result<void*> allocate(int64_t bytes);
  void release(void* pointer) {
    if (pointer != nullptr) static_cast<void>(cudaFree(pointer));
  }
  Status upload(void* destination, const void* source, int64_t bytes);
  Status download(void* destination, const void* source, int64_t bytes);
  Status zero(void* destination, int64_t bytes);  // enqueued, not waited for

 private:
  cudaStream_t stream_;
};

}  // namespace stitch::runtime::cuda
