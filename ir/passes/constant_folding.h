// Constant folding: evaluates nodes whose inputs are all constants with the
// reference interpreter and replaces them by initializers, up to a size limit.
//
// Objective: exporters compute constants at run time (Cast of a scalar, Sqrt of a
// constant, Reshape of a weight, arithmetic on shape vectors); evaluating them once
// at compile time removes the nodes, and makes constant operands visible to the
// rewrites that follow (x*1, zero Pad, static Reshape targets).
//
// Preconditions: the graph verifies. Evaluation uses ir/reference/interpreter.h, so folded
// values are exactly what the reference semantics give.
//
// Algorithm:
//  1. Every default-domain Constant node (value, value_float(s), value_int(s),
//     value_string(s); not sparse_value) is removed and its output value becomes an
//     initializer with the same name (Graph::make_initializer), whatever its size:
//     the data is in the model already.
//  2. Nodes are visited in topological order (ties by id). A node is foldable when
//     it is in the default domain, has a reference evaluation, is not random
//     (RandomNormal, RandomNormalLike, RandomUniform, RandomUniformLike,
//     Multinomial, Bernoulli), has no subgraph and no implicit inputs, and every
//     present input is an initializer with loaded numeric data that is not a graph
//     input (a caller may override those).
//  3. Size rule (so weights are not duplicated): let out = the bytes of all its
//     outputs, and freed = the bytes of the distinct input initializers that only
//     this node reads and that are not graph outputs (DCE removes them after the
//     fold). The node is folded when out <= max_folded_constant_bytes, or when
//     out <= freed. So Transpose(W) of a big W is folded when nothing else reads W
//     (W is replaced by its transposed copy) and kept when W has other users (two
//     copies of W would be stored). When the output types are static the rule is
//     checked before evaluating, otherwise after.
//  4. evaluate_node computes the outputs; the node is removed and each output value
//     becomes an initializer holding its result, keeping its name (graph outputs
//     included). A node the interpreter rejects (e.g. a dtype it does not take) is
//     left unfolded: the run-time will report it. Integer division by zero folds to 0
//     (docs/semantics.md).
//  5. Initializers the fold leaves unused are removed. Because the visit is in
//     topological order, chains of constant computations fold in one run.
//
// Before:                                   After:
//   %c = Constant() {value=dense<f32[]>[4]}    %s: f32[] = dense<f32[]>[2]
//   %s = Sqrt(%c)                              %y = Div(%x, %s)
//   %y = Div(%x, %s)
//
// Must not fire on: nodes with a non-constant input (graph inputs, initializers
// that are also graph inputs), random ops, ops of other domains or without a
// reference evaluation, and results over the size limit that free no larger
// inputs. Provenance: a folded value has no node, so it has no origin.
#pragma once

#include <optional>
#include <string>

#include "ir/passes/pass.h"

namespace stitch::ir {

Result<bool> fold_constants(Graph& graph, PassContext& context);

// Why constant folding leaves `node` in the graph although every present input is
// constant data (constant_data): "random op", "op of domain D", "has a subgraph",
// "no reference evaluation", "result of B bytes over the N-byte limit and frees F",
// or "the reference interpreter rejected it: ...". Nullopt when a run of
// fold_constants would fold it, or an input is not constant data.
std::optional<std::string> why_not_folded(const Graph& graph, const Node& node,
                                          const PassContext& context);

}  // namespace stitch::ir
