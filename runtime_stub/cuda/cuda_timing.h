// Timing of libstitch_runtime_cuda.so (stitchopt bench): CUDA events around work
// enqueued on a stream, and the same work captured once into a CUDA Graph and replayed.
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <vector>

#include "ir/core/status.h"

namespace stitch::runtime::cuda {

// Milliseconds between events recorded on `stream` before and after `enqueue`.
Result<double> time_on_stream(cudaStream_t stream, const std::function<Status()>& enqueue);

// Captures `enqueue` on `stream` into a CUDA Graph (only this thread's calls are checked
// for capture safety), replays it `warmup` times, then times `iterations` replays;
// their milliseconds in order.
Result<std::vector<double>> time_graph_on_stream(cudaStream_t stream,
                                                 const std::function<Status()>& enqueue, int warmup,
                                                 int iterations);

}  // namespace stitch::runtime::cuda
