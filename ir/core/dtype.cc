// Element type names and sizes.
#include "ir/core/dtype.h"

#include <array>

namespace stitch::ir {
namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view short_name;
  std::string_view onnx_name;
  int64_t size;
};

constexpr std::array<DTypeInfo, 17> kDTypes = {{
    {DType::kUndefined, "undef", "undefined", 0},
    {DType::kFloat32, "f32", "float", 4},
    {DType::kUInt8, "u8", "uint8", 1},
    {DType::kInt8, "i8", "int8", 1},
    {DType::kUInt16, "u16", "uint16", 2},
    {DType::kInt16, "i16", "int16", 2},
    {DType::kInt32, "i32", "int32", 4},
    {DType::kInt64, "i64", "int64", 8},
    {DType::kString, "string", "string", 0},
    {DType::kBool, "bool", "bool", 1},
    {DType::kFloat16, "f16", "float16", 2},
    {DType::kFloat64, "f64", "double", 8},
    {DType::kUInt32, "u32", "uint32", 4},
    {DType::kUInt64, "u64", "uint64", 8},
    {DType::kComplex64, "c64", "complex64", 8},
    {DType::kComplex128, "c128", "complex128", 16},
    {DType::kBFloat16, "bf16", "bfloat16", 2},
}};

const DTypeInfo& info(DType dtype) {
  auto index = static_cast<size_t>(dtype);
  if (index >= kDTypes.size()) return kDTypes[0];
  return kDTypes[index];
}

}  // namespace

std::string_view dtype_name(DType dtype) { return info(dtype).short_name; }
std::string_view dtype_onnx_name(DType dtype) { return info(dtype).onnx_name; }
int64_t dtype_size(DType dtype) { return info(dtype).size; }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const DTypeInfo& entry : kDTypes) {
    if (entry.short_name == name) return entry.dtype;
  }
  return std::nullopt;
}

bool dtype_is_valid_onnx(int32_t value) {
  return value >= 1 && value < static_cast<int32_t>(kDTypes.size());
}

bool dtype_is_float(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat16 || dtype == DType::kBFloat16 ||
         dtype == DType::kFloat64;
}

bool dtype_is_integer(DType dtype) {
  switch (dtype) {
    case DType::kUInt8:
    case DType::kInt8:
    case DType::kUInt16:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64:
    case DType::kUInt32:
    case DType::kUInt64:
      return true;
    default:
      return false;
  }
}

bool dtype_is_signed(DType dtype) {
  switch (dtype) {
    case DType::kInt8:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64:
      return true;
    default:
      return dtype_is_float(dtype);
  }
}

}  // namespace stitch::ir
