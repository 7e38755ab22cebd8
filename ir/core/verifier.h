// The IR verifier: checks the invariants every pass must keep.
#pragma once

#include "ir/core/graph.h"
#include "ir/core/status.h"

namespace stitch::ir {

// Checks: the graph is acyclic; every live node's inputs are live values that are
// graph inputs, initializers or produced by a live node; each value has at most one
// producer and producer/users links agree both ways; value names are unique and
// non-empty; graph outputs are defined; dtypes and shapes recorded on values agree
// with the registry's rules for registry ops; node input/output counts are within
// the op's schema. Error messages name the node (name and op type) and the value.
Status verify(const Model& model);

}  // namespace stitch::ir
