// CUDA graph capture and launch (runtime_stub/cuda/cuda_graph.h).
#include "runtime_stub/cuda/cuda_graph.h"

namespace stitch::runtime::cuda {

Result<std::unique_ptr<CudaGraph>> CudaGraph::capture(cudaStream_t stream,
                                                      const std::function<Status()>& enqueue) {
  std::unique_ptr<CudaGraph> graph(new CudaGraph(stream));
  STITCH_RETURN_IF_ERROR(cuda_status(
      cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture"));
  Status enqueued = enqueue();
  cudaError_t ended = cudaStreamEndCapture(stream, graph->graph_.receive());
  if (!enqueued.is_ok() || ended != cudaSuccess) {
    static_cast<void>(cudaGetLastError());  // a failed capture leaves its error behind
    if (!enqueued.is_ok()) {
      return enqueued.with_prefix(
          "capturing a CUDA graph (a host step, a synchronizing copy or an uncapturable launch "
          "cannot be captured): ");
    }
    return Status::internal(cuda_error_text("cudaStreamEndCapture", ended) +
                            ": the enqueued work cannot be captured into a CUDA graph");
  }
  STITCH_RETURN_IF_ERROR(
      cuda_status(cudaGraphInstantiate(graph->executable_.receive(), graph->graph_.get(), 0),
                  "cudaGraphInstantiate"));
  return graph;
}

Status CudaGraph::launch() {
  return cuda_status(cudaGraphLaunch(executable_.get(), stream_), "cudaGraphLaunch");
}

}  // namespace stitch::runtime::cuda
