// TensorProto -> ir::Tensor.
#include "onnx_import/tensor_proto.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <system_error>

namespace stitch::onnx_import {
namespace {

static_assert(std::endian::native == std::endian::little,
              "ir::Tensor bytes are little-endian; a big-endian host needs byte swaps here");

using ir::DType;

// Element count of `dims`, or nullopt when a dim is negative or the byte size of the
// tensor would not fit in int64.
std::optional<int64_t> checked_num_elements(const google::protobuf::RepeatedField<int64_t>& dims,
                                            int64_t element_size) {
  int64_t count = 1;
  for (int64_t dim : dims) {
    if (dim < 0) return std::nullopt;
    if (__builtin_mul_overflow(count, dim, &count)) return std::nullopt;
  }
  int64_t bytes = 0;
  if (__builtin_mul_overflow(count, std::max<int64_t>(element_size, 1), &bytes)) {
    return std::nullopt;
  }
  return count;
}

std::string dims_text(const google::protobuf::RepeatedField<int64_t>& dims) {
  std::string text = "[";
  for (int i = 0; i < dims.size(); ++i) {
    if (i > 0) text += ",";
    text += std::to_string(dims[i]);
  }
  return text + "]";
}

template <typename T>
void append_bytes(std::string& bytes, T value) {
  char buffer[sizeof(T)];
  std::memcpy(buffer, &value, sizeof(T));
  bytes.append(buffer, sizeof(T));
}

// Which repeated field holds the data of `dtype` when raw_data is not used, and how
// many of its entries one element takes.
enum class TypedField { kFloat, kInt32, kInt64, kDouble, kUInt64, kString };

TypedField typed_field_of(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
    case DType::kComplex64:
      return TypedField::kFloat;
    case DType::kInt64:
      return TypedField::kInt64;
    case DType::kFloat64:
    case DType::kComplex128:
      return TypedField::kDouble;
    case DType::kUInt32:
    case DType::kUInt64:
      return TypedField::kUInt64;
    case DType::kString:
      return TypedField::kString;
    default:
      return TypedField::kInt32;  // int8/16/32, uint8/16, bool, f16, bf16
  }
}

int entries_per_element(DType dtype) {
  return dtype == DType::kComplex64 || dtype == DType::kComplex128 ? 2 : 1;
}

// Narrows the int32_data entries to the element width of `dtype`.
void append_int32_entry(std::string& bytes, DType dtype, int32_t entry) {
  switch (dtype) {
    case DType::kInt32:
      append_bytes(bytes, entry);
      break;
    case DType::kInt16:
      append_bytes(bytes, static_cast<int16_t>(entry));
      break;
    case DType::kUInt16:
    case DType::kFloat16:
    case DType::kBFloat16:
      append_bytes(bytes, static_cast<uint16_t>(entry));
      break;
    case DType::kInt8:
      append_bytes(bytes, static_cast<int8_t>(entry));
      break;
    case DType::kUInt8:
      append_bytes(bytes, static_cast<uint8_t>(entry));
      break;
    case DType::kBool:
      append_bytes(bytes, static_cast<uint8_t>(entry != 0 ? 1 : 0));
      break;
    default:
      break;
  }
}

// Refuses locations that are absolute or leave the model's directory.
Status check_external_location(const std::string& location, const std::string& what) {
  std::filesystem::path relative(location);
  if (location.empty()) {
    return Status::invalid_input(what +
                                 " is stored in external data without a location; "
                                 "re-save the model with its external data");
  }
  if (relative.is_absolute() || relative.has_root_name() || relative.has_root_directory()) {
    return Status::invalid_input(what + " is stored in external file \"" + location +
                                 "\", an absolute path; external data must be a path relative "
                                 "to the model's directory: re-save the model with relative "
                                 "external data locations");
  }
  std::filesystem::path normal = relative.lexically_normal();
  if (normal.empty() || normal == "." || *normal.begin() == "..") {
    return Status::invalid_input(what + " is stored in external file \"" + location +
                                 "\", which is outside the model's directory; move the file "
                                 "beside the model and re-save it with a relative location");
  }
  return Status::ok();
}

Result<ir::Tensor> read_external(const onnx::TensorProto& proto, ir::Tensor tensor,
                                 int64_t expected_bytes, const std::string& what,
                                 const TensorReadContext& context) {
  if (tensor.dtype == DType::kString) {
    return Status::invalid_input(what +
                                 " is a string tensor stored in external data, which "
                                 "ONNX does not allow; re-save the model with its strings "
                                 "inline");
  }
  ir::ExternalDataInfo info;
  bool has_length = false;
  for (const onnx::StringStringEntryProto& entry : proto.external_data()) {
    const std::string& key = entry.key();
    if (key == "location") {
      info.location = entry.value();
      continue;
    }
    if (key != "offset" && key != "length") continue;  // "checksum" and others: not needed
    int64_t number = 0;
    const std::string& text = entry.value();
    bool valid = !text.empty() && text.size() <= 18;
    for (char c : text) valid = valid && c >= '0' && c <= '9';
    if (valid) number = std::stoll(text);
    if (!valid) {
      return Status::invalid_input(what + " has external data " + key + " \"" + text +
                                   "\", which is not a non-negative integer; re-save the "
                                   "model with its external data");
    }
    if (key == "offset") {
      info.offset = number;
    } else {
      info.length = number;
      has_length = true;
    }
  }
  STITCH_RETURN_IF_ERROR(check_external_location(info.location, what));
  if (!has_length) info.length = expected_bytes;
  if (info.length != expected_bytes) {
    return Status::invalid_input(what + " has external data length " + std::to_string(info.length) +
                                 " but its type " + ir::to_string(tensor.type()) + " needs " +
                                 std::to_string(expected_bytes) +
                                 " bytes; re-save the model with its external data");
  }
  std::filesystem::path file = std::filesystem::path(context.base_directory) / info.location;
  std::error_code error;
  if (!std::filesystem::exists(std::filesystem::symlink_status(file, error))) {
    return Status::invalid_input(what + " is stored in external file \"" + info.location +
                                 "\", which does not exist beside the model; copy it next to " +
                                 context.model_path);
  }
  // The real path, symbolic links resolved, must stay inside the model's real
  // directory: a link such as etc -> /etc would otherwise embed /etc/... in the
  // output model. Only regular files: a FIFO or a device would block or never end.
  std::filesystem::path base = std::filesystem::canonical(
      context.base_directory.empty() ? "." : context.base_directory, error);
  std::filesystem::path real =
      error ? std::filesystem::path() : std::filesystem::canonical(file, error);
  auto [base_end, real_at] = std::mismatch(base.begin(), base.end(), real.begin(), real.end());
  if (error || base_end != base.end() || real_at == real.end()) {
    return Status::invalid_input(what + " is stored in external file \"" + info.location +
                                 "\", which resolves (through a symbolic link) to a file outside "
                                 "the model's directory; copy the data beside the model instead "
                                 "of linking to it");
  }
  if (!std::filesystem::is_regular_file(real, error)) {
    return Status::invalid_input(what + " is stored in external file \"" + info.location +
                                 "\", which is not a regular file; external data must be a file "
                                 "beside the model");
  }
  file = real;
  uintmax_t file_size = std::filesystem::file_size(file, error);
  int64_t end = 0;
  if (error || __builtin_add_overflow(info.offset, info.length, &end) ||
      static_cast<uintmax_t>(end) > file_size) {
    return Status::invalid_input(
        what + " needs " + std::to_string(info.length) + " bytes at offset " +
        std::to_string(info.offset) + " of external file \"" + info.location +
        "\", but the file has only " + std::to_string(error ? 0 : file_size) +
        " bytes; copy the complete file next to " + context.model_path);
  }
  std::ifstream stream(file, std::ios::binary);
  tensor.bytes.resize(static_cast<size_t>(info.length));
  stream.seekg(info.offset);
  stream.read(tensor.bytes.data(), info.length);
  if (!stream) {
    return Status::invalid_input(what + " could not be read from external file \"" + info.location +
                                 "\"; check that " + context.model_path +
                                 "'s external data file is readable");
  }
  tensor.external = info;
  return tensor;
}

}  // namespace

Result<ir::Tensor> tensor_from_proto(const onnx::TensorProto& proto, const std::string& what,
                                     const TensorReadContext& context) {
  if (!ir::dtype_is_valid_onnx(proto.data_type())) {
    return Status::invalid_input(what + " has element type " + std::to_string(proto.data_type()) +
                                 ", which stitchopt does not support; convert it to a standard "
                                 "type (float, float16, int64, ...)");
  }
  if (proto.has_segment()) {
    return Status::invalid_input(what +
                                 " is a segmented tensor, which stitchopt does not "
                                 "support; re-save the model without segments");
  }
  ir::Tensor tensor;
  tensor.dtype = static_cast<DType>(proto.data_type());
  int64_t element_size = ir::dtype_size(tensor.dtype);
  std::optional<int64_t> count = checked_num_elements(proto.dims(), element_size);
  if (!count) {
    return Status::invalid_input(what + " has invalid dims " + dims_text(proto.dims()) +
                                 "; dims must be non-negative and the tensor must fit in "
                                 "memory: re-export the model");
  }
  tensor.dims.assign(proto.dims().begin(), proto.dims().end());
  int64_t expected_bytes = *count * element_size;

  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    return read_external(proto, std::move(tensor), expected_bytes, what, context);
  }

  auto size_error = [&](int64_t got, const std::string& unit) {
    return Status::invalid_input(
        what + " has " + std::to_string(got) + " " + unit + " of data but its type " +
        ir::to_string(tensor.type()) + " needs " +
        std::to_string(unit == "bytes" ? expected_bytes
                                       : *count * entries_per_element(tensor.dtype)) +
        "; re-export the model");
  };

  if (tensor.dtype == DType::kString) {
    if (proto.string_data_size() != *count) return size_error(proto.string_data_size(), "strings");
    tensor.strings.assign(proto.string_data().begin(), proto.string_data().end());
    return tensor;
  }
  if (proto.has_raw_data()) {
    if (static_cast<int64_t>(proto.raw_data().size()) != expected_bytes) {
      return size_error(static_cast<int64_t>(proto.raw_data().size()), "bytes");
    }
    tensor.bytes = proto.raw_data();
    return tensor;
  }

  int64_t entries = *count * entries_per_element(tensor.dtype);
  std::string& bytes = tensor.bytes;
  switch (typed_field_of(tensor.dtype)) {
    case TypedField::kFloat:
      if (proto.float_data_size() != entries) return size_error(proto.float_data_size(), "values");
      for (float value : proto.float_data()) append_bytes(bytes, value);
      break;
    case TypedField::kInt32:
      if (proto.int32_data_size() != entries) return size_error(proto.int32_data_size(), "values");
      for (int32_t value : proto.int32_data()) append_int32_entry(bytes, tensor.dtype, value);
      break;
    case TypedField::kInt64:
      if (proto.int64_data_size() != entries) return size_error(proto.int64_data_size(), "values");
      for (int64_t value : proto.int64_data()) append_bytes(bytes, value);
      break;
    case TypedField::kDouble:
      if (proto.double_data_size() != entries) {
        return size_error(proto.double_data_size(), "values");
      }
      for (double value : proto.double_data()) append_bytes(bytes, value);
      break;
    case TypedField::kUInt64:
      if (proto.uint64_data_size() != entries) {
        return size_error(proto.uint64_data_size(), "values");
      }
      for (uint64_t value : proto.uint64_data()) {
        if (tensor.dtype == DType::kUInt32) {
          append_bytes(bytes, static_cast<uint32_t>(value));
        } else {
          append_bytes(bytes, value);
        }
      }
      break;
    case TypedField::kString:
      break;  // handled above
  }
  return tensor;
}

}  // namespace stitch::onnx_import
