// A convolution and its pointwise epilogue as one cuDNN graph (the graph API through
// cudnn-frontend, header-only; scripts/requirements.txt pins the PyPI package
// nvidia-cudnn-frontend that ships its headers): what a cuDNN library step runs when
// its epilogue (fusion/library_epilogue.h) is not the legacy form that
// cudnnConvolutionBiasActivationForward applies.
//
// The graph: conv_fprop(x, w) -> one or more pointwise nodes per epilogue op, in
// order, every intermediate virtual:
//   bias, residual add   ADD(v, operand)           scale        MUL(v, operand)
//   relu                 RELU_FWD                  clip(lo,hi)  RELU_FWD, lower clip lo,
//   sigmoid, tanh        SIGMOID_FWD, TANH_FWD                  upper clip hi
//   swish                SWISH_FWD, beta 1
//   hardsigmoid(a,b)     MUL(v, a) -> ADD(., b) -> RELU_FWD clipped to [0, 1]
//   hardswish            hardsigmoid(1/6, 1/2) of v -> MUL(v, .)
// with a and b pass-by-value scalars. Tensors are packed NCHW (x, y, a residual),
// KCRS (w) and [1,K,1,...] (a bias or scale); io in the model's float type, compute
// and intermediates in float32.
//
// Without a device the graph is built and validated (cudnn-frontend's validate:
// types, broadcasts; then the convolution's inferred output dims against y's), and json() prints
// it as the frontend does; tests/runtime/cudnn_graph_test.cc pins the graph of each
// supported chain. plan() (heuristics, support check, plan build) and execute() need
// the device.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fusion/library_epilogue.h"
#include "ir/core/dtype.h"
#include "ir/core/status.h"

namespace stitch::runtime::cuda {

// A Conv (NCHW, rank 3 to 5) and its epilogue, in plain numbers.
struct ConvGraphSpec {
  ir::DType dtype = ir::DType::kFloat32;  // of x, w, y and every operand
  std::vector<int64_t> x, w, y;           // dims: [N,C,...], [K,C/group,...], [N,K,...]
  std::vector<int64_t> pre_padding, post_padding, stride, dilation;  // per spatial axis
  std::vector<fusion::EpilogueOp> ops;
  // Per op: the dims of its operand at y's rank (a bias or scale [1,K,1,...], a
  // residual y's dims); empty for an op without one.
  std::vector<std::vector<int64_t>> operand_dims;
};

class CudnnConvGraph {
 public:
  // Builds and validates the graph of `spec`; nullptr with why in *why_not when the
  // frontend rejects it (or the spec is malformed).
  static std::unique_ptr<CudnnConvGraph> build(const ConvGraphSpec& spec, std::string* why_not);
  ~CudnnConvGraph();

  // The graph as cudnn-frontend prints it (its nodes and tensors; the library
  // versions and context left out), indented.
  std::string json() const;

  // On the device of `handle`: the operation graph, heuristics (modes A, then
  // fallback) and the first engine config that supports it built into a plan; for
  // float32, engines with tensor-core (TF32) numerics are left out, as the legacy
  // path's FMA math. "" or why no plan.
  Result<std::string> plan(cudnnHandle_t handle);
  int64_t workspace_bytes() const;  // after plan()
  // Runs the plan on handle's stream; operands per op as in the spec (nullptr for an
  // op without one).
  Status execute(cudnnHandle_t handle, const void* x, const void* w,
                 const std::vector<const void*>& operands, void* y, void* workspace) const;

 private:
  struct Impl;
  explicit CudnnConvGraph(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace stitch::runtime::cuda
