// A library call's epilogue as the compile recorded it: which library runs the call
// and what the call applies after the product, in order. A plain record of the
// artifact (artifact/README.md): fusion/epilogue.cc decides it, driver/compile.cc
// writes it on the fused node of model.fused.onnx (artifact/fused_node_attributes.h),
// runtime_stub/program.cc reads it back onto the library step (Step::epilogue) and
// runtime_stub/cuda/ runs it. This file is the one place it is written to and read
// from a fused node's attributes; matching its ops to a call's function body
// (fusion::bind_epilogue) stays with the matchers fusion decides with.
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
//   swish         Mul(v, Sigmoid(v)) (SiLU)
//   hardsigmoid(alpha,beta)  HardSigmoid(v) = max(0, min(1, alpha * v + beta))
//   hardswish     HardSwish(v) = v * max(0, min(1, v / 6 + 1 / 2))
//   gelu          GELU(v) = v / 2 * (1 + erf(v / sqrt(2))), the exact (erf) form
//   gelu_tanh     v / 2 * (1 + tanh(sqrt(2 / pi) * (v + 0.044715 v^3))), the tanh
//                 approximation (GPT-2's)
// cuBLASLt applies only the legacy form (legacy_form(): bias, residual add, relu, at
// most one each, relu last), and so do cuDNN's cudnnConvolutionBiasActivationForward
// and the legacy calls; a cuDNN Conv with any other chain is one cuDNN graph
// (runtime_stub/cuda/cudnn_graph.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/core/attribute.h"
#include "ir/core/graph.h"
#include "ir/core/status.h"

namespace stitch::artifact {

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

}  // namespace stitch::artifact
