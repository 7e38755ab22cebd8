// A library call as the runtime runs it (artifact/README.md): which nodes of
// model.fused.onnx are cuBLASLt or cuDNN calls, what a plain node's own operand applies
// after the product, and which values of a call's function body each recorded epilogue
// op reads. The compile's planner (fusion/epilogue.cc) and the runtime
// (runtime_stub/program.cc, runtime_stub/cuda/) both ask here, so that "is this a
// library call, and with what epilogue" has one answer.
//
// A fused library call is a "stitchopt" node whose attributes record its library and
// epilogue (artifact/library_epilogue.h); a lone one is a plain ONNX node the plan left
// unfused, and the artifact defines how it runs:
//   MatMul, Gemm                                   cuBLASLt
//   Conv, MaxPool, AveragePool, GlobalAveragePool,
//   GlobalMaxPool                                  cuDNN
// with the epilogue its own operand applies: Conv's bias (input 2) as "bias"; Gemm's
// C as "residual add" when it has the output's dims, as "bias" when it is one value
// per output column and beta is 1; a Gemm whose C is neither has no epilogue form
// (lone_call_epilogue: nullopt), and the runtime refuses it as a library step
// (runtime_stub/cuda/cuda_library_step.h).
//
// The body of a library call is the call L, then the nodes of each op after its own
// operand, in order: L's own bias or C (Conv's input 2, Gemm's C) is the first op
// when L has one; each later op reads the previous op's output (swish: its Sigmoid and
// its Mul both do). The nodes of each op (artifact/library_epilogue.h gives what each
// computes):
//   swish         Mul(v, Sigmoid(v)): two nodes, v read by both
//   hardswish     one node, or the five the decompose pass opens it into
//                 (ir::opened_hard_swish)
//   gelu          the five nodes PyTorch exports or the decompose pass opens Gelu into
//                 (ir::opened_gelu)
//   gelu_tanh     the eight or nine nodes PyTorch exports or the decompose pass opens
//                 Gelu(approximate="tanh") into (ir::opened_gelu_tanh)
//   the others    one node each
//   %c = Conv(%x, %w, %b); %s = Add(%c, %skip); %y = Relu(%s)
//   with ["bias", "residual add", "relu"]: bias %b, residual %skip, relu, output %y.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "artifact/library_epilogue.h"
#include "ir/core/graph.h"

namespace stitch::artifact {

// The library a plain ONNX node runs in when the plan leaves it unfused (the table
// above); nullopt for every other op and for a node of another domain.
std::optional<Library> lone_call_library(const ir::Node& node);

// The epilogue of `call` alone: its library and the bias or residual add its own
// operand applies (the table above). nullopt when lone_call_library is, and for a Gemm
// whose C is neither a residual nor a bias with beta 1 (or whose output has no type).
std::optional<LibraryEpilogue> lone_call_epilogue(const ir::Graph& graph, const ir::Node& call);

// What an operand of an epilogue Add (or a scale's Mul) can be for the chain value v.
struct EpilogueOperandFit {
  bool bias = false;      // one value per channel: v's dims, right-aligned, all 1 but the
                          // channel axis, which equals v's
  bool residual = false;  // exactly v's dims
};

// How `operand` fits v, both of one dtype and static (else neither).
EpilogueOperandFit fit_epilogue_operand(const ir::TensorType& operand, const ir::TensorType& v,
                                        size_t channel_axis);

// The axis a bias runs along: a Conv's channels (dim 1), a GEMM's last dim N.
size_t epilogue_channel_axis(const ir::Node& call, const ir::TensorType& output);

// The values of a library call's body that each op reads (see the header comment).
struct BoundEpilogue {
  ir::NodeId call = ir::kNoId;     // L, the body's first node
  ir::ValueId output = ir::kNoId;  // what the last op (or L) writes
  // Per op of the epilogue, in order: the tensor a bias, residual add or scale reads;
  // kNoId for the others.
  std::vector<ir::ValueId> operands;
  // The legacy form's view (LibraryEpilogue::legacy_form): its first bias and
  // residual (kNoId: none) and whether it has a relu.
  ir::ValueId bias = ir::kNoId;
  ir::ValueId residual = ir::kNoId;
  float residual_scale = 1.0f;  // Gemm's beta when its own C is the residual
  bool relu = false;
};

// Matches `epilogue` to `body`: the call is the first node in topological order and
// the ops follow as above. nullopt, with why in *why_not, when the body is not that
// chain (a node that is not the next op's node, an op count that differs, an op that
// does not read the previous op's output, a Gemm's C that is not its first op).
std::optional<BoundEpilogue> bind_epilogue(const ir::Graph& body, const LibraryEpilogue& epilogue,
                                           std::string* why_not);

}  // namespace stitch::artifact
