// How a library call's function body carries its epilogue (artifact/library_epilogue.h,
// the recorded type): the matchers of the opened compound ops that fusion/epilogue.cc
// decides with, and bind_epilogue, which matches a recorded epilogue's ops to the
// call's body.
//
// Where the epilogue goes: fusion/epilogue.cc (decided) -> Pattern -> PlannedGroup
// (carried) -> driver/compile.cc (artifact::FusedNodeAttributes, whose to_attributes
// writes artifact::epilogue_attributes on the "stitchopt" node of model.fused.onnx and
// whose from_node reads them back with artifact::read_epilogue_attributes) ->
// runtime_stub/program.cc (Step::epilogue) -> runtime_stub/cuda/ (bind_epilogue: the
// values each op reads).
//
// The nodes of each op in a body (artifact/library_epilogue.h gives what each computes):
//   swish         Mul(v, Sigmoid(v)): two nodes, v read by both
//   hardswish     one node, or the five the decompose pass opens it into
//                 (opened_hard_swish)
//   gelu          the five nodes PyTorch exports or the decompose pass opens Gelu into
//                 (opened_gelu)
//   gelu_tanh     the eight or nine nodes PyTorch exports or the decompose pass opens
//                 Gelu(approximate="tanh") into (opened_gelu_tanh)
//   the others    one node each
//
// The body of a library call is the call L, then the nodes of each op after its own
// operand, in order: L's own bias or C (Conv's input 2, Gemm's C) is the first op
// when L has one; each later op reads the previous op's output (swish: its Sigmoid and
// its Mul both do).
//   %c = Conv(%x, %w, %b); %s = Add(%c, %skip); %y = Relu(%s)
//   with ["bias", "residual add", "relu"]: bias %b, residual %skip, relu, output %y.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "artifact/library_epilogue.h"
#include "ir/core/graph.h"

namespace stitch::fusion {

// The value of `value` when it is an initializer of one float element (its bytes all
// there), else nullopt: Clip's bounds, the opened HardSwish's scalars.
std::optional<float> scalar_constant(const ir::Graph& graph, ir::ValueId value);

// HardSwish(v) as ir/passes/decompose_compound_ops.cc opens it, in v's dtype:
//   %s = Mul(v, k1); %a = Add(%s, k2); %n = Min(%a, k3); %m = Max(%n, k4);
//   %y = Mul(v, %m)   (each Mul's operands in either order)
// with v read by the two Muls only and every other intermediate by the next node only
// (none a graph output). The five nodes in that order, or nullopt. `constants`: the
// scalars k1..k4 are initializers holding 1/6, 1/2, 1 and 0 (within 1e-3, so a
// float16 1/6 counts); without it (a library call's body, whose scalars are inputs)
// only the structure is checked.
std::optional<std::vector<ir::NodeId>> opened_hard_swish(const ir::Graph& graph, ir::ValueId v,
                                                         bool constants);

// GELU(v) (erf) as opened into five nodes, in v's dtype, by the decompose pass or by
// PyTorch's export (each Mul's operands in either order):
//   %s = Mul(v, k1) or Div(v, k1'); %e = Erf(%s); %p = Add(%e, k2);
//   then %h = Mul(v, k3); %y = Mul(%h, %p)    (the decompose pass: halved first)
//   or   %m = Mul(v, %p); %y = Mul(%m, k3)    (PyTorch)
// with v read by %s and the first Mul of the last two only and every other
// intermediate by the next node only (none a graph output). The five nodes in that
// order (a topological one), or nullopt. `constants`: k1 is 1/sqrt(2) (k1' sqrt(2)),
// k2 1 and k3 1/2, each within 1e-3 (float16 counts); without it only the structure.
std::optional<std::vector<ir::NodeId>> opened_gelu(const ir::Graph& graph, ir::ValueId v,
                                                   bool constants);

// GELU's tanh approximation as opened by PyTorch's export or the decompose pass, in
// v's dtype (each Mul's and Add's operands in either order):
//   %c = Pow(v, k0)  or  %q = Mul(v, v); %c = Mul(%q, v);
//   %t = Mul(%c, k1); %u = Add(v, %t); %s = Mul(%u, k2); %e = Tanh(%s);
//   %p = Add(%e, k3); then the erf form's tail (Mul(v, k4), Mul(%h, %p), or
//   Mul(v, %p), Mul(%m, k4))
// with v read by the cube's nodes, %u and the tail's first Mul only and every other
// intermediate by the next node only (none a graph output). The eight or nine nodes in
// that order (a topological one), or nullopt. `constants`: k0 is 3, k1 0.044715
// (within 1e-4: float16 rounds it by 2.2e-5), k2 sqrt(2 / pi), k3 1 and k4 1/2 (within
// 1e-3); without it only the structure.
std::optional<std::vector<ir::NodeId>> opened_gelu_tanh(const ir::Graph& graph, ir::ValueId v,
                                                        bool constants);

// The values of a library call's body that each op reads (see the header comment).
struct BoundEpilogue {
  ir::NodeId call = ir::kNoId;     // L, the body's first node
  ir::ValueId output = ir::kNoId;  // what the last op (or L) writes
  // Per op of the epilogue, in order: the tensor a bias, residual add or scale reads;
  // kNoId for the others.
  std::vector<ir::ValueId> operands;
  // The legacy form's view (artifact::LibraryEpilogue::legacy_form): its first bias and
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
std::optional<BoundEpilogue> bind_epilogue(const ir::Graph& body,
                                           const artifact::LibraryEpilogue& epilogue,
                                           std::string* why_not);

}  // namespace stitch::fusion
