// A library call's epilogue as the planner decided it: which library runs the call
// and what the call applies after the product, in order. fusion/epilogue.cc decides
// it; this file is the one place it is written to and read from a fused node's
// attributes, and the one place its ops are matched to the call's function body.
//
// Where it goes: fusion/epilogue.cc (decided) -> Pattern -> PlannedGroup (carried) ->
// driver/compile.cc (emit::FusedNodeAttributes, whose to_attributes writes
// epilogue_attributes on the "stitchopt" node of model.fused.onnx and whose from_node
// reads them back with read_epilogue_attributes) -> runtime_stub/program.cc
// (Step::epilogue) -> runtime_stub/cuda/ (bind_epilogue: the values each op reads).
//
// The attributes, unchanged since the first fused models were written:
//   library  = "cuBLASLt" | "cuDNN"                       (string)
//   epilogue = ["bias", "residual add", "relu"] in order   (strings)
//
// The body of a library call is the call L, then one node per op it applies after its
// own operand: L's own bias or C (Conv's input 2, Gemm's C) is the first op when L has
// one; each later op is an Add (bias or residual add) or a final Relu reading the
// previous node's output.
//   %c = Conv(%x, %w, %b); %s = Add(%c, %skip); %y = Relu(%s)
//   with ["bias", "residual add", "relu"]: bias %b, residual %skip, relu, output %y.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/core/attribute.h"
#include "ir/core/graph.h"
#include "ir/core/status.h"

namespace stitch::fusion {

enum class Library { kCublasLt, kCudnn };
enum class EpilogueOp { kBias, kResidualAdd, kRelu };

std::string_view library_name(Library library);    // "cuBLASLt", "cuDNN"
std::string_view epilogue_op_name(EpilogueOp op);  // "bias", "residual add", "relu"

struct LibraryEpilogue {
  Library library = Library::kCublasLt;
  std::vector<EpilogueOp> ops;  // in the order the call applies them

  std::vector<std::string> op_names() const;  // epilogue_op_name of each op
  bool operator==(const LibraryEpilogue& other) const = default;
};

// The fused node's attributes "library" and "epilogue", in that order.
std::vector<ir::Attribute> epilogue_attributes(const LibraryEpilogue& epilogue);

// Reads them back from a fused node; an error naming the node when either is
// missing, of another kind, or names a library or op this file does not know.
Result<LibraryEpilogue> read_epilogue_attributes(const ir::Node& node);

// The values of a library call's body that each op reads (see the header comment).
struct BoundEpilogue {
  ir::NodeId call = ir::kNoId;       // L, the body's first node
  ir::ValueId output = ir::kNoId;    // what the last op (or L) writes
  ir::ValueId bias = ir::kNoId;      // kNoId: no bias
  ir::ValueId residual = ir::kNoId;  // kNoId: no residual
  float residual_scale = 1.0f;       // Gemm's beta when its own C is the residual
  bool relu = false;
};

// Matches `epilogue` to `body`: the call is the first node in topological order and
// the ops follow as above. nullopt, with why in *why_not, when the body is not that
// chain (a node that is not the next op's Add or Relu, an op count that differs, an
// Add that does not read the previous node's output exactly once, a second bias or
// residual, a node after the Relu).
std::optional<BoundEpilogue> bind_epilogue(const ir::Graph& body, const LibraryEpilogue& epilogue,
                                           std::string* why_not);

}  // namespace stitch::fusion
