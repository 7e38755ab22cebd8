// C text for the generated CUDA: literals, storage and compute types, the
// conversions between them, and flat-index arithmetic (strided and broadcast reads).
// Every piece of generated code that spells a number, a type or an index goes through
// these helpers, so the kernel writer, the op lowerings, the reduction and GEMM
// emitters agree on one spelling (docs/codegen.md). Model strings reach the text only
// through comment_name (escaped, support/escape.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/core/graph.h"
#include "ir/core/status.h"

namespace stitch::emit {

std::string num(int64_t value);
// A float constant (attributes, fill values) as C: %.9g round-trips every float;
// infinities and NaN, which have no literal, by their bits.
std::string float_literal(double value);
// A double constant as C: %.17g round-trips every double (infinities and NaN as
// float_literal, which converts exactly).
std::string double_literal(double value);
std::vector<int64_t> row_major_strides(const std::vector<int64_t>& dims);
// The body of the index function of a value without elements: no thread ever calls it.
std::string empty_value_body(const std::string& compute);
// Element 0 of `tensor` as a C expression of its compute type `compute`, valid in every
// compile mode (infinities and NaN by their bits).
std::string element_literal(const ir::Tensor& tensor, const std::string& compute);
// Whether the kernel text holds `value`'s one element as a literal instead of reading
// it through a pointer (issue 16, lean code): a numeric constant of one element that
// is not a graph input (the runtime may override those). Such a value is part of the
// kernel's canonical text (canonical_group.h), so groups that differ in it never
// share a kernel.
bool is_baked_scalar(const ir::Value& value);
inline int64_t product(const std::vector<int64_t>& dims) { return ir::dims_product(dims); }
using ir::dims_text;  // "[2,3]"

// The flat index of an operand read through a mixed-radix decomposition of `var` over
// `dims` (innermost last), each coordinate scaled by `strides` (0: broadcast).
// Adjacent dims that stay contiguous are merged, so a plain copy reads `var`.
std::string strided_index(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                          const std::string& var);

// Where a Transpose (`perm`, from `in` to `out` dims) puts the element at flat index
// `var` of its input, over the leading `axes` axes of both (all of them: the element's
// flat output index; a row's leading axes: the output row of a moved row).
std::string transposed_index(const std::vector<int64_t>& in, const std::vector<int64_t>& out,
                             const std::vector<int64_t>& perm, size_t axes, const std::string& var);
// Numpy broadcasting: the index of an operand of shape `in` read at the flat index
// `var` of the output shape `out`.
std::string broadcast_index(const std::vector<int64_t>& out, const std::vector<int64_t>& in,
                            const std::string& var);

// The C type a tensor of `dtype` is stored as; an error for dtypes CUDA cannot hold.
Result<std::string> storage_type(ir::DType dtype);
bool is_half_like(ir::DType dtype);  // float16, bfloat16
// The type values are computed in: float for float16/bfloat16, the storage otherwise.
std::string compute_type(ir::DType dtype);
std::string load(ir::DType dtype, const std::string& element);  // storage -> compute
std::string store(ir::DType dtype, const std::string& value);   // compute -> storage
// A float value rounded to `dtype` and back: ONNX computes every float16/bfloat16
// result in its type, so a fused kernel rounds each one before anything reads it (as
// memory would), the way the reference interpreter does; other types are unchanged.
std::string rounded(ir::DType dtype, const std::string& value);
// Conversion of a compute-type value `x` from `from` to `to` (ONNX Cast as the
// reference interpreter does it: float -> integer truncates toward zero through
// int64, out-of-range and NaN give INT64_MIN converted; anything -> bool is != 0).
std::string convert(ir::DType from, ir::DType to, const std::string& x);

// A node as the generated comments show it: "name" (OpType), both escaped
// (support/escape.h): model strings never reach the source raw.
std::string comment_name(const ir::Node& node);
// The output slot of `node` that produces `value`.
size_t output_slot(const ir::Node& node, ir::ValueId value);
// The values of the constant input `slot` of `node`; `present` says whether it is one.
std::vector<int64_t> constant_ints(const ir::Graph& graph, const ir::Node& node, size_t slot,
                                   bool* present);

}  // namespace stitch::emit
