// A convolution or matmul and its pointwise epilogue as one cuDNN graph (the graph
// API through cudnn-frontend, header-only; scripts/requirements-headers.txt pins the
// PyPI package nvidia-cudnn-frontend that ships its headers): what a cuDNN library
// step runs when its epilogue (artifact/library_epilogue.h) is not the legacy form that
// cudnnConvolutionBiasActivationForward and cuBLASLt apply, or its Conv is not
// float32.
//
// The graph: conv_fprop(x, w) or matmul(x, w), then one or more pointwise nodes per
// epilogue op, in order, every intermediate virtual:
//   bias, residual add   ADD(v, operand)           scale        MUL(v, operand)
//   relu                 RELU_FWD                  clip(lo,hi)  RELU_FWD, lower clip lo,
//   sigmoid, tanh        SIGMOID_FWD, TANH_FWD                  upper clip hi
//   swish                SWISH_FWD, beta 1
//   hardsigmoid(a,b)     MUL(v, a) -> ADD(., b) -> RELU_FWD clipped to [0, 1]
//   hardswish            hardsigmoid(1/6, 1/2) of v -> MUL(v, .)
// with a and b pass-by-value scalars. Tensors are packed row-major: NCHW (x, y, a
// residual), KCRS (w) and [1,K,1,...] (a bias or scale) for a convolution;
// [B,M,K] x [B or 1,K,N] -> [B,M,N] with a bias or scale [1,1,N] for a matmul. io in
// the model's float type, compute and intermediates in float32.
//
// Without a device the graph is built and validated (cudnn-frontend's validate:
// types, broadcasts; then the product's inferred dims against y's), and json() prints
// it as the frontend does; tests/runtime/cudnn/cudnn_graph_test.cc pins the graph of
// each supported chain. plan() (heuristics, support check, plan build) and execute()
// need the device.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "artifact/library_epilogue.h"
#include "ir/core/dtype.h"
#include "ir/core/graph.h"
#include "ir/core/status.h"

namespace stitch::runtime::cuda {

// A Conv (NCHW, rank 3 to 5) or a MatMul (rank 3) and its epilogue, in plain numbers.
struct EpilogueGraphSpec {
  bool matmul = false;
  ir::DType dtype = ir::DType::kFloat32;  // of x, w, y and every operand
  // Conv: [N,C,...], [K,C/group,...], [N,K,...]; MatMul: [B,M,K], [B or 1,K,N], [B,M,N].
  std::vector<int64_t> x, w, y;
  // Conv only: per spatial axis.
  std::vector<int64_t> pre_padding, post_padding, stride, dilation;
  std::vector<artifact::EpilogueOp> ops;
  // Per op: the dims of its operand at y's rank (a bias or scale [1,K,1,...] for a
  // Conv, [1,1,N] for a MatMul; a residual y's dims); empty for an op without one.
  std::vector<std::vector<int64_t>> operand_dims;
  // float32 only: TF32 tensor-core engines allowed (the step's products are kTf32 and
  // the product is a MatMul or a dense Conv); otherwise float32 keeps FMA engines.
  bool tf32 = false;
};

// The spec of `op` (a Conv or MatMul of `body`, writing `output`) with `ops` applied
// after it: a Conv's dims and window; a MatMul as [B,M,K] x [B or 1,K,N] (batches of A
// over one matrix B fold into M); each operand's dims. A refusal (Status::unavailable)
// says why there is none.
Result<EpilogueGraphSpec> graph_spec(const ir::Graph& body, const ir::Node& op,
                                     const ir::TensorType& output,
                                     const std::vector<artifact::EpilogueOp>& ops);

class CudnnEpilogueGraph {
 public:
  // Builds and validates the graph of `spec`, or a refusal (Status::unavailable) saying
  // why the frontend rejects it (or that the spec is malformed).
  static Result<std::unique_ptr<CudnnEpilogueGraph>> build(const EpilogueGraphSpec& spec);
  ~CudnnEpilogueGraph();

  // The graph as cudnn-frontend prints it (its nodes and tensors; the library
  // versions and context left out), indented.
  std::string json() const;

  // On the device of `handle`: the operation graph, heuristics (modes A, then
  // fallback) and the first engine config that supports it built into a plan; for
  // float32, engines with tensor-core (TF32) numerics are left out, as the legacy
  // path's FMA math. Ok, or a refusal (Status::unavailable) saying why there is no plan.
  Status plan(cudnnHandle_t handle);
  int64_t workspace_bytes() const;  // after plan()
  // Runs the plan on handle's stream; operands per op as in the spec (nullptr for an
  // op without one).
  Status execute(cudnnHandle_t handle, const void* x, const void* w,
                 const std::vector<const void*>& operands, void* y, void* workspace) const;

 private:
  struct Impl;
  explicit CudnnEpilogueGraph(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace stitch::runtime::cuda
