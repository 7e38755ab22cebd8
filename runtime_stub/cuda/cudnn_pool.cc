// cuDNN pooling library steps.
#include "runtime_stub/cuda/cudnn_pool.h"

#include <array>
#include <optional>
#include <string>
#include <utility>

#include "ir/core/analysis.h"
#include "runtime_stub/cuda/cuda_library_step.h"
#include "runtime_stub/cuda/cudnn_window.h"

namespace stitch::runtime::cuda {

struct PoolPlan {
  OwnedTensorDesc input;
  OwnedTensorDesc output;
  OwnedPoolingDesc pooling;
  int input_index = 0;
};

CudnnPooling::CudnnPooling(cudnnHandle_t handle) : handle_(handle) {}

CudnnPooling::~CudnnPooling() = default;

void CudnnPooling::forget(const Step& step) { plans_.erase(&step); }

Result<Placement> CudnnPooling::prepare(const Step& step) {
  const ir::Graph& body = step.body.graph;
  STITCH_ASSIGN_OR_RETURN(std::vector<ir::NodeId> order, ir::topological_order(body));
  Result<LibraryChain> read = read_library_chain(step, /*channel_last=*/false);
  if (!read.is_ok()) return refuse_or_fail(read.status(), "cuDNN: ");
  const LibraryChain& chain = *read;
  const ir::Node& op = *chain.op;
  if (order.size() != 1) return refuse("cuDNN: pooling with an epilogue");
  if (op.inputs.empty() || op.inputs[0] == ir::kNoId) {
    return refuse("cuDNN: " + op.display_name() + " lacks its input");
  }
  const ir::TensorType& x = body.value(op.inputs[0]).type;
  std::optional<cudnnDataType_t> type = cudnn_data_type(x.dtype);
  if (!type || chain.output.dtype != x.dtype) {
    return refuse("cuDNN: " + op.op_type + " on " + ir::to_string(x) +
                  " (only float32 and float16 pooling)");
  }
  std::optional<std::array<int, 4>> x_dims = nchw(x);
  std::optional<std::array<int, 4>> y_dims = nchw(chain.output);
  if (!x_dims || !y_dims || x.dims.size() != chain.output.dims.size()) {
    return refuse("cuDNN: " + op.op_type + " on " + ir::to_string(x) +
                  " (only 1-D and 2-D pooling)");
  }
  const std::vector<int64_t> spatial(x.dims.begin() + 2, x.dims.end());
  const bool global = op.op_type == "GlobalAveragePool" || op.op_type == "GlobalMaxPool";
  Window window;
  if (global) {
    window.kernel[0] = (*x_dims)[2];
    window.kernel[1] = (*x_dims)[3];
  } else {
    std::vector<int64_t> kernel = op.ints_attribute("kernel_shape", {});
    if (kernel.size() != spatial.size())
      return refuse("cuDNN: kernel_shape does not match the input");
    Result<Window> pool_window = read_window(op, spatial, kernel, /*allow_dilation=*/false);
    if (!pool_window.is_ok()) {
      return refuse_or_fail(pool_window.status(), "cuDNN: " + op.op_type + " ");
    }
    window = *pool_window;
  }
  cudnnPoolingMode_t mode = CUDNN_POOLING_MAX_DETERMINISTIC;
  if (op.op_type == "AveragePool" || op.op_type == "GlobalAveragePool") {
    mode = op.int_attribute("count_include_pad", 0) != 0
               ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
               : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
  }

  auto plan = std::make_unique<PoolPlan>();
  plan->input_index = step_input_index(step, body, op.inputs[0]);
  for (auto [desc, dims] : {std::pair{&plan->input, *x_dims}, std::pair{&plan->output, *y_dims}}) {
    if (Status described = make_tensor_desc(desc, *type, dims); !described.is_ok()) {
      return refuse_or_fail(described, "cuDNN: ");
    }
  }
  STITCH_RETURN_IF_ERROR(cudnn_status(cudnnCreatePoolingDescriptor(plan->pooling.receive()),
                                      "cudnnCreatePoolingDescriptor"));
  cudnnStatus_t status = cudnnSetPooling2dDescriptor(
      plan->pooling.get(), mode, CUDNN_NOT_PROPAGATE_NAN, window.kernel[0], window.kernel[1],
      window.pad[0], window.pad[1], window.stride[0], window.stride[1]);
  if (status != CUDNN_STATUS_SUCCESS) {
    return refuse("cuDNN: " + cudnn_error_text("cudnnSetPooling2dDescriptor", status));
  }
  std::array<int, 4> computed{};
  status = cudnnGetPooling2dForwardOutputDim(plan->pooling.get(), plan->input.get(), &computed[0],
                                             &computed[1], &computed[2], &computed[3]);
  if (status != CUDNN_STATUS_SUCCESS || computed != *y_dims) {
    return refuse("cuDNN: " + op.op_type + "'s output " + ir::to_string(chain.output) +
                  " is not cuDNN's floor((in + 2 pad - kernel) / stride) + 1 (ceil_mode?)");
  }
  plans_[&step] = std::move(plan);
  return Placement{};
}

Status CudnnPooling::run(const Step& step, const std::vector<const void*>& inputs,
                         const std::vector<void*>& outputs) {
  auto found = plans_.find(&step);
  STITCH_CHECK(found != plans_.end()) << "step " << step.name << " has no cuDNN pooling plan";
  const PoolPlan& plan = *found->second;
  const float one = 1.0f;
  const float zero = 0.0f;
  return cudnn_status(cudnnPoolingForward(handle_, plan.pooling.get(), &one, plan.input.get(),
                                          inputs[static_cast<size_t>(plan.input_index)], &zero,
                                          plan.output.get(), outputs[0]),
                      "cudnnPoolingForward");
}

}  // namespace stitch::runtime::cuda
