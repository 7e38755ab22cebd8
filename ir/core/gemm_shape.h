// The m, n, k and batch of a MatMul or Gemm: the one place they are computed (the
// cost model, the tiled-GEMM schedule and the cuBLASLt call all ask here).
//
// In row-major terms the node computes
//   out[batch dims..., m, n] = sum over k of op(A)[..., m, k] * op(B)[..., k, n]
// where op() applies Gemm's transA/transB. MatMul follows numpy: a rank-1 A is
// [1, K] (m = 1), a rank-1 B is [K, 1] (n = 1), and the batch dims (all but the last
// two) broadcast right-aligned. Gemm has rank-2 operands and batch 1.
//
// Example: MatMul(f32[8,1,64,32], f32[4,32,16]) -> f32[8,4,64,16] has m = 64, k = 32,
// n = 16, batch_dims [8,4], batch 32, left_batch_dims [8,1], right_batch_dims [4].
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/core/graph.h"

namespace stitch::ir {

struct GemmShape {
  int64_t batch = 1;  // the product of batch_dims
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  bool transpose_left = false;            // Gemm's transA: A is stored [k][m]
  bool transpose_right = false;           // Gemm's transB: B is stored [n][k]
  std::vector<int64_t> batch_dims;        // the output's, broadcast from both operands
  std::vector<int64_t> left_batch_dims;   // A's own (its dims before the last two)
  std::vector<int64_t> right_batch_dims;  // B's own

  int64_t flops() const { return 2 * m * n * k * batch; }  // a multiply-add is 2
};

// The shape of `node`, a MatMul or Gemm of `graph`; nullopt, with why in *why_not when
// given, when it is another op, lacks an operand, has an operand or output without a
// static shape, an operand of too small a rank (Gemm: not 2; MatMul: a scalar), inner
// dims that differ, batch dims that do not broadcast, or an output that is not
// batch x m x n elements.
std::optional<GemmShape> gemm_shape(const Graph& graph, const Node& node,
                                    std::string* why_not = nullptr);

// `shape` as one GEMM of batch x m rows when B is one matrix (its batch dims multiply
// to 1) and A is not transposed: A's batches are then consecutive rows of one
// row-major [batch * m][k] matrix, and the output's of one [batch * m][n] one, so a
// library runs one large GEMM instead of a batch of small ones. nullopt when B is
// batched or A transposed. [8, 64, 32] x [32, 16] -> batch 1, m 512, k 32, n 16.
std::optional<GemmShape> batches_folded_into_rows(const GemmShape& shape);

}  // namespace stitch::ir
