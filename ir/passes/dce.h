// Dead code elimination: removes nodes and values that no graph output depends on.
//
// Objective: after other passes rewire uses, the nodes and constants they bypassed
// are left behind; this pass sweeps them, so every other pass may leave unused
// nodes and values to it (it runs last in every round of the pipeline).
//
// Preconditions: the graph verifies (acyclic, links consistent). Graph outputs that
// are graph inputs or initializers are fine; nothing else is assumed.
//
// Algorithm:
//  1. Mark live the producer of every graph output.
//  2. Walk backwards with a worklist: a live node makes the producers of its inputs
//     and implicit inputs (values its subgraphs capture) live. Linear in the edges.
//  3. Remove every node not marked live, in id order (Graph::remove_node).
//  4. Remove every value that now has no producer and no users and is neither a
//     graph input nor a graph output: outputs of removed nodes, initializers nothing
//     reads any more, and "undefined" values nothing reads.
//
// Before:                                   After:
//   %w: f32[4] = dense<...>                   %y = Relu(%x)
//   %u: f32[4] = dense<...>                   return %y
//   %a = Add(%x, %w)     // no output needs it
//   %y = Relu(%x)
//   return %y
//
// Must not fire on: unused graph inputs (even with an initializer default: the
// caller may feed them), a graph output that is directly a graph input or an
// initializer, unused outputs of live nodes (a live multi-output node keeps all
// its output values; e.g. Split's or Dropout's mask output stays).
#pragma once

#include "ir/passes/pass.h"

namespace stitch::ir {

Result<bool> eliminate_dead_code(Graph& graph, PassContext& context);

}  // namespace stitch::ir
