// cuDNN pooling of libstitch_runtime_cuda.so: MaxPool, AveragePool (count_include_pad
// either way), GlobalAveragePool and GlobalMaxPool library steps (1-D or 2-D,
// float32/float16, symmetric pads, no dilation, an output size equal to cuDNN's floor
// formula) with cudnnPoolingForward. Plans are keyed by the Step's address, as the
// other library calls' (cublaslt_gemm.h).
#pragma once

#include <cudnn.h>

#include <map>
#include <memory>
#include <vector>

#include "ir/core/status.h"
#include "runtime_stub/backend.h"
#include "runtime_stub/program.h"

namespace stitch::runtime::cuda {

struct PoolPlan;

class CudnnPooling {
 public:
  explicit CudnnPooling(cudnnHandle_t handle);
  ~CudnnPooling();

  // Plans `step`, or says why it goes to the host.
  Result<Placement> prepare(const Step& step);
  void forget(const Step& step);
  bool planned(const Step& step) const { return plans_.contains(&step); }
  // Precondition: planned(step).
  Status run(const Step& step, const std::vector<const void*>& inputs,
             const std::vector<void*>& outputs);

 private:
  cudnnHandle_t handle_;
  std::map<const Step*, std::unique_ptr<PoolPlan>> plans_;
};

}  // namespace stitch::runtime::cuda
