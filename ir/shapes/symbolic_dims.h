// Which symbolic dims a model's shapes depend on (issue 15, part 2).
//
// Objective: a model exported with dynamic axes names its free dims (dim_param: batch,
// seq, or torch's "input_ids_dynamic_axes_1"). stitchopt compiles for static shapes,
// so such a model needs --input-shape; the message asking for it should name the dims
// that decide the shapes, once each, with the values the model already forces, not
// every input's dims as declared.
//
// Preconditions: the importer made the open graph-input dims symbolic
// (ImportOptions::symbolic_dims, ir::symbolic_dim) and shape inference ran, so the
// shape rules carried the symbols through every op that copies a dim; simplification
// may have run too (it works on symbolic shapes: dims < 0 are never folded).
//
// Algorithm: a union-find over the symbols. Every node whose semantics equate dims
// adds equalities: the aligned dims of the inputs of a multi-input elementwise op
// (broadcasting: dims of 1 excepted), the contracted dims and batch dims of MatMul
// and Gemm, and the non-axis dims of Concat. Two symbols found equal become one dim;
// a symbol equated with a static dim > 1 is forced to that value (the node that
// forces it is named; two different forced values are a conflict no input can meet).
// Then every graph input dim is reported by its class, in input order.
//
// Example: ids [batch,seq] and mask [b,s] added together, plus a [1,16] position
// table: "graph inputs have symbolic dims: ids [batch,seq], mask [b,s]; after shape
// propagation they are 2 dims: batch (= b; ids dim 0, mask dim 0) and seq (= s; ids
// dim 1, mask dim 1; node "add_pos" (Add) requires 16); give them with --input-shape
// ids=1,16 --input-shape mask=1,16".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/core/graph.h"

namespace stitch::ir {

// One class of equal symbolic dims.
struct SymbolicDim {
  std::vector<std::string> names;  // the symbols found equal, first-seen order
  std::vector<std::string> uses;   // the graph-input dims it sizes: "ids dim 1"
  std::optional<int64_t> value;    // the value a node forces, if any
  std::string forced_by;           // `node "add" (Add)`
  std::string conflict;            // non-empty when nodes force different values
};

// The classes of the symbols the graph inputs use, in the order of their first use.
std::vector<SymbolicDim> symbolic_dims(const Graph& graph);

// The error message for a graph with symbolic input dims (see the example above):
// inputs with their dims, the classes, and an --input-shape flag per input that uses
// the forced values (free dims: 1 for a leading dim, else 128).
std::string explain_symbolic_dims(const Graph& graph);

}  // namespace stitch::ir
