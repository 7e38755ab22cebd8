// The window, dims and descriptors cuDNN's convolution and pooling calls share.
#include "runtime_stub/cuda/cudnn_window.h"

#include <algorithm>

#include "ir/core/window.h"
#include "runtime_stub/cuda/cuda_library_step.h"

namespace stitch::runtime::cuda {

Result<Window> read_window(const ir::Node& node, const std::vector<int64_t>& spatial,
                           const std::vector<int64_t>& kernel, bool allow_dilation) {
  const size_t rank = spatial.size();
  std::vector<int64_t> strides = node.ints_attribute("strides", std::vector<int64_t>(rank, 1));
  std::vector<int64_t> dilations = node.ints_attribute("dilations", std::vector<int64_t>(rank, 1));
  std::vector<int64_t> pads = node.ints_attribute("pads", std::vector<int64_t>(2 * rank, 0));
  std::string auto_pad = node.string_attribute("auto_pad", "NOTSET");
  if (strides.size() != rank || dilations.size() != rank || pads.size() != 2 * rank) {
    return refusal("strides/dilations/pads do not match the " + std::to_string(rank) +
                   " spatial dims");
  }
  if (!allow_dilation && product(dilations) != 1) return refusal("dilated pooling");
  Window window;
  for (size_t axis = 0; axis < rank; ++axis) {
    int64_t extent = (kernel[axis] - 1) * dilations[axis] + 1;
    if (strides[axis] <= 0) return refusal("a stride <= 0");
    // ir/core/window.h: one rule for pads against auto_pad (shape inference refused a
    // node whose pads disagree with it).
    if (std::optional<ir::AxisPads> automatic =
            ir::auto_pads(auto_pad, spatial[axis], extent, strides[axis])) {
      pads[axis] = automatic->begin;
      pads[axis + rank] = automatic->end;
    } else if (auto_pad != "NOTSET" && !auto_pad.empty()) {
      return refusal("auto_pad " + auto_pad);
    }
    if (pads[axis] != pads[axis + rank]) {
      return refusal("asymmetric pads " + dims_text(pads) +
                     " (cuDNN pads both sides of an axis equally)");
    }
    const size_t slot = rank == 1 ? 1 : axis;
    if (!fits_int(kernel[axis]) || !fits_int(pads[axis]) || !fits_int(strides[axis]) ||
        !fits_int(dilations[axis]) || strides[axis] == 0 || dilations[axis] == 0) {
      return refusal("a window attribute out of range");
    }
    window.kernel[slot] = static_cast<int>(kernel[axis]);
    window.pad[slot] = static_cast<int>(pads[axis]);
    window.stride[slot] = static_cast<int>(strides[axis]);
    window.dilation[slot] = static_cast<int>(dilations[axis]);
  }
  return window;
}

std::optional<std::array<int, 4>> nchw(const ir::TensorType& type) {
  const std::vector<int64_t>& d = type.dims;
  if (!type.is_static() || (d.size() != 3 && d.size() != 4)) return std::nullopt;
  std::array<int64_t, 4> dims = d.size() == 4 ? std::array<int64_t, 4>{d[0], d[1], d[2], d[3]}
                                              : std::array<int64_t, 4>{d[0], d[1], 1, d[2]};
  std::array<int, 4> result{};
  for (size_t i = 0; i < 4; ++i) {
    if (!fits_int(dims[i]) || dims[i] == 0) return std::nullopt;
    result[i] = static_cast<int>(dims[i]);
  }
  return result;
}

std::optional<cudnnDataType_t> cudnn_data_type(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::kFloat32:
      return CUDNN_DATA_FLOAT;
    case ir::DType::kFloat16:
      return CUDNN_DATA_HALF;
    default:
      return std::nullopt;
  }
}

Status make_tensor_desc(OwnedTensorDesc* desc, cudnnDataType_t type,
                        const std::array<int, 4>& dims) {
  STITCH_RETURN_IF_ERROR(
      cudnn_status(cudnnCreateTensorDescriptor(desc->receive()), "cudnnCreateTensorDescriptor"));
  cudnnStatus_t status = cudnnSetTensor4dDescriptor(desc->get(), CUDNN_TENSOR_NCHW, type, dims[0],
                                                    dims[1], dims[2], dims[3]);
  if (status != CUDNN_STATUS_SUCCESS) {
    return refusal(cudnn_error_text("cudnnSetTensor4dDescriptor", status));
  }
  return Status::ok();
}

}  // namespace stitch::runtime::cuda
