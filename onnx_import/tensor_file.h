// A TensorProto file: one tensor serialized on its own, as the ONNX model zoo and the
// ONNX backend tests ship their test data (test_data_set_N/input_K.pb, output_K.pb)
// and onnx.numpy_helper.from_array(...).SerializeToString() writes it. What
// `stitchopt run --test-data` reads (docs/runtime.md, "Running on your own data").
//
// The file is read as support::read_regular_file reads a file the user named (a
// regular file, at most kMaxTensorFileBytes) and parsed with protobuf; its tensor is
// converted by tensor_from_proto (every storage form), except external data, which a
// test data file never uses and which would let the file name another file to read.
// Errors are Status::invalid_input and start with the path:
//   data/test_data_set_0/input_0.pb: not a TensorProto (the protobuf could not be
//     parsed); check the path
#pragma once

#include <filesystem>
#include <string>

#include "ir/core/status.h"
#include "ir/core/tensor.h"

namespace stitch::onnx_import {

// protobuf's own limit on one message.
inline constexpr size_t kMaxTensorFileBytes = size_t{2147483647};

struct NamedTensor {
  std::string name;  // TensorProto.name; may be empty (then the position says which)
  ir::Tensor tensor;
};

Result<NamedTensor> read_tensor_file(const std::filesystem::path& path);

}  // namespace stitch::onnx_import
