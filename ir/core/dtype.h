// Element types, numbered as ONNX's TensorProto.DataType so conversion is a cast.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace stitch::ir {

enum class DType : int32_t {
  kUndefined = 0,
  kFloat32 = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kFloat64 = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
  kBFloat16 = 16,
};

// Short name used by the textual IR: f32, f16, bf16, f64, i8..i64, u8..u64, bool,
// string, c64, c128, undef.
std::string_view dtype_name(DType dtype);
std::optional<DType> dtype_from_name(std::string_view name);
// ONNX's name ("float", "int64", ...) for messages that users compare with Netron.
std::string_view dtype_onnx_name(DType dtype);
// Bytes per element; 0 for string and undefined.
int64_t dtype_size(DType dtype);
bool dtype_is_valid_onnx(int32_t value);
bool dtype_is_float(DType dtype);    // f16, bf16, f32, f64
bool dtype_is_integer(DType dtype);  // signed and unsigned integers
bool dtype_is_signed(DType dtype);   // floats and signed integers

}  // namespace stitch::ir
