// --precision bf16 | fp16 (docs/precision.md): a float32 model rewritten to store its
// activations and weights in the reduced type, the way ONNX Runtime's float16
// converter does (node by node, Casts where a float32 node meets a reduced one, graph
// inputs and outputs kept unless reduced_io), with stitchopt's keep-in-float32 policy.
//
// Each live node is converted (its float data inputs read in the reduced type, its
// float outputs stored in it) when its op has a conversion rule (the table in
// reduced_precision.cc: GEMMs and convolutions, elementwise arithmetic, activations,
// data movement, pooling) and the policy keeps nothing of it in float32:
//   - reductions (ReduceSum, ReduceMean, ReduceMax, ...) and anything without a rule
//     (Softmax or LayerNormalization left unopened, comparisons, unknown ops) stay
//     float32: statistics and ops whose meaning rounding can change;
//   - under fp16, Exp, Log, Pow, Erf, Sqrt, Reciprocal and Div stay float32: their
//     results leave float16's 6.1e-5 .. 65504 span easily (bf16 has float32's range);
//   - a node whose output's max |x| on the calibration inputs exceeds a quarter of the
//     reduced type's largest value (`max_abs`, measured by the caller; float16: 65504 / 4)
//     stays float32, and so does one reading a weight with a value beyond the type's
//     largest (never clamped: a causal mask's float32 lowest would become -inf in
//     bfloat16, and 0 x -inf is NaN);
//   - so does a node whose output's max |x| is nonzero but below four times the reduced
//     type's smallest normal value (float16: 2.4e-4): stored, every element would be
//     subnormal or flushed, with fewer significant bits than the type has (an untrained
//     MobileNetV2's activations shrink tenfold per block and reach 1e-8; in float16 its
//     logits were all zero).
// An attention core (ir/core/attention.h) is converted whole, its softmax included: the
// attention kernel computes the scores, their max, sum and probabilities in float32
// registers and never stores them, and a core fuses only in one type. The range rules
// still apply to its values (a float32-lowest mask keeps its node, and the core then
// runs unfused, in two types).
// A converted node's float32 inputs are read through one Cast per value (fused into
// the kernel that reads it), or, for a weight, through a converted copy of the
// weight; a float32 node's reduced inputs are read through a Cast back to float32.
// Generated kernels compute every op in float32 registers whatever the storage
// (docs/codegen.md), so a Cast costs a conversion where it fuses.
//
// Example: MatMul -> Add(bias) -> Relu over float32 x: x is cast to bf16 once, the
// weights become bf16 initializers, the MatMul, Add and Relu store bf16, and a Cast
// to float32 writes the graph output under its own name.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/core/graph.h"
#include "ir/core/status.h"

namespace stitch::ir {

struct ReducedPrecisionOptions {
  DType reduced = DType::kBFloat16;  // kBFloat16 or kFloat16
  // Per value: max |x| on the calibration inputs (the range rule); a value absent is
  // taken as in range.
  std::map<ValueId, double> max_abs;
  // --io-precision reduced: float32 graph inputs and outputs take the reduced type too
  // (a graph input out of the type's range by max_abs keeps float32, with its reason);
  // false: they keep their types and names.
  bool reduced_io = false;
};

struct KeptFloat32Value {
  std::string value;  // the node output kept float32
  std::string rule;   // why (the policy's words)
};

struct ReducedPrecisionResult {
  int64_t converted_nodes = 0;
  int64_t converted_weights = 0;  // initializers copied in the reduced type
  int64_t casts = 0;              // Cast nodes added
  int64_t kept_nodes = 0;         // nodes with float32 outputs left float32
  int64_t reduced_io = 0;         // graph inputs and outputs given the reduced type
  // The kept nodes' outputs with their rule, in topological order (every one; the
  // report bounds what it prints).
  std::vector<KeptFloat32Value> kept;
};

// Rewrites `model` (float32 values only; other dtypes are left alone). Precondition:
// ir::verify(model) holds and shapes are static; the result verifies too. Errors:
// none expected (an internal error if the rewrite breaks an invariant).
Result<ReducedPrecisionResult> reduce_precision(Model& model,
                                                const ReducedPrecisionOptions& options);

// The largest finite value of `reduced` (float16 65504, bfloat16 3.3895e38), and the
// range rule's limit: a quarter of it (headroom for inputs larger than the
// calibration's).
double largest_finite(DType reduced);
inline double range_limit(DType reduced) { return largest_finite(reduced) / 4; }

// The smallest normal value of `reduced` (float16 6.1035e-5, bfloat16 1.1755e-38), and
// the underflow rule's limit: four times it (the same headroom, for smaller inputs).
double smallest_normal(DType reduced);
inline double underflow_limit(DType reduced) { return smallest_normal(reduced) * 4; }

}  // namespace stitch::ir
