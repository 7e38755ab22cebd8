// No-op elimination: removes nodes whose output equals one of their inputs.
//
// Objective: exporters leave Identity nodes, inference-mode Dropout, Casts to the
// type a value already has, Reshapes to the shape it already has and Transposes
// that undo each other. Each costs a kernel launch or a copy at run time and hides
// producer/consumer pairs from the fusion planner.
//
// Preconditions: the graph verifies and shapes are inferred (static shapes make
// more nodes recognizable; a node whose relevant types are not static is kept).
//
// A node is a no-op (its output 0 equals its data input 0) when it is:
//   - Identity;
//   - Dropout whose training_mode input is omitted or a constant false (the ratio
//     does not matter), whose mask output is omitted or unused;
//   - Cast whose `to` is the input's dtype;
//   - Reshape, Expand, Flatten, Squeeze, Unsqueeze or Tile whose static output type
//     equals its static input type;
//   - Transpose with the identity permutation (an absent perm of rank <= 1 too);
//   - Slice with static input and output types that are equal and steps omitted or
//     constant ones (a step-1 slice as long as the axis is the whole axis);
//   - Pad whose pads (input from opset 11, attribute before) are constant zeros;
//   - Concat with one input; Split with one output;
//   - ReduceSum/Mean/Max/Min/Prod with noop_with_empty_axes=1 and an omitted or
//     empty constant axes input.
// A pair Transpose(Transpose(x, p1), p2) with p1[p2[i]] == i for every i is x.
//
// Algorithm, in topological order (ties by id):
//  1. Recognize the node (or the Transpose pair ending at it) as above.
//  2. If its output is not a graph output: every user reads the input instead, the
//     node is removed, and so is the first Transpose of a pair once nothing reads it.
//  3. If its output is a graph output, the input cannot simply take its place (the
//     output's name must stay). Then the chain is removed only when the input is
//     produced by a node, is itself no graph output, and has no user besides the
//     chain (and each link of a pair has no other user): that producer is
//     re-pointed to produce the graph output value directly and inherits the
//     chain's origin. Otherwise the node stays.
//
// Before:                                   After:
//   %t = Transpose(%x) {perm=[1, 0]}            %y = Relu(%x)
//   %u = Transpose(%t) {perm=[1, 0]}            return %y
//   %i = Identity(%u)
//   %y = Relu(%i)
//   return %y
//
// Must not fire on: a Reshape that changes the shape, a Cast to another type,
// Dropout in training mode or with a used mask, a Slice with step -1 or a shorter
// range, Pad with any non-zero pad, Transposes that do not compose to the identity,
// nodes whose types are not static where the rule needs them, an output a subgraph
// reads (its body names it), and a graph output
// whose input is a graph input, an initializer or a value with other users.
#pragma once

#include "ir/passes/pass.h"

namespace stitch::ir {

Result<bool> eliminate_noops(Graph& graph, PassContext& context);

}  // namespace stitch::ir
