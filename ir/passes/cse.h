// Common subexpression elimination: merges nodes with the same op, attributes and
// inputs, and initializers with the same bytes.
//
// Objective: exporters repeat computations (the same Shape -> Gather chain per
// layer, the same Reshape of one value, the same constant written twice); one copy
// is enough, and fewer nodes give the fusion planner fewer, larger groups.
//
// Preconditions: the graph verifies. Works on any graph; types need not be known.
//
// Algorithm:
//  1. Initializers (not graph inputs, whose data a caller may override, not graph
//     outputs, and not read by a subgraph when merged away) of at most
//     kMaxMergedInitializerBytes (64 KiB) with loaded data are keyed by (dtype,
//     dims, bytes / strings); the first one in model order represents every later
//     equal one, whose users are re-pointed at it.
//  2. Nodes are visited in topological order (ties by id), so a node's inputs are
//     already canonical when it is visited. A mergeable node (see below) gets a
//     structural key: domain, op type, opset, attributes sorted by name (tensor
//     attributes by dtype, dims and a 64-bit hash of their bytes), the input value
//     ids (sorted for the commutative Add, Mul, Max, Min, And, Or, Xor, Equal, Sum)
//     and the output count. The key indexes a hash map -> earlier node ids; a hit is
//     confirmed by full structural comparison (attribute tensors byte for byte).
//  3. On a confirmed match the earlier node survives and the later one is removed;
//     each output of the removed node hands its users to the survivor's output in
//     the same slot. Where the removed node's output is a graph output, its name
//     must stay: the survivor is re-pointed to produce that value instead, and the
//     survivor's old output value hands its users over and goes away. When both
//     outputs of one slot are graph outputs the nodes are not merged.
//
// Before:                                   After:
//   %a = Relu(%x)                              %a = Relu(%x)
//   %b = Relu(%x)                              %c = Add(%a, %a)
//   %c = Add(%a, %b)                           return %c
//   return %c
//
// Must not fire on: ops with side effects or randomness (RandomNormal,
// RandomNormalLike, RandomUniform, RandomUniformLike, Multinomial, Bernoulli,
// Dropout unless its training_mode is omitted or a constant false), ops outside
// the registry or the default domain (their semantics are unknown to us), nodes
// with subgraph attributes or implicit inputs, nodes without outputs, values a
// subgraph reads (its body names them, so they must stay); nodes whose
// attributes differ in any way (including doc strings); Constant nodes whose
// tensors differ in a single byte.
#pragma once

#include "ir/passes/pass.h"

namespace stitch::ir {

Result<bool> eliminate_common_subexpressions(Graph& graph, PassContext& context);

inline constexpr int64_t kMaxMergedInitializerBytes = 64 * 1024;

}  // namespace stitch::ir
