// Opens LayerNormalization, Softmax, LogSoftmax, Gelu, BatchNormalization,
// Instance/GroupNormalization, HardSigmoid, HardSwish, Softplus, variadic Sum/Mean, Gemm,
// GlobalAveragePool and a Conv over a single pixel into primitive ops.
//
// Objective (Apollo 3.2, "opening compound ops"): a compound op is one opaque
// kernel to the fusion planner, which can then neither fuse its producer's
// elementwise work into its reduction nor share its reductions with neighbours.
// Opened into Reduce*/elementwise primitives, the same math becomes ordinary
// fusible ops. Each decomposition is numerically equal to the op
// (tests/ir/passes/decompose_compound_ops_test.cc: float32 within 1e-5 relative
// error of the reference interpreter, float16 within 1e-2).
//
// Preconditions: a verified graph with inferred types. A node is opened only when
// its data input has a float dtype and (for the normalizations and softmaxes) a
// known rank; otherwise it stays as it is.
//
// Algorithm, per node in id order (nodes created here are primitive and not
// revisited):
//  1. Check the op's preconditions (below); if one fails, leave the node.
//  2. Remove the node; its output values stay, without producer.
//  3. Build the primitive nodes, named "<node name>/<role>", origin inherited from
//     the node, opset = the model's default opset, in that opset's form (Reduce*
//     axes as an attribute before 18, ReduceSum's from 13, as an i64 initializer
//     input "<node name>/<role>_axes"). Constants (epsilon, 0.5, sqrt(2/pi), ...)
//     are new scalar initializers "<node name>/<role>" of the input's dtype. The
//     last node produces the original output value, so its id, name and type stay
//     (graph outputs keep their names). Output types of the other nodes come from
//     the registry's shape rules.
//
// The decompositions (x the data input, mean/var over the normalized axes with
// keepdims=1, n = (x - mean) * Reciprocal(Sqrt(var + eps))). "Widened" is float32
// for a float16 or bfloat16 op and the op's own dtype otherwise: where the primitive
// form, rounded to 16 bits after every step, would overflow or drift from the op,
// the decomposition Casts its inputs to the widened type ("<node>/input_cast",
// "<node>/cast_<i>", ...), computes there and Casts the result back
// ("<node>/output_cast"), as the reference interpreter (double, one rounding) and
// ONNX Runtime (float) compute these ops. float32 and float64 graphs get no Casts.
//  - LayerNormalization(x, scale, bias?) axis a: axes [a, rank); y = n*scale (+bias).
//    n in the stash type widened to float32, or in float64 for a float64 x (x Cast
//    to it first where its dtype differs); scale and bias in the widened type of x
//    (n, scale and bias Cast where they differ). The optional Mean and InvStdDev
//    outputs are the ReduceMean and Reciprocal nodes' outputs, Cast to the stash
//    type where that differs.
//  - Softmax / LogSoftmax: m = ReduceMax(x), s = x - m, e = Exp(s),
//    t = ReduceSum(e); y = e / t, or y = s - Log(t). Axes: {axis} from opset 13;
//    before 13 the input is coerced to 2D at axis, i.e. axes [axis, rank). In x's
//    dtype: every e is at most 1 and the ReduceSum rounds once.
//  - Gelu (20): none: (x * 0.5) * (1 + Erf(x * 1/sqrt2));
//    tanh: (x * 0.5) * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 * x*x*x))). Halving x
//    first keeps the product finite wherever Gelu is (x * 2 overflows float16).
//  - HardSigmoid: Max(Min(alpha*x + beta, 1), 0) in the widened type (the model's
//    alpha and beta need not fit float16) (needs opset >= 8: Min/Max broadcast).
//    HardSwish: x * HardSigmoid(x) with alpha 1/6, beta 0.5, in x's dtype.
//  - Softplus: Relu(x) + Log(Exp(-Abs(x)) + 1), which never overflows (Log(Exp(x) + 1)
//    is inf from x = 89 in float32).
//  - Sum with >= 2 inputs: a chain of Add; Mean: the chain, then Div by the count.
//    A Sum of more than two inputs and every Mean accumulate in the widened type.
//  - BatchNormalization (inference: training_mode 0, spatial 1, only output Y), in
//    the widened type: with scale, B, mean, var all initializers: y = x*a + b,
//    a = scale/sqrt(var+eps) and b = B - mean*a folded now into [C,1,...,1]
//    initializers "<node>/multiplier" and "<node>/offset"; otherwise the same
//    formula in nodes on the [C] vectors, then Reshape to [C,1,...,1].
//  - InstanceNormalization: n over axes [2, rank), then * scale + bias per channel,
//    in the widened type.
//  - GroupNormalization: Reshape x to [N, G, K] (K = C/G * spatial, -1 when a spatial
//    dim is unknown), n over axis 2; opset 18 (scale and bias per group, all in the
//    widened type): * scale[G,1] + bias[G,1], then Reshape back; opset 21 (per
//    channel, n in the type LayerNormalization's is computed in): Reshape back,
//    then * scale + bias per channel in the widened type. The shape back is
//    [0, C, spatial...] (0 copies N), so C and all but one spatial dim must be known
//    (all of them when N is 0).
//  - GlobalAveragePool(x), rank >= 3: ReduceMean over [2, rank), keepdims=1 (a
//    row reduction the planner fuses with its neighbours, e.g. Flatten and the
//    classifier's GEMM, where the pool would be an Opaque kernel of its own).
//  - Conv(x, W, B?) over a single pixel: static x with every spatial dim 1, W an
//    initializer only this Conv reads with every kernel dim 1, no padding, group 1
//    (a squeeze-excitation block's 1x1 convolutions after its global pool):
//    Reshape(x, [N, C]) -> MatMul(., W^T as a [C, M] initializer) (-> Add(., B))
//    -> Reshape([N, M, 1, ...]). A fine-grained GEMM the planner fuses with the
//    pool and the gate around it, where cuDNN would cost a launch of its own.
//  - Gemm(A, B, C?): [Transpose(A)] MatMul [Transpose(B)], * alpha when != 1,
//    + C (* beta when != 1). A transposed B that is an initializer only this Gemm
//    reads becomes a transposed initializer instead of a Transpose node. With C,
//    Gemm is always opened: the bias Add becomes a fusible epilogue. Without C
//    nothing fusible is exposed, so it is opened only when it is a plain MatMul:
//    transA = 0, alpha = 1, and transB = 0 or B foldable as above.
//
// Before:
//   %y: f32[2,8] = Softmax(%x) {name="sm", axis=1}
//   return %y
// After (opset 13..17):
//   %"sm/max": f32[2,1] = ReduceMax(%x) {name="sm/max", axes=[1], keepdims=1, origin=["sm"]}
//   %"sm/shifted": f32[2,8] = Sub(%x, %"sm/max") {name="sm/shifted", origin=["sm"]}
//   %"sm/exp": f32[2,8] = Exp(%"sm/shifted") {name="sm/exp", origin=["sm"]}
//   %"sm/sum": f32[2,1] = ReduceSum(%"sm/exp", %"sm/sum_axes") {name="sm/sum", keepdims=1, ...}
//   %y: f32[2,8] = Div(%"sm/exp", %"sm/sum") {name="sm/div", origin=["sm"]}
//   return %y
//
// Must not fire: an input of unknown rank (Softmax/normalizations) or non-float
// dtype; a LayerNormalization axis out of range or a stash_type that names no float
// type; BatchNormalization in training mode or with its statistics outputs;
// GroupNormalization with unknown C, more than one unknown spatial dim, or one next
// to N = 0; Gemm without C that is not a plain MatMul (transA, alpha != 1, or
// transB on a non-constant B); Sum/Mean of one input (that is no-op elimination's
// Identity); GlobalAveragePool of rank < 3; a Conv with a spatial dim or kernel dim
// other than 1, padding, group > 1, a non-constant or shared W.
#pragma once

#include "ir/passes/pass.h"

namespace stitch::ir {

Result<bool> decompose_compound_ops(Graph& graph, PassContext& context);

}  // namespace stitch::ir
