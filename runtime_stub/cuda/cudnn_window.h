// What cuDNN's convolution and pooling calls share: the spatial window of a Conv or
// pooling node (kernel, symmetric pads, strides, dilations; 1-D as 2-D), NCHW dims,
// cuDNN data types and owned descriptors.
#pragma once

#include <cudnn.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/core/dtype.h"
#include "ir/core/graph.h"
#include "ir/core/status.h"
#include "runtime_stub/cuda/cuda_plugin.h"

namespace stitch::runtime::cuda {

// One spatial window of a Conv or pooling node, 2-D (a 1-D node gets a leading axis of
// size 1): pads are per side (cuDNN pads both sides of an axis equally).
struct Window {
  int kernel[2] = {1, 1};
  int pad[2] = {0, 0};
  int stride[2] = {1, 1};
  int dilation[2] = {1, 1};
};

// Reads kernel_shape/pads/strides/dilations/auto_pad of `node` over the input's
// spatial dims: the window, or a refusal (cuda_library_step.h) saying why cuDNN cannot
// express it.
Result<Window> read_window(const ir::Node& node, const std::vector<int64_t>& spatial,
                           const std::vector<int64_t>& kernel, bool allow_dilation);

// NCHW dims of a rank-3 (N, C, L -> N, C, 1, L) or rank-4 tensor, or nullopt.
std::optional<std::array<int, 4>> nchw(const ir::TensorType& type);

// CUDNN_DATA_FLOAT / CUDNN_DATA_HALF, or nullopt.
std::optional<cudnnDataType_t> cudnn_data_type(ir::DType dtype);

using OwnedTensorDesc = Owned<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor>;
using OwnedFilterDesc = Owned<cudnnFilterDescriptor_t, cudnnDestroyFilterDescriptor>;
using OwnedConvolutionDesc = Owned<cudnnConvolutionDescriptor_t, cudnnDestroyConvolutionDescriptor>;
using OwnedActivationDesc = Owned<cudnnActivationDescriptor_t, cudnnDestroyActivationDescriptor>;
using OwnedPoolingDesc = Owned<cudnnPoolingDescriptor_t, cudnnDestroyPoolingDescriptor>;

// Creates a 4-D NCHW descriptor: ok, a refusal with cuDNN's reason for rejecting the
// dims, or the error of a failed create call.
Status make_tensor_desc(OwnedTensorDesc* desc, cudnnDataType_t type,
                        const std::array<int, 4>& dims);

}  // namespace stitch::runtime::cuda
