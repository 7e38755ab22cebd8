// Tensor types and constant tensor data.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/core/dtype.h"

namespace stitch::ir {

// A dimension is >= 0 when known, kUnknownDim when not, or symbolic: a dim of a graph
// input that --input-shape did not fix, named by the model (its dim_param), encoded as
// symbolic_dim(i) <= -2 with i indexing Graph::dim_symbols. Everything that reads dims
// takes any negative dim as unknown; shape rules that copy a dim carry a symbol along,
// which is all symbolic propagation needs (ir/shapes/symbolic_dims.h).
constexpr int64_t kUnknownDim = -1;
constexpr int64_t symbolic_dim(size_t index) { return -2 - static_cast<int64_t>(index); }
constexpr bool is_symbolic_dim(int64_t dim) { return dim <= -2; }
constexpr size_t symbol_index(int64_t dim) { return static_cast<size_t>(-2 - dim); }

// The static type of a Value: element type and (when the rank is known) its dims.
struct TensorType {
  DType dtype = DType::kUndefined;
  bool has_shape = false;     // false: rank unknown
  std::vector<int64_t> dims;  // meaningful only when has_shape

  static TensorType make(DType dtype, std::vector<int64_t> dims) {
    return TensorType{dtype, true, std::move(dims)};
  }
  int64_t rank() const { return has_shape ? static_cast<int64_t>(dims.size()) : -1; }
  // Rank known and every dim known.
  bool is_static() const;
  // Product of dims (INT64_MAX when it overflows); -1 when not static.
  int64_t num_elements() const;
  // Bytes of the whole tensor (INT64_MAX when it overflows); -1 when not static or
  // the dtype has no fixed size.
  int64_t num_bytes() const;
  bool operator==(const TensorType& other) const = default;
};

// "f32[1,128,768]", "f32[?,128]" (unknown dim), "f32[*]" (unknown rank), "i64[]" (scalar).
std::string to_string(const TensorType& type);

// The product of known dims (1 for none, INT64_MAX when it overflows), and the dims as
// "[2,3]" (the emitter's comments and the shape errors write them so).
int64_t dims_product(const std::vector<int64_t>& dims);
std::string dims_text(const std::vector<int64_t>& dims);

// Where an initializer's bytes lived when the model kept them in an external file.
struct ExternalDataInfo {
  std::string location;  // relative to the model's directory
  int64_t offset = 0;
  int64_t length = 0;
  bool operator==(const ExternalDataInfo& other) const = default;
};

// Constant data of an initializer or a Constant node. Numeric data is kept as raw
// little-endian bytes in the layout ONNX's raw_data uses (f16/bf16 as their bits,
// bool as one byte); string tensors keep their elements in `strings`.
struct Tensor {
  DType dtype = DType::kUndefined;
  std::vector<int64_t> dims;
  std::string bytes;
  std::vector<std::string> strings;
  std::optional<ExternalDataInfo> external;  // set when imported from external data

  int64_t num_elements() const;
  TensorType type() const { return TensorType::make(dtype, dims); }

  template <typename T>
  T element(int64_t index) const {
    T value;
    std::memcpy(&value, bytes.data() + index * sizeof(T), sizeof(T));
    return value;
  }
  // Reads element `index` converted to int64 (integer and bool types) or double
  // (float types, f16/bf16 decoded). Precondition: numeric dtype, index in range.
  int64_t int_at(int64_t index) const;
  double float_at(int64_t index) const;
  // All elements as int64 (for shape-like inputs: Reshape's shape, Slice's starts).
  std::vector<int64_t> to_int64_vector() const;

  static Tensor from_int64(std::vector<int64_t> dims, const std::vector<int64_t>& values);
  static Tensor from_float(std::vector<int64_t> dims, const std::vector<float>& values);
  // A tensor of a float `dtype` (f32, f64, f16, bf16) holding `values`, each rounded
  // to the dtype (f16/bf16 through float, to nearest even). Precondition: a float
  // dtype and values.size() == the product of `dims`.
  static Tensor from_doubles(DType dtype, std::vector<int64_t> dims,
                             const std::vector<double>& values);
  bool operator==(const Tensor& other) const = default;
};

float half_to_float(uint16_t bits);
uint16_t float_to_half(float value);
float bfloat16_to_float(uint16_t bits);
uint16_t float_to_bfloat16(float value);

}  // namespace stitch::ir
