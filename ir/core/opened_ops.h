// The compound ops the decompose pass (ir/passes/decompose_compound_ops.cc) and
// PyTorch's exporter open into several plain nodes: HardSwish, GELU and its tanh
// approximation, matched back as the node sequences they become. One set of matchers
// for everything that asks: fusion's library epilogues decide with them (with the
// constants checked), artifact/library_call.h binds a recorded epilogue to a call's
// function body with them (structure only: a body's scalars are its inputs).
#pragma once

#include <optional>
#include <vector>

#include "ir/core/graph.h"

namespace stitch::ir {

// The value of `value` when it is an initializer of one float element (its bytes all
// there), else nullopt: Clip's bounds, the opened HardSwish's scalars.
std::optional<float> scalar_constant(const Graph& graph, ValueId value);

// HardSwish(v) as ir/passes/decompose_compound_ops.cc opens it, in v's dtype:
//   %s = Mul(v, k1); %a = Add(%s, k2); %n = Min(%a, k3); %m = Max(%n, k4);
//   %y = Mul(v, %m)   (each Mul's operands in either order)
// with v read by the two Muls only and every other intermediate by the next node only
// (none a graph output). The five nodes in that order, or nullopt. `constants`: the
// scalars k1..k4 are initializers holding 1/6, 1/2, 1 and 0 (within 1e-3, so a
// float16 1/6 counts); without it (a library call's body, whose scalars are inputs)
// only the structure is checked.
std::optional<std::vector<NodeId>> opened_hard_swish(const Graph& graph, ValueId v, bool constants);

// GELU(v) (erf) as opened into five nodes, in v's dtype, by the decompose pass or by
// PyTorch's export (each Mul's operands in either order):
//   %s = Mul(v, k1) or Div(v, k1'); %e = Erf(%s); %p = Add(%e, k2);
//   then %h = Mul(v, k3); %y = Mul(%h, %p)    (the decompose pass: halved first)
//   or   %m = Mul(v, %p); %y = Mul(%m, k3)    (PyTorch)
// with v read by %s and the first Mul of the last two only and every other
// intermediate by the next node only (none a graph output). The five nodes in that
// order (a topological one), or nullopt. `constants`: k1 is 1/sqrt(2) (k1' sqrt(2)),
// k2 1 and k3 1/2, each within 1e-3 (float16 counts); without it only the structure.
std::optional<std::vector<NodeId>> opened_gelu(const Graph& graph, ValueId v, bool constants);

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
std::optional<std::vector<NodeId>> opened_gelu_tanh(const Graph& graph, ValueId v, bool constants);

}  // namespace stitch::ir
