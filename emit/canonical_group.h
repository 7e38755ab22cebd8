// The canonical text of a fused group: what makes two groups the same kernel.
//
// Kernel sharing (emit/fused_model.h) asks whether two groups compute the same
// thing on the same types. The answer is read from the IR, not from a serialized
// form of it: the text names every value by its role in the group (inputs x0..,
// outputs y0.., internal values t0.. in order of first definition) and lists, per
// node in topological order, the op type, domain, opset, the input and output
// wiring by those names, every attribute with its exact value (floats by their
// bits, tensors by dtype, dims and bytes), the type of every value, and the value of
// every integer or boolean constant input (the code generator folds those operands,
// e.g. Slice starts or reduction axes, into the kernel text). Node names,
// doc strings and origins are left out: they differ between identical groups.
// Strings are written with their length first, so no model text can make two
// different groups print the same.
//
// Example: %t = Mul(%a, %w); %y = Add(%t, %a) with %y read outside, opset 17:
//   in x0:f32[4,8] x1:f32[8]
//   out y0:f32[4,8]
//   node 3:Mul 0: 17 (x0 x1 ) -> (t0:f32[4,8] ) {}
//   node 3:Add 0: 17 (t0 x0 ) -> (y0 ) {}
#pragma once

#include <string>

#include "emit/group_boundary.h"
#include "ir/core/graph.h"

namespace stitch::emit {

// Precondition: `boundary` is group_boundary() of a group of live nodes of
// `model.graph`. A node without an opset counts as the model's opset of its domain.
std::string canonical_group_text(const ir::Model& model, const GroupBoundary& boundary);

}  // namespace stitch::emit
