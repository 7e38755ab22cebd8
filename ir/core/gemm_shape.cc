// The m, n, k and batch of a MatMul or Gemm.
#include "ir/core/gemm_shape.h"

#include <algorithm>
#include <cstddef>

#include "ir/core/tensor.h"

namespace stitch::ir {
namespace {

std::optional<GemmShape> refuse(std::string* why_not, std::string why) {
  if (why_not != nullptr) *why_not = std::move(why);
  return std::nullopt;
}

// Gemm: rank-2 operands, transposes applied.
std::optional<GemmShape> gemm_of_gemm(const Node& node, const std::vector<int64_t>& a,
                                      const std::vector<int64_t>& b, std::string* why_not) {
  if (a.size() != 2 || b.size() != 2) return refuse(why_not, "Gemm operands must be rank 2");
  GemmShape shape;
  shape.transpose_left = node.int_attribute("transA", 0) != 0;
  shape.transpose_right = node.int_attribute("transB", 0) != 0;
  shape.m = shape.transpose_left ? a[1] : a[0];
  shape.k = shape.transpose_left ? a[0] : a[1];
  const int64_t k_right = shape.transpose_right ? b[1] : b[0];
  shape.n = shape.transpose_right ? b[0] : b[1];
  if (k_right != shape.k) return refuse(why_not, "Gemm's inner dims differ");
  return shape;
}

// MatMul: numpy's rank-1 rules and broadcast batch dims.
std::optional<GemmShape> gemm_of_matmul(const std::vector<int64_t>& a,
                                        const std::vector<int64_t>& b, std::string* why_not) {
  if (a.empty() || b.empty()) return refuse(why_not, "MatMul of a scalar");
  GemmShape shape;
  shape.m = a.size() >= 2 ? a[a.size() - 2] : 1;
  shape.k = a.back();
  const int64_t k_right = b.size() >= 2 ? b[b.size() - 2] : b[0];
  shape.n = b.size() >= 2 ? b.back() : 1;
  if (k_right != shape.k) return refuse(why_not, "MatMul's inner dims differ");
  shape.left_batch_dims.assign(a.begin(), a.size() > 2 ? a.end() - 2 : a.begin());
  shape.right_batch_dims.assign(b.begin(), b.size() > 2 ? b.end() - 2 : b.begin());
  const std::vector<int64_t>& left = shape.left_batch_dims;
  const std::vector<int64_t>& right = shape.right_batch_dims;
  const size_t rank = std::max(left.size(), right.size());
  shape.batch_dims.assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t l = i < rank - left.size() ? 1 : left[i - (rank - left.size())];
    const int64_t r = i < rank - right.size() ? 1 : right[i - (rank - right.size())];
    if (l != r && l != 1 && r != 1) {
      return refuse(why_not, "MatMul batch dims " + dims_text(left) + " x " + dims_text(right) +
                                 " do not broadcast");
    }
    shape.batch_dims[i] = std::max(l, r);
  }
  shape.batch = dims_product(shape.batch_dims);
  return shape;
}

}  // namespace

std::optional<GemmShape> gemm_shape(const Graph& graph, const Node& node, std::string* why_not) {
  if (!node.domain.empty() || (node.op_type != "MatMul" && node.op_type != "Gemm")) {
    return refuse(why_not, node.display_name() + " is not a MatMul or Gemm");
  }
  if (node.inputs.size() < 2 || node.inputs[0] == kNoId || node.inputs[1] == kNoId ||
      node.outputs.empty() || node.outputs[0] == kNoId) {
    return refuse(why_not, node.display_name() + " lacks an operand or its output");
  }
  const TensorType& left = graph.value(node.inputs[0]).type;
  const TensorType& right = graph.value(node.inputs[1]).type;
  const TensorType& output = graph.value(node.outputs[0]).type;
  if (!left.is_static() || !right.is_static() || !output.is_static()) {
    return refuse(why_not, "operands or output without static shapes");
  }
  std::optional<GemmShape> shape = node.op_type == "Gemm"
                                       ? gemm_of_gemm(node, left.dims, right.dims, why_not)
                                       : gemm_of_matmul(left.dims, right.dims, why_not);
  if (!shape) return std::nullopt;
  if (dims_product(output.dims) != shape->batch * shape->m * shape->n) {
    return refuse(why_not, "the output " + to_string(output) + " is not " +
                               std::to_string(shape->batch) + " x " + std::to_string(shape->m) +
                               " x " + std::to_string(shape->n));
  }
  return shape;
}

std::optional<GemmShape> batches_folded_into_rows(const GemmShape& shape) {
  if (dims_product(shape.right_batch_dims) != 1 || shape.transpose_left) return std::nullopt;
  GemmShape folded = shape;
  folded.m = shape.batch * shape.m;
  folded.batch = 1;
  return folded;
}

}  // namespace stitch::ir
