// Shape folding: replaces Shape/Size/Gather/Unsqueeze/Concat/Reshape/ConstantOfShape/
// Range chains by constants once shapes are static.
//
// Objective: exporters compute shapes at run time (Shape -> Gather -> Unsqueeze ->
// Concat -> Reshape, per attention layer). Once the input shapes are fixed
// (--input-shape) every such chain is a constant; folding it removes the nodes and
// leaves Reshape/Expand with constant targets that no-op elimination and the
// fusion planner can read.
//
// Preconditions: the graph verifies and shape inference has run (value types are
// what the registry's rules give). Independent of constant-folding's size limit:
// it has its own, kMaxChainElements.
//
// Algorithm, one visit in topological order (ties by id), so chains fold in one run:
//  1. Shape and Size whose input shape is static (for Shape, the dims in its
//     [start, end) range) are removed; their output value becomes an int64
//     initializer with the same name, its value from the registry's shape rule.
//  2. A Reshape, Expand or ConstantOfShape whose output shape is static and whose
//     shape input is computed by a node (not a constant yet) reads a new int64
//     initializer holding the static output dims instead; Tile likewise gets
//     repeats = output dim / input dim. The old shape computation is left to DCE.
//     Reshape with allowzero=0 and a 0 in its output dims is skipped (a 0 in the
//     shape would mean "copy the input dim").
//  3. A node of the shape-chain ops (Gather, Unsqueeze, Squeeze, Concat, Slice,
//     Cast, Add, Sub, Mul, Div, Equal, Less, Greater, Not, Where, Range,
//     ConstantOfShape, Reshape, Expand, Neg, Abs, Max, Min, ReduceProd, Identity)
//     whose present inputs are all constants (initializers that are not graph
//     inputs, or outputs of Constant nodes with a `value` tensor; those are left to
//     DCE) is evaluated with ir::evaluate_node when every output holds at most
//     kMaxChainElements numeric elements; the node is removed and its outputs
//     become initializers with the same names. Step 2 first, so a ConstantOfShape
//     of a static shape folds in the same visit.
//
// Before (x: f32[2,8,64]):                  After:
//   %s = Shape(%x)                             %t: i64[3] = dense<i64[3]>[2, 8, 64]
//   %b = Gather(%s, %zero) {axis=0}            %r = Reshape(%y, %t)
//   %u = Unsqueeze(%b, %axes)                 (the Shape..Concat chain is gone)
//   %t = Concat(%u, %rest) {axis=0}
//   %r = Reshape(%y, %t)
//
// Must not fire on: Shape of a value with an unknown dim in the selected range,
// chains reading a graph input (even one with an initializer default) or a
// non-constant value, outputs over kMaxChainElements, Reshapes whose output
// shape is not static.
#pragma once

#include "ir/passes/pass.h"

namespace stitch::ir {

Result<bool> fold_shapes(Graph& graph, PassContext& context);

// Largest output (elements) step 2 folds: shape vectors and index ranges, not
// tensors of activation size (those are constant-folding's, under its limit).
inline constexpr int64_t kMaxChainElements = 4096;

}  // namespace stitch::ir
