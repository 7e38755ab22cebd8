// CUDA graphs of libstitch_runtime_cuda.so: the work a function enqueues on a stream,
// captured once and launched again as one graph (runtime::Session's replay, and
// `stitchopt bench --graph`'s timing).
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <memory>

#include "ir/core/status.h"
#include "runtime_stub/backend.h"
#include "runtime_stub/cuda/cuda_plugin.h"

namespace stitch::runtime::cuda {

class CudaGraph final : public CapturedWork {
 public:
  // Captures what `enqueue` puts on `stream` (only this thread's calls are checked for
  // capture safety) and instantiates it. A failed capture leaves `stream` usable and
  // says why (a host step or a synchronizing copy cannot be captured).
  static Result<std::unique_ptr<CudaGraph>> capture(cudaStream_t stream,
                                                    const std::function<Status()>& enqueue);
  // Enqueues the graph on the stream it was captured on.
  Status launch() override;

 private:
  explicit CudaGraph(cudaStream_t stream) : stream_(stream) {}

  cudaStream_t stream_;
  Owned<cudaGraph_t, cudaGraphDestroy> graph_;
  Owned<cudaGraphExec_t, cudaGraphExecDestroy> executable_;
};

}  // namespace stitch::runtime::cuda
