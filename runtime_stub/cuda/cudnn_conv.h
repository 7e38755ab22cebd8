// cuDNN convolutions of libstitch_runtime_cuda.so: a Conv library step (1-D or 2-D,
// NCHW, float32, groups, symmetric pads, strides, dilations) with cudnnConvolutionForward
// (+ cudnnAddTensor for a bias) or, when the plan's epilogue (cuda_library_step.h) has a
// residual Add or a Relu, cudnnConvolutionBiasActivationForward
//   y = act(conv(x, w) + alpha2 * z + bias)
// (cuDNN allows only IMPLICIT_PRECOMP_GEMM with the identity activation). Every plan
// runs once at prepare time on zeroed scratch buffers: a fused call cuDNN rejects
// falls back to Forward + AddTensor + ActivationForward, an unfused one it rejects goes
// to the host. The algorithm is cuDNN's heuristic choice
// (cudnnGetConvolutionForwardAlgorithm_v7) within 256 MiB of workspace; math type
// CUDNN_FMA_MATH: no TF32.
// A Conv whose epilogue is not that legacy form (float16/bfloat16 with clip, sigmoid,
// swish, ...; fusion/epilogue.h decides), and any float16/bfloat16 Conv, runs as one
// cuDNN graph (cudnn_graph.h) when the device has an engine for it, else on the host
// with cuDNN's reason.
//
// Plans are made in prepare() and keyed by the Step's address: run() must get the
// Step object prepare() got.
#pragma once

#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/core/status.h"
#include "runtime_stub/backend.h"
#include "runtime_stub/program.h"

namespace stitch::runtime::cuda {

struct ConvPlan;
struct LibraryChain;

class CudnnConvolutions {
 public:
  // Every call goes through `handle`, whose stream is `stream`; `verbose` says on
  // stderr when a fused call falls back to separate calls.
  CudnnConvolutions(cudnnHandle_t handle, cudaStream_t stream, bool verbose);
  ~CudnnConvolutions();

  // Plans `step`, or says why it goes to the host.
  Result<Placement> prepare(const Step& step);
  void forget(const Step& step);
  bool planned(const Step& step) const { return plans_.contains(&step); }
  int64_t scratch_bytes(const Step& step) const;  // cuDNN's workspace; 0 when not planned
  // Precondition: planned(step).
  Status run(const Step& step, const std::vector<const void*>& inputs,
             const std::vector<void*>& outputs, void* scratch);

 private:
  // Plans a Conv whose epilogue is not the legacy form as one cuDNN graph
  // (cudnn_graph.h), or refuses it with cuDNN's reason.
  Result<Placement> prepare_graph(const Step& step, const LibraryChain& chain);
  // Picks the fused call for a residual or Relu epilogue when cuDNN accepts it.
  Status plan_fused_call(const Step& step, int channels, ConvPlan* plan);
  // Runs the planned cuDNN calls once on zeroed scratch buffers: ok when cuDNN accepts
  // them, else a refusal with its error (so a form cuDNN rejects goes to the host at
  // prepare time instead of failing the run); an error when the trial cannot be set up.
  Status try_plan(const Step& step, const ConvPlan& plan);
  Status run_plan(const ConvPlan& plan, const std::vector<const void*>& inputs,
                  const std::vector<void*>& outputs, void* scratch);

  cudnnHandle_t handle_;
  cudaStream_t stream_;
  bool verbose_;
  std::map<const Step*, std::unique_ptr<ConvPlan>> plans_;
};

}  // namespace stitch::runtime::cuda
