// Private to ir/: the reference kernels behind ir/reference/interpreter.h and the helpers they
// share (dtype dispatch, broadcasting, strided iteration, attribute access).
//
// Element access goes through Traits<S> for a storage type S: floats of every width
// are computed as double (f16/bf16 decoded on load, rounded to nearest even on
// store), signed and narrow unsigned integers as int64, uint64 as uint64, bool as
// bool. Loads and stores use memcpy on the raw little-endian bytes of ir::Tensor, so
// no alignment or aliasing assumption is made about std::string storage.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "ir/core/graph.h"
#include "ir/core/precision.h"
#include "ir/core/status.h"
#include "ir/core/tensor.h"

namespace stitch::ir::reference {

// What a kernel sees: the node, the opset of its domain and its inputs (null for
// omitted optional inputs; the vector may be shorter than node.inputs).
struct KernelContext {
  const Node& node;
  int64_t opset;
  const std::vector<const Tensor*>& inputs;
  // The precision of float32 products (EvaluationOptions::products).
  Precision products = Precision::kFloat32;

  const Tensor* input(size_t index) const {
    return index < inputs.size() ? inputs[index] : nullptr;
  }
  // True when output `index` exists in the node (not omitted).
  bool wants_output(size_t index) const {
    return index < node.outputs.size() && node.outputs[index] != kNoId;
  }
  // `node "name" (OpType): <what>`, Status::invalid_input.
  Status error(const std::string& what) const;
  // "input 0 has dtype string, which <Op> does not take in the reference evaluation".
  Status unsupported_dtype(size_t input_index) const;
  // Error when a required input is missing.
  Status missing_input(size_t input_index) const;
  // Error unless a tensor of `dims` has no negative dim and at most 2^31 elements
  // (for outputs whose size comes from input values: Expand, Tile, Range, ...).
  Status check_output_dims(const std::vector<int64_t>& dims) const;
  // Error unless input `index` is present and has at least one element.
  Status check_scalar_input(size_t input_index) const;
};

using KernelResult = Result<std::vector<Tensor>>;
using Kernel = KernelResult (*)(const KernelContext&);
using KernelTable = std::map<std::string_view, Kernel>;

// A kernel's result with one output.
KernelResult single(Tensor tensor);
// `axis` normalized from [-rank, rank) to [0, rank), or an error giving that range.
Result<int64_t> axis_of(const KernelContext& ctx, int64_t axis, int64_t rank);

void add_elementwise_kernels(KernelTable& table);
void add_shape_kernels(KernelTable& table);
void add_reduction_kernels(KernelTable& table);
void add_nn_kernels(KernelTable& table);
void add_resize_kernels(KernelTable& table);
void add_recurrent_kernels(KernelTable& table);

// ---------------------------------------------------------------------------------
// Storage types and their compute types.

struct Float16 {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};
struct Bool {
  uint8_t value;
};

template <typename S>
struct Traits;

template <>
struct Traits<float> {
  using Compute = double;
  static constexpr DType kDType = DType::kFloat32;
  static double to_compute(float v) { return v; }
  static float from_compute(double v) { return static_cast<float>(v); }
};
template <>
struct Traits<double> {
  using Compute = double;
  static constexpr DType kDType = DType::kFloat64;
  static double to_compute(double v) { return v; }
  static double from_compute(double v) { return v; }
};
template <>
struct Traits<Float16> {
  using Compute = double;
  static constexpr DType kDType = DType::kFloat16;
  static double to_compute(Float16 v) { return half_to_float(v.bits); }
  static Float16 from_compute(double v) { return Float16{float_to_half(static_cast<float>(v))}; }
};
template <>
struct Traits<BFloat16> {
  using Compute = double;
  static constexpr DType kDType = DType::kBFloat16;
  static double to_compute(BFloat16 v) { return bfloat16_to_float(v.bits); }
  static BFloat16 from_compute(double v) {
    return BFloat16{float_to_bfloat16(static_cast<float>(v))};
  }
};
template <>
struct Traits<Bool> {
  using Compute = bool;
  static constexpr DType kDType = DType::kBool;
  static bool to_compute(Bool v) { return v.value != 0; }
  static Bool from_compute(bool v) { return Bool{static_cast<uint8_t>(v ? 1 : 0)}; }
};

template <typename S, DType D, typename C = int64_t>
struct IntegerTraits {
  using Compute = C;
  static constexpr DType kDType = D;
  static C to_compute(S v) { return static_cast<C>(v); }
  static S from_compute(C v) { return static_cast<S>(v); }
};
template <>
struct Traits<int8_t> : IntegerTraits<int8_t, DType::kInt8> {};
template <>
struct Traits<int16_t> : IntegerTraits<int16_t, DType::kInt16> {};
template <>
struct Traits<int32_t> : IntegerTraits<int32_t, DType::kInt32> {};
template <>
struct Traits<int64_t> : IntegerTraits<int64_t, DType::kInt64> {};
template <>
struct Traits<uint8_t> : IntegerTraits<uint8_t, DType::kUInt8> {};
template <>
struct Traits<uint16_t> : IntegerTraits<uint16_t, DType::kUInt16> {};
template <>
struct Traits<uint32_t> : IntegerTraits<uint32_t, DType::kUInt32> {};
template <>
struct Traits<uint64_t> : IntegerTraits<uint64_t, DType::kUInt64, uint64_t> {};

template <typename S>
using ComputeOf = typename Traits<S>::Compute;

template <typename S>
inline ComputeOf<S> load(const char* base, int64_t index) {
  S value;
  std::memcpy(&value, base + index * static_cast<int64_t>(sizeof(S)), sizeof(S));
  return Traits<S>::to_compute(value);
}
template <typename S>
inline void store(char* base, int64_t index, ComputeOf<S> value) {
  S stored = Traits<S>::from_compute(value);
  std::memcpy(base + index * static_cast<int64_t>(sizeof(S)), &stored, sizeof(S));
}

template <typename S>
struct Tag {
  using type = S;
};

// Calls f(Tag<S>{}) for the storage type of `dtype` and returns true, or returns
// false when the dtype is not in the group.
template <typename F>
bool visit_float(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat32:
      f(Tag<float>{});
      return true;
    case DType::kFloat64:
      f(Tag<double>{});
      return true;
    case DType::kFloat16:
      f(Tag<Float16>{});
      return true;
    case DType::kBFloat16:
      f(Tag<BFloat16>{});
      return true;
    default:
      return false;
  }
}
template <typename F>
bool visit_integer(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kInt8:
      f(Tag<int8_t>{});
      return true;
    case DType::kInt16:
      f(Tag<int16_t>{});
      return true;
    case DType::kInt32:
      f(Tag<int32_t>{});
      return true;
    case DType::kInt64:
      f(Tag<int64_t>{});
      return true;
    case DType::kUInt8:
      f(Tag<uint8_t>{});
      return true;
    case DType::kUInt16:
      f(Tag<uint16_t>{});
      return true;
    case DType::kUInt32:
      f(Tag<uint32_t>{});
      return true;
    case DType::kUInt64:
      f(Tag<uint64_t>{});
      return true;
    default:
      return false;
  }
}
template <typename F>
bool visit_numeric(DType dtype, F&& f) {
  return visit_float(dtype, f) || visit_integer(dtype, f);
}
template <typename F>
bool visit_all(DType dtype, F&& f) {
  if (dtype == DType::kBool) {
    f(Tag<Bool>{});
    return true;
  }
  return visit_numeric(dtype, f);
}

// ---------------------------------------------------------------------------------
// Shapes and iteration.

int64_t element_count(const std::vector<int64_t>& dims);
// A zero-filled tensor of `dtype` and `dims`.
Tensor make_tensor(DType dtype, std::vector<int64_t> dims);
// Row-major strides in elements.
std::vector<int64_t> row_major_strides(const std::vector<int64_t>& dims);
// numpy broadcast of two shapes; false when they do not broadcast.
bool broadcast_shapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                      std::vector<int64_t>* out);
// Strides (in elements) for reading a tensor of `dims` at indices of `out_dims`, which
// `dims` broadcasts to: right-aligned, 0 on broadcast axes. Size out_dims.size().
std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& dims,
                                       const std::vector<int64_t>& out_dims);
// Normalizes an axis in [-rank, rank) to [0, rank); false when out of range.
bool normalize_axis(int64_t axis, int64_t rank, int64_t* normalized);
// Product of dims[begin, end).
int64_t dims_product(const std::vector<int64_t>& dims, size_t begin, size_t end);
std::string dims_string(const std::vector<int64_t>& dims);

// Calls f(linear_index, offsets) for every index of `dims` in row-major order, where
// offsets[k] = base[k] + sum_d index[d] * strides[k][d]. Strides may be negative
// or zero. Each strides[k] has dims.size() entries.
template <size_t N, typename F>
void for_each_index(const std::vector<int64_t>& dims,
                    const std::array<const std::vector<int64_t>*, N>& strides,
                    std::array<int64_t, N> base, F&& f) {
  const size_t rank = dims.size();
  for (int64_t d : dims) {
    if (d == 0) return;
  }
  if (rank == 0) {
    f(int64_t{0}, base);
    return;
  }
  const int64_t inner = dims[rank - 1];
  std::array<int64_t, N> inner_stride{};
  for (size_t k = 0; k < N; ++k) inner_stride[k] = (*strides[k])[rank - 1];
  std::vector<int64_t> counter(rank, 0);
  int64_t linear = 0;
  while (true) {
    std::array<int64_t, N> offsets = base;
    for (int64_t j = 0; j < inner; ++j) {
      f(linear++, offsets);
      for (size_t k = 0; k < N; ++k) offsets[k] += inner_stride[k];
    }
    size_t d = rank - 1;
    while (d > 0) {
      --d;
      ++counter[d];
      for (size_t k = 0; k < N; ++k) base[k] += (*strides[k])[d];
      if (counter[d] < dims[d]) break;
      for (size_t k = 0; k < N; ++k) base[k] -= (*strides[k])[d] * dims[d];
      counter[d] = 0;
      if (d == 0) return;
    }
    if (rank == 1) return;
  }
}

// Copies elements of `source` into a new tensor of `out_dims`: along axis d, output
// index i reads source index maps[d][i], or writes `fill` (one element's bytes)
// when any maps[d][i] is -1. Serves Expand, Slice, Tile, Pad and nearest Resize.
Tensor gather_by_axis_maps(const Tensor& source, const std::vector<int64_t>& out_dims,
                           const std::vector<std::vector<int64_t>>& maps, const std::string& fill);

// ---------------------------------------------------------------------------------
// Attributes and inputs.

// Reads a float tensor (any width) as doubles.
std::vector<double> doubles_of(const Tensor& tensor);
// A tensor of float dtype `dtype` and `dims` holding `values` (row-major), each rounded
// to the dtype; the inverse of doubles_of.
Tensor tensor_of_doubles(DType dtype, std::vector<int64_t> dims, const std::vector<double>& values);

// The operands of a float32 product at `precision` (ir/core/precision.h): `values`
// rounded to TF32 in place under kTf32; under kFloat32x3 `values` become the big parts
// and the small parts are returned (the caller adds big*small + small*big to
// big*big); otherwise nothing changes and the result is empty.
std::vector<double> split_product_operands(Precision precision, std::vector<double>& values);
// Error unless input `index` (when present) has a float dtype.
Status check_float(const KernelContext& ctx, size_t index);
// Floats attribute (kFloats) or fallback.
std::vector<float> floats_attribute(const Node& node, std::string_view name,
                                    std::vector<float> fallback);

}  // namespace stitch::ir::reference
