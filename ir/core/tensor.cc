// Tensor types and constant tensor data.
#include "ir/core/tensor.h"

#include <bit>
#include <cmath>
#include <limits>
#include <sstream>

#include "ir/core/status.h"

namespace stitch::ir {

bool TensorType::is_static() const {
  if (!has_shape) return false;
  for (int64_t dim : dims) {
    if (dim < 0) return false;
  }
  return true;
}

// Saturated at INT64_MAX: shapes come from untrusted models, and a wrapped product
// would pass every size check.
int64_t dims_product(const std::vector<int64_t>& dims) {
  int64_t count = 1;
  bool saturated = false;
  for (int64_t dim : dims) {
    if (dim == 0) return 0;
    if (saturated || __builtin_mul_overflow(count, dim, &count)) saturated = true;
  }
  return saturated ? std::numeric_limits<int64_t>::max() : count;
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? "," : "") + std::to_string(dims[i]);
  return text + "]";
}

int64_t TensorType::num_elements() const {
  if (!is_static()) return -1;
  return dims_product(dims);
}

int64_t TensorType::num_bytes() const {
  int64_t count = num_elements();
  int64_t size = dtype_size(dtype);
  if (count < 0 || size == 0) return -1;
  int64_t bytes = 0;
  return __builtin_mul_overflow(count, size, &bytes) ? std::numeric_limits<int64_t>::max() : bytes;
}

std::string to_string(const TensorType& type) {
  std::ostringstream out;
  out << dtype_name(type.dtype) << "[";
  if (!type.has_shape) {
    out << "*";
  } else {
    for (size_t i = 0; i < type.dims.size(); ++i) {
      if (i > 0) out << ",";
      if (type.dims[i] < 0) {
        out << "?";
      } else {
        out << type.dims[i];
      }
    }
  }
  out << "]";
  return out.str();
}

int64_t Tensor::num_elements() const { return dims_product(dims); }

int64_t Tensor::int_at(int64_t index) const {
  switch (dtype) {
    case DType::kInt64:
      return element<int64_t>(index);
    case DType::kInt32:
      return element<int32_t>(index);
    case DType::kInt16:
      return element<int16_t>(index);
    case DType::kInt8:
      return element<int8_t>(index);
    case DType::kUInt8:
      return element<uint8_t>(index);
    case DType::kUInt16:
      return element<uint16_t>(index);
    case DType::kUInt32:
      return element<uint32_t>(index);
    case DType::kUInt64:
      return static_cast<int64_t>(element<uint64_t>(index));
    case DType::kBool:
      return element<uint8_t>(index) != 0 ? 1 : 0;
    default:
      return static_cast<int64_t>(float_at(index));
  }
}

double Tensor::float_at(int64_t index) const {
  switch (dtype) {
    case DType::kFloat32:
      return element<float>(index);
    case DType::kFloat64:
      return element<double>(index);
    case DType::kFloat16:
      return half_to_float(element<uint16_t>(index));
    case DType::kBFloat16:
      return bfloat16_to_float(element<uint16_t>(index));
    default:
      return static_cast<double>(int_at(index));
  }
}

std::vector<int64_t> Tensor::to_int64_vector() const {
  std::vector<int64_t> values;
  int64_t count = num_elements();
  values.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) values.push_back(int_at(i));
  return values;
}

Tensor Tensor::from_int64(std::vector<int64_t> dims, const std::vector<int64_t>& values) {
  Tensor tensor;
  tensor.dtype = DType::kInt64;
  tensor.dims = std::move(dims);
  STITCH_CHECK(static_cast<int64_t>(values.size()) == tensor.num_elements()) << "size mismatch";
  tensor.bytes.assign(reinterpret_cast<const char*>(values.data()),
                      values.size() * sizeof(int64_t));
  return tensor;
}

Tensor Tensor::from_float(std::vector<int64_t> dims, const std::vector<float>& values) {
  Tensor tensor;
  tensor.dtype = DType::kFloat32;
  tensor.dims = std::move(dims);
  STITCH_CHECK(static_cast<int64_t>(values.size()) == tensor.num_elements()) << "size mismatch";
  tensor.bytes.assign(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  return tensor;
}

Tensor Tensor::from_doubles(DType dtype, std::vector<int64_t> dims,
                            const std::vector<double>& values) {
  Tensor tensor;
  tensor.dtype = dtype;
  tensor.dims = std::move(dims);
  STITCH_CHECK(static_cast<int64_t>(values.size()) == tensor.num_elements()) << "size mismatch";
  const auto size = static_cast<size_t>(dtype_size(dtype));
  tensor.bytes.resize(values.size() * size);
  char* out = tensor.bytes.data();
  for (double value : values) {
    switch (dtype) {
      case DType::kFloat32: {
        auto narrowed = static_cast<float>(value);
        std::memcpy(out, &narrowed, sizeof narrowed);
        break;
      }
      case DType::kFloat64:
        std::memcpy(out, &value, sizeof value);
        break;
      case DType::kFloat16: {
        uint16_t bits = float_to_half(static_cast<float>(value));
        std::memcpy(out, &bits, sizeof bits);
        break;
      }
      case DType::kBFloat16: {
        uint16_t bits = float_to_bfloat16(static_cast<float>(value));
        std::memcpy(out, &bits, sizeof bits);
        break;
      }
      default:
        STITCH_CHECK(false) << "Tensor::from_doubles of " << dtype_name(dtype);
    }
    out += size;
  }
  return tensor;
}

float half_to_float(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  uint32_t result;
  if (exponent == 0) {
    if (mantissa == 0) {
      result = sign;
    } else {
      // Subnormal half: normalize into a float.
      int shift = 0;
      while ((mantissa & 0x400u) == 0) {
        mantissa <<= 1;
        ++shift;
      }
      mantissa &= 0x3ffu;
      result = sign | static_cast<uint32_t>(127 - 15 - shift + 1) << 23 | mantissa << 13;
    }
  } else if (exponent == 0x1f) {
    result = sign | 0x7f800000u | mantissa << 13;
  } else {
    result = sign | (exponent + 127 - 15) << 23 | mantissa << 13;
  }
  return std::bit_cast<float>(result);
}

uint16_t float_to_half(float value) {
  // Round to nearest even, as numpy and CUDA's __float2half_rn do.
  uint32_t bits = std::bit_cast<uint32_t>(value);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  uint32_t abs = bits & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or nan
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow to inf
  if (abs < 0x38800000u) {  // subnormal or zero in half
    float magnitude = std::bit_cast<float>(abs);
    // 2^-24 is the smallest half subnormal; nearbyint rounds half to even.
    auto units = static_cast<uint32_t>(std::nearbyint(magnitude * 16777216.0f));
    return static_cast<uint16_t>(sign | units);
  }
  uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);
  return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
}

float bfloat16_to_float(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

uint16_t float_to_bfloat16(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  uint32_t rounded = bits + 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(rounded >> 16);
}

}  // namespace stitch::ir
