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
// The attributes:
//   library  = "cuBLASLt" | "cuDNN"                           (string)
//   epilogue = ["bias", "residual add", "clip(0,6)"] in order  (strings)
// An op's name is its kind, and for an op with parameters the parameters in
// parentheses, each the shortest text that reads back as the same float
// ("clip(0,6)", "hardsigmoid(0.2,0.5)"). A model written before an op had parameters
// has only the first three names, which read back unchanged.
//
// The ops (v: the value so far; c: v's channel axis, Conv's dim 1, a GEMM's last dim):
//   bias          Add(v, b), b one value per channel (dims 1 except c)
//   residual add  Add(v, z), z of v's exact dims
//   scale         Mul(v, s), s one value per channel
//   relu          Relu(v)
//   clip(lo,hi)   Clip(v, lo, hi), lo and hi constants (a missing one is -/+ the
//                 largest float)
//   sigmoid, tanh Sigmoid(v), Tanh(v)
//   swish         Mul(v, Sigmoid(v)) (SiLU): two nodes, v read by both
//   hardsigmoid(alpha,beta)  HardSigmoid(v) = max(0, min(1, alpha * v + beta))
//   hardswish     HardSwish(v) = v * max(0, min(1, v / 6 + 1 / 2)): one node, or the
//                 five the decompose pass opens it into (opened_hard_swish)
//   gelu          GELU(v) = v / 2 * (1 + erf(v / sqrt(2))), the exact (erf) form: the
//                 five nodes PyTorch exports or the decompose pass opens Gelu into
//                 (opened_gelu)
//   gelu_tanh     v / 2 * (1 + tanh(sqrt(2 / pi) * (v + 0.044715 v^3))), the tanh
//                 approximation (GPT-2's): the eight or nine nodes PyTorch exports or
//                 the decompose pass opens Gelu(approximate="tanh") into
//                 (opened_gelu_tanh)
// cuBLASLt applies only the legacy form (legacy_form(): bias, residual add, relu, at
// most one each, relu last), and so do cuDNN's cudnnConvolutionBiasActivationForward
// and the legacy calls; a cuDNN Conv with any other chain is one cuDNN graph
// (runtime_stub/cuda/cudnn_graph.h).
//
// The body of a library call is the call L, then the nodes of each op after its own
// operand, in order: L's own bias or C (Conv's input 2, Gemm's C) is the first op
// when L has one; each later op reads the previous op's output (swish: its Sigmoid and
// its Mul both do).
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
enum class EpilogueOpKind {
  kBias,
  kResidualAdd,
  kScale,
  kRelu,
  kClip,
  kSigmoid,
  kTanh,
  kSwish,
  kHardSigmoid,
  kHardSwish,
  kGelu,
  kGeluTanh,
};

// One op of an epilogue: its kind and, for clip and hardsigmoid, its two parameters.
struct EpilogueOp {
  EpilogueOpKind kind = EpilogueOpKind::kBias;
  float a = 0.0f;  // clip: the lower bound; hardsigmoid: alpha
  float b = 0.0f;  // clip: the upper bound; hardsigmoid: beta

  // The ops without parameters, as values (EpilogueOp::kBias == EpilogueOp{kBias}).
  static const EpilogueOp kBias, kResidualAdd, kScale, kRelu, kSigmoid, kTanh, kSwish, kHardSwish,
      kGelu, kGeluTanh;
  static EpilogueOp clip(float lower, float upper) { return {EpilogueOpKind::kClip, lower, upper}; }
  static EpilogueOp hard_sigmoid(float alpha, float beta) {
    return {EpilogueOpKind::kHardSigmoid, alpha, beta};
  }

  // bias, residual add and scale read a tensor besides the value so far.
  bool reads_operand() const;
  bool operator==(const EpilogueOp& other) const = default;
};

inline constexpr EpilogueOp EpilogueOp::kBias{EpilogueOpKind::kBias};
inline constexpr EpilogueOp EpilogueOp::kResidualAdd{EpilogueOpKind::kResidualAdd};
inline constexpr EpilogueOp EpilogueOp::kScale{EpilogueOpKind::kScale};
inline constexpr EpilogueOp EpilogueOp::kRelu{EpilogueOpKind::kRelu};
inline constexpr EpilogueOp EpilogueOp::kSigmoid{EpilogueOpKind::kSigmoid};
inline constexpr EpilogueOp EpilogueOp::kTanh{EpilogueOpKind::kTanh};
inline constexpr EpilogueOp EpilogueOp::kSwish{EpilogueOpKind::kSwish};
inline constexpr EpilogueOp EpilogueOp::kHardSwish{EpilogueOpKind::kHardSwish};
inline constexpr EpilogueOp EpilogueOp::kGelu{EpilogueOpKind::kGelu};
inline constexpr EpilogueOp EpilogueOp::kGeluTanh{EpilogueOpKind::kGeluTanh};

std::string_view library_name(Library library);  // "cuBLASLt", "cuDNN"
std::string epilogue_op_name(EpilogueOp op);     // "bias", "clip(0,6)", ... (see above)
// The op `name` names, or nullopt.
std::optional<EpilogueOp> parse_epilogue_op(std::string_view name);

struct LibraryEpilogue {
  Library library = Library::kCublasLt;
  std::vector<EpilogueOp> ops;  // in the order the call applies them

  std::vector<std::string> op_names() const;  // epilogue_op_name of each op
  // Only bias, residual add and relu, at most one each, relu last: what cuBLASLt's
  // epilogues and cudnnConvolutionBiasActivationForward apply.
  bool legacy_form() const;
  bool operator==(const LibraryEpilogue& other) const = default;
};

// The fused node's attributes "library" and "epilogue", in that order.
std::vector<ir::Attribute> epilogue_attributes(const LibraryEpilogue& epilogue);

// Reads them back from a fused node; an error naming the node when either is
// missing, of another kind, or names a library or op this file does not know.
Result<LibraryEpilogue> read_epilogue_attributes(const ir::Node& node);

// The value of `value` when it is an initializer of one float element (its bytes all
// there), else nullopt: Clip's bounds, the opened HardSwish's scalars.
std::optional<float> scalar_constant(const ir::Graph& graph, ir::ValueId value);

// HardSwish(v) as ir/passes/decompose_compound_ops.cc opens it, in v's dtype:
//   %s = Mul(v, k1); %a = Add(%s, k2); %n = Min(%a, k3); %m = Max(%n, k4);
//   %y = Mul(v, %m)   (each Mul's operands in either order)
// with v read by the two Muls only and every other intermediate by the next node only
// (none a graph output). The five nodes in that order, or nullopt. `constants`: the
// scalars k1..k4 are initializers holding 1/6, 1/2, 1 and 0 (within 1e-3, so a
// float16 1/6 counts); without it (a library call's body, whose scalars are inputs)
// only the structure is checked.
std::optional<std::vector<ir::NodeId>> opened_hard_swish(const ir::Graph& graph, ir::ValueId v,
                                                         bool constants);

// GELU(v) (erf) as opened into five nodes, in v's dtype, by the decompose pass or by
// PyTorch's export (each Mul's operands in either order):
//   %s = Mul(v, k1) or Div(v, k1'); %e = Erf(%s); %p = Add(%e, k2);
//   then %h = Mul(v, k3); %y = Mul(%h, %p)    (the decompose pass: halved first)
//   or   %m = Mul(v, %p); %y = Mul(%m, k3)    (PyTorch)
// with v read by %s and the first Mul of the last two only and every other
// intermediate by the next node only (none a graph output). The five nodes in that
// order (a topological one), or nullopt. `constants`: k1 is 1/sqrt(2) (k1' sqrt(2)),
// k2 1 and k3 1/2, each within 1e-3 (float16 counts); without it only the structure.
std::optional<std::vector<ir::NodeId>> opened_gelu(const ir::Graph& graph, ir::ValueId v,
                                                   bool constants);

// GELU's tanh approximation as opened by PyTorch's export or the decompose pass, in
// v's dtype (each Mul's and Add's operands in either order):
//   %c = Pow(v, k0)  or  %q = Mul(v, v); %c = Mul(%q, v);
//   %t = Mul(%c, k1); %u = Add(v, %t); %s = Mul(%u, k2); %e = Tanh(%s);
//   %p = Add(%e, k3); then the erf form's tail (Mul(v, k4), Mul(%h, %p), or
//   Mul(v, %p), Mul(%m, k4))
// with v read by the cube's nodes, %u and the tail's first Mul only and every other
// intermediate by the next node only (none a graph output). The eight or nine nodes in
// that order (a topological one), or nullopt. `constants`: k0 is 3, k1 0.044715
// (within 1e-4: float16 rounds it by 2.2e-5), k2 sqrt(2 / pi), k3 1 and k4 1/2 (within
// 1e-3); without it only the structure.
std::optional<std::vector<ir::NodeId>> opened_gelu_tanh(const ir::Graph& graph, ir::ValueId v,
                                                        bool constants);

// The values of a library call's body that each op reads (see the header comment).
struct BoundEpilogue {
  ir::NodeId call = ir::kNoId;     // L, the body's first node
  ir::ValueId output = ir::kNoId;  // what the last op (or L) writes
  // Per op of the epilogue, in order: the tensor a bias, residual add or scale reads;
  // kNoId for the others.
  std::vector<ir::ValueId> operands;
  // The legacy form's view (LibraryEpilogue::legacy_form): its first bias and
  // residual (kNoId: none) and whether it has a relu.
  ir::ValueId bias = ir::kNoId;
  ir::ValueId residual = ir::kNoId;
  float residual_scale = 1.0f;  // Gemm's beta when its own C is the residual
  bool relu = false;
};

// Matches `epilogue` to `body`: the call is the first node in topological order and
// the ops follow as above. nullopt, with why in *why_not, when the body is not that
// chain (a node that is not the next op's node, an op count that differs, an op that
// does not read the previous op's output, a Gemm's C that is not its first op).
std::optional<BoundEpilogue> bind_epilogue(const ir::Graph& body, const LibraryEpilogue& epilogue,
                                           std::string* why_not);

}  // namespace stitch::fusion
