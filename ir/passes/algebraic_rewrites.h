// x*1, x+0, x/1, x-0, -(-x), Reshape chains, Transpose chains merged, broadcast constant Mul/Add
// chains folded where exact.
//
// Objective: remove arithmetic that does nothing and merge chains of view ops,
// transposes and constant multiplications, so later passes and the fusion planner
// see fewer, simpler ops. Every rewrite is exact: the rewritten graph computes
// bit-identical values (see rule 5 for the one documented range assumption).
//
// Preconditions: a verified graph. Constants are initializers that are not also
// graph inputs (a graph input with a default can be overridden at run time) and
// whose data is in memory (not external).
//
// Algorithm: one sweep over the nodes in topological order (so a chain collapses
// from its head: by the time the outer op is visited the inner one is already
// rewritten); each node is tried against the rules below, in place. Nodes and
// initializers left without readers are removed; the rewritten node keeps its
// output value (so graph outputs keep their names) and inherits the origin of the
// nodes it absorbs.
//  1. Neutral elements: Mul(x, 1), Mul(1, x), Add(x, 0), Add(0, x), Sub(x, 0),
//     Div(x, 1) with a constant of x's dtype whose every element is the neutral
//     value and whose broadcast against x keeps x's shape (each trailing dim of the
//     constant is 1 or x's known dim), and the output type equals x's type. The
//     readers of the output read x instead. -0 counts as 0 (x + 0 turns x = -0
//     into +0, which compares equal).
//  2. Neg(Neg(x)) -> x.
//  3. A view op (Reshape, Flatten, Squeeze, Unsqueeze) reading another view op ->
//     one Reshape of the inner op's input to the outer op's static output shape
//     (a new i64 initializer "<output>/shape"). Needs a fully static output shape
//     without zero dims (a 0 in Reshape's shape would copy an input dim).
//  4. Transpose(Transpose(x, p1), p2) -> Transpose(x, p) with p[i] = p1[p2[i]];
//     when p is the identity, the readers read x.
//  5. Mul(Mul(x, a), b) -> Mul(x, a*b) and Add(Add(x, a), b) -> Add(x, a+b), a and
//     b constants of the output dtype, x not constant, when the broadcast of a and
//     b is a's or b's shape (the folded constant is never bigger, and the output
//     shape is unchanged since broadcasting is associative), the intermediate has
//     no other reader, and the fold is exact:
//       - integer dtypes: always (wrapping arithmetic is a ring: (x*a)*b == x*(a*b)
//         modulo 2^bits, same for +);
//       - float Mul: every element of a, or every element of b, is ±2^k in the
//         dtype's normal range, and every product a*b is exactly representable
//         and normal (or zero from a zero operand). Scaling by a power of two only
//         moves the exponent, so both sides round x*a*b once. This assumes x*a
//         stays in the normal range (no overflow or gradual underflow), as any
//         IEEE power-of-two scaling does;
//       - float Add: never (float addition is not associative for any nonzero
//         constants; zero constants are rule 1's).
//     The folded constant is a new initializer "<node name>/folded".
//
// Keeping graph output names: when a rule would make readers of a graph output Y
// read x instead, x's producer is rewired to produce Y (x's other readers read Y);
// where x has no producer (a graph input or an initializer) or is itself a graph
// output, the node becomes Identity(x) -> Y.
//
// Before:
//   %t: f32[2,8] = Mul(%x, %two)       // two = 2.0
//   %u: f32[2,8] = Mul(%t, %three)     // three = 3.0
//   %r: f32[16] = Reshape(%u, %s1)
//   %v: f32[4,4] = Reshape(%r, %s2)
//   %w: f32[4,4] = Mul(%v, %one)       // one = dense<f32[1]>[1]
//   return %w
// After:
//   %u: f32[2,8] = Mul(%x, %"u_mul/folded")   // 6.0
//   %w: f32[4,4] = Reshape(%u, %"v/shape")    // [4, 4]
//   return %w
//
// Must not fire: a constant that broadcasts x to a bigger shape or another dtype
// (x * ones[2,8] with x: f32[8]); an intermediate value that is a graph output; a
// float Mul chain where neither constant is a power of two (x*3*5); a float Add
// chain; a view chain whose output shape is not static.
#pragma once

#include "ir/passes/pass.h"

namespace stitch::ir {

Result<bool> rewrite_algebraic(Graph& graph, PassContext& context);

}  // namespace stitch::ir
