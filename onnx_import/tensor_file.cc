// A TensorProto file (onnx_import/tensor_file.h).
#include "onnx_import/tensor_file.h"

#include <onnx/onnx_pb.h>

#include <climits>

#include "onnx_import/tensor_proto.h"
#include "support/bounded_file.h"

namespace stitch::onnx_import {

Result<NamedTensor> read_tensor_file(const std::filesystem::path& path) {
  STITCH_ASSIGN_OR_RETURN(std::string bytes,
                          support::read_regular_file(path, kMaxTensorFileBytes, "tensor file"));
  const std::string where = path.string();
  onnx::TensorProto proto;
  if (bytes.empty() || bytes.size() > INT_MAX ||
      !proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return Status::invalid_input(where +
                                 ": not a TensorProto (the protobuf could not be parsed); "
                                 "check the path");
  }
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    return Status::invalid_input(where +
                                 ": the tensor's data is in an external file, which a test "
                                 "data file may not name; save it with its data inside");
  }
  TensorReadContext context{where, path.parent_path().string()};
  Result<ir::Tensor> tensor = tensor_from_proto(proto, "the tensor", context);
  if (!tensor.is_ok()) return tensor.status().with_prefix(where + ": ");
  return NamedTensor{proto.name(), std::move(tensor).value()};
}

}  // namespace stitch::onnx_import
