// Timing with CUDA events, directly or as one CUDA Graph replay.
#include "runtime_stub/cuda/cuda_timing.h"

#include <memory>
#include <string>

#include "runtime_stub/cuda/cuda_graph.h"
#include "runtime_stub/cuda/cuda_plugin.h"

namespace stitch::runtime::cuda {

Result<double> time_on_stream(cudaStream_t stream, const std::function<Status()>& enqueue) {
  OwnedEvent start;
  OwnedEvent stop;
  STITCH_RETURN_IF_ERROR(cuda_status(cudaEventCreate(start.receive()), "cudaEventCreate"));
  STITCH_RETURN_IF_ERROR(cuda_status(cudaEventCreate(stop.receive()), "cudaEventCreate"));
  STITCH_RETURN_IF_ERROR(cuda_status(cudaEventRecord(start.get(), stream), "cudaEventRecord"));
  STITCH_RETURN_IF_ERROR(enqueue());
  STITCH_RETURN_IF_ERROR(cuda_status(cudaEventRecord(stop.get(), stream), "cudaEventRecord"));
  STITCH_RETURN_IF_ERROR(cuda_status(cudaEventSynchronize(stop.get()), "cudaEventSynchronize"));
  float milliseconds = 0.0f;
  STITCH_RETURN_IF_ERROR(cuda_status(cudaEventElapsedTime(&milliseconds, start.get(), stop.get()),
                                     "cudaEventElapsedTime"));
  return static_cast<double>(milliseconds);
}

Result<std::vector<double>> time_graph_on_stream(cudaStream_t stream,
                                                 const std::function<Status()>& enqueue, int warmup,
                                                 int iterations) {
  if (warmup < 0 || iterations < 1) {
    return Status::invalid_input("time_graph: warmup " + std::to_string(warmup) +
                                 " and iterations " + std::to_string(iterations) +
                                 " (need >= 0 and >= 1)");
  }
  STITCH_ASSIGN_OR_RETURN(std::unique_ptr<CudaGraph> graph, CudaGraph::capture(stream, enqueue));
  for (int i = 0; i < warmup; ++i) {
    STITCH_RETURN_IF_ERROR(graph->launch());
  }
  STITCH_RETURN_IF_ERROR(cuda_status(cudaStreamSynchronize(stream), "cudaStreamSynchronize"));
  OwnedEvent start;
  OwnedEvent stop;
  STITCH_RETURN_IF_ERROR(cuda_status(cudaEventCreate(start.receive()), "cudaEventCreate"));
  STITCH_RETURN_IF_ERROR(cuda_status(cudaEventCreate(stop.receive()), "cudaEventCreate"));
  std::vector<double> milliseconds;
  for (int i = 0; i < iterations; ++i) {
    STITCH_RETURN_IF_ERROR(cuda_status(cudaEventRecord(start.get(), stream), "cudaEventRecord"));
    STITCH_RETURN_IF_ERROR(graph->launch());
    STITCH_RETURN_IF_ERROR(cuda_status(cudaEventRecord(stop.get(), stream), "cudaEventRecord"));
    STITCH_RETURN_IF_ERROR(cuda_status(cudaEventSynchronize(stop.get()), "cudaEventSynchronize"));
    float elapsed = 0.0f;
    STITCH_RETURN_IF_ERROR(cuda_status(cudaEventElapsedTime(&elapsed, start.get(), stop.get()),
                                       "cudaEventElapsedTime"));
    milliseconds.push_back(static_cast<double>(elapsed));
  }
  return milliseconds;
}

}  // namespace stitch::runtime::cuda
