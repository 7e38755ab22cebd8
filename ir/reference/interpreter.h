// The reference interpreter: a plain CPU evaluation of every op in the registry.
//
// It is the ground truth that later stages are checked against: constant folding
// evaluates nodes with it, and fused kernels (emitted CUDA, emulated kernels in
// tests) must match it. It favours being obviously right over being fast, but its
// loops run over contiguous strides without per-element allocation, so the bundled
// models evaluate in well under a second each.
//
// Semantics are ONNX's, opsets 7 to 21, every attribute and attribute-vs-input form
// the registry accepts. Numerics:
//  - float16 and bfloat16 are computed in wider precision and rounded to nearest
//    even on store; float32 and float64 are computed in double;
//  - reductions and dot products (Reduce*, Softmax, normalizations, MatMul, Gemm,
//    Conv, pooling, Einsum, LSTM) accumulate in double, so results are at least as
//    accurate as ONNX Runtime's float32 path;
//  - integers are computed in 64 bits and wrap on store; integer division or modulo
//    by zero is an error, not a crash.
// tests/reference/op_cases.py checks every op against ONNX Runtime (float32 within
// |a - b| <= 1e-5 * max(|b|, 1), float16/bfloat16 within 1e-2 of the same form,
// integers and bools exactly).
//
// Every failure is Status::invalid_input naming the node (`node "name" (OpType): ...`):
// ops without a reference evaluation (Opaque and unknown ops, other domains),
// dtypes an op does not take, inputs whose shapes or values the op rejects. It never
// aborts on a fact about the input.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ir/core/graph.h"
#include "ir/core/precision.h"
#include "ir/core/status.h"
#include "ir/core/tensor.h"

namespace stitch::ir {

// True when `op_type` in `domain` has a reference evaluation (every op of the
// registry does; tests/ir/interpreter_test.cc checks it).
bool has_reference_evaluation(std::string_view domain, std::string_view op_type);

// How products are computed. The default is the ground truth; `products` other than
// kFloat32 model what `--precision` makes the GPU compute (docs/precision.md): the
// float32 operands of every MatMul, Gemm and dense (group 1) Conv rounded to TF32, or
// split into two TF32 parts, before the exact products; accumulation stays double.
// Other dtypes and grouped convolutions are unaffected.
struct EvaluationOptions {
  Precision products = Precision::kFloat32;
  // evaluate_graph calls it with every node output as it is computed (a calibration
  // run's ranges: driver/precision_check.h); may be empty.
  std::function<void(ValueId, const Tensor&)> observe;
};

// Evaluates one node. `inputs` follows node.inputs (null for an omitted optional
// input; it may be shorter than node.inputs when trailing inputs are omitted);
// `opset` is the version of the node's domain the model imports. Returns one tensor
// per node output, in order; outputs the node omits (kNoId) come back as empty
// tensors (dtype kUndefined).
Result<std::vector<Tensor>> evaluate_node(const Node& node, int64_t opset,
                                          const std::vector<const Tensor*>& inputs,
                                          const EvaluationOptions& options = {});

// Evaluates the whole graph in topological order (ir::topological_order) and
// returns the graph outputs by name. `inputs` gives every graph input by name;
// graph inputs with an initializer default may be left out. Intermediate tensors
// are freed as soon as their last user has run. An input of the wrong dtype or
// shape, a missing input or an unknown input name is an error.
Result<std::map<std::string, Tensor>> evaluate_graph(const Model& model,
                                                     const std::map<std::string, Tensor>& inputs,
                                                     const EvaluationOptions& options = {});

}  // namespace stitch::ir
