// The axes a Reduce* or ArgMax/ArgMin node reduces: the one reader of the "axes"
// attribute, the axes input and noop_with_empty_axes that the op registry's
// classification and the code generator use, so they cannot read them differently.
// The shape rules and the reference interpreter read axes from propagated values and
// tensors, not from the graph; they share reduction_axes_input_opset, the rule of which
// opset takes the axes as an input.
//
// ONNX moved the axes of the Reduce* ops from an attribute to an optional input: in
// opset 13 for ReduceSum, in opset 18 for the others. From then on an omitted or empty
// axes input means every axis, unless noop_with_empty_axes is set, which makes the op
// an Identity. ArgMax and ArgMin reduce their one "axis" attribute (default 0).
//
// Example: ReduceMean opset 18 of x: f32[8, 16, 32] with the constant axes [-1, 1, 1]
// reduces {1, 2}; with noop_with_empty_axes = 1 and no axes input it reduces nothing
// (`noop`); at opset 17 with no "axes" attribute it reduces {0, 1, 2}. A node whose
// opset is unset (0) reads as the newest opset.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/core/graph.h"
#include "ir/core/status.h"

namespace stitch::ir {

// The opset from which `node`'s axes are an input instead of the "axes" attribute: 13
// for ReduceSum, 18 for the other Reduce* ops, 0 for ArgMax/ArgMin (their one "axis"
// attribute). Precondition: `node` is a Reduce*, ArgMax or ArgMin node.
int64_t reduction_axes_input_opset(const Node& node);

// The axes `node` reduces, normalized against its input's rank, sorted and unique.
// `noop` is set (and the axes are empty) for noop_with_empty_axes with no axes: the op
// is an Identity. Errors: axes that come from a value that is not a constant, and axes
// out of range for the rank. Preconditions: `node` is a Reduce*, ArgMax or ArgMin node
// of the default domain whose input 0 has a known rank; `noop` is not null.
Result<std::vector<int64_t>> reduction_axes(const Graph& graph, const Node& node, bool* noop);

}  // namespace stitch::ir
