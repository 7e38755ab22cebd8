// cuDNN convolutions: Conv library steps with their bias / residual / ReLU epilogue.
#include "runtime_stub/cuda/cudnn_conv.h"

#include <algorithm>
#include <array>
#include <iostream>
#include <optional>
#include <utility>

#include "ir/core/analysis.h"
#include "runtime_stub/cuda/cuda_library_step.h"
#include "runtime_stub/cuda/cudnn_graph.h"
#include "runtime_stub/cuda/cudnn_window.h"

namespace stitch::runtime::cuda {

struct ConvPlan {
  OwnedTensorDesc input;
  OwnedTensorDesc output;  // also the residual's
  OwnedTensorDesc bias;    // [1,K,1,1]
  OwnedFilterDesc filter;
  OwnedConvolutionDesc convolution;
  OwnedActivationDesc activation;  // fused call, or Relu after the unfused call
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  size_t workspace_bytes = 0;
  bool fused = false;           // one cudnnConvolutionBiasActivationForward
  OwnedDeviceMemory zero_bias;  // the fused call needs a bias; K zeros when there is none
  int input_index = 0;
  int filter_index = 1;
  int bias_input = -1;
  int residual_input = -1;
  bool relu = false;
  // An epilogue that is not the legacy form: one cuDNN graph, whose operands are the
  // step inputs `operand_inputs` (per op; -1 for an op without one).
  std::unique_ptr<CudnnEpilogueGraph> graph;
  std::vector<int> operand_inputs;
};

namespace {

// cuDNN algorithms needing more workspace than this are skipped.
constexpr size_t kCudnnMaxWorkspaceBytes = size_t{256} << 20;

// Creates the descriptors of `plan` and checks cuDNN's output dims against `output`'s:
// ok, a refusal saying why cuDNN refuses, or the error of a failed create call.
// `tf32`: a dense Conv compiled for --precision tf32, on TF32 tensor cores
// (CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION lets cuDNN round float32 operands to TF32).
Status describe_convolution(ConvPlan* plan, const Window& window, int64_t group,
                            const std::array<int, 4>& x_dims, const std::array<int, 4>& w_dims,
                            const std::array<int, 4>& y_dims, const ir::TensorType& output,
                            bool tf32) {
  for (auto [desc, dims] : {std::pair{&plan->input, x_dims}, std::pair{&plan->output, y_dims},
                            std::pair{&plan->bias, std::array<int, 4>{1, y_dims[1], 1, 1}}}) {
    STITCH_RETURN_IF_ERROR(make_tensor_desc(desc, CUDNN_DATA_FLOAT, dims));
  }
  STITCH_RETURN_IF_ERROR(cudnn_status(cudnnCreateFilterDescriptor(plan->filter.receive()),
                                      "cudnnCreateFilterDescriptor"));
  cudnnStatus_t status =
      cudnnSetFilter4dDescriptor(plan->filter.get(), CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, w_dims[0],
                                 w_dims[1], w_dims[2], w_dims[3]);
  if (status != CUDNN_STATUS_SUCCESS) {
    return refusal(cudnn_error_text("cudnnSetFilter4dDescriptor", status));
  }
  STITCH_RETURN_IF_ERROR(cudnn_status(cudnnCreateConvolutionDescriptor(plan->convolution.receive()),
                                      "cudnnCreateConvolutionDescriptor"));
  status = cudnnSetConvolution2dDescriptor(
      plan->convolution.get(), window.pad[0], window.pad[1], window.stride[0], window.stride[1],
      window.dilation[0], window.dilation[1], CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
  if (status == CUDNN_STATUS_SUCCESS) {
    status = cudnnSetConvolutionGroupCount(plan->convolution.get(), static_cast<int>(group));
  }
  // FMA only unless tf32: TF32 tensor cores would miss the float32 reference by far
  // more than 1e-5.
  if (status == CUDNN_STATUS_SUCCESS) {
    status = cudnnSetConvolutionMathType(
        plan->convolution.get(), tf32 ? CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION : CUDNN_FMA_MATH);
  }
  if (status != CUDNN_STATUS_SUCCESS) {
    return refusal(cudnn_error_text("cudnnSetConvolution2dDescriptor", status));
  }
  std::array<int, 4> computed{};
  status = cudnnGetConvolution2dForwardOutputDim(plan->convolution.get(), plan->input.get(),
                                                 plan->filter.get(), &computed[0], &computed[1],
                                                 &computed[2], &computed[3]);
  if (status != CUDNN_STATUS_SUCCESS || computed != y_dims) {
    return refusal("the convolution's output " + ir::to_string(output) +
                   " is not what cuDNN computes for these pads and strides");
  }
  return Status::ok();
}

// Whether the step's product of `group` groups runs on TF32 tensor cores: compiled for
// --precision tf32 and dense (a grouped or depthwise conv keeps float32 products, as the
// reference interpreter's ir::EvaluationOptions says).
bool dense_tf32(const Step& step, int64_t group) {
  return step.products == ir::Precision::kTf32 && group == 1;
}

// The fastest algorithm by cuDNN's heuristics within the workspace limit into `plan`;
// false when there is none. `tf32`: tensor-op candidates first (describe_convolution).
Result<bool> choose_algorithm(cudnnHandle_t handle, ConvPlan* plan, bool tf32) {
  int max_algorithms = 0;
  STITCH_RETURN_IF_ERROR(
      cudnn_status(cudnnGetConvolutionForwardAlgorithmMaxCount(handle, &max_algorithms),
                   "cudnnGetConvolutionForwardAlgorithmMaxCount"));
  std::vector<cudnnConvolutionFwdAlgoPerf_t> candidates(
      static_cast<size_t>(std::max(max_algorithms, 1)));
  int returned = 0;
  STITCH_RETURN_IF_ERROR(cudnn_status(
      cudnnGetConvolutionForwardAlgorithm_v7(
          handle, plan->input.get(), plan->filter.get(), plan->convolution.get(),
          plan->output.get(), static_cast<int>(candidates.size()), &returned, candidates.data()),
      "cudnnGetConvolutionForwardAlgorithm_v7"));
  // Candidates evaluated with the descriptor's math first (FMA: the descriptor's math
  // type rules out TF32 for any of them; tf32: tensor-op math first).
  const cudnnMathType_t preferred = tf32 ? CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION : CUDNN_FMA_MATH;
  bool found = false;
  for (bool require_preferred : {true, false}) {
    for (int i = 0; i < returned && !found; ++i) {
      const cudnnConvolutionFwdAlgoPerf_t& candidate = candidates[static_cast<size_t>(i)];
      if (candidate.status == CUDNN_STATUS_SUCCESS && candidate.memory <= kCudnnMaxWorkspaceBytes &&
          (!require_preferred || candidate.mathType == preferred)) {
        plan->algo = candidate.algo;
        plan->workspace_bytes = candidate.memory;
        found = true;
      }
    }
  }
  return found;
}

}  // namespace

CudnnConvolutions::CudnnConvolutions(cudnnHandle_t handle, cudaStream_t stream, bool verbose)
    : handle_(handle), stream_(stream), verbose_(verbose) {}

CudnnConvolutions::~CudnnConvolutions() = default;

void CudnnConvolutions::forget(const Step& step) { plans_.erase(&step); }

int64_t CudnnConvolutions::scratch_bytes(const Step& step) const {
  auto found = plans_.find(&step);
  return found == plans_.end() ? 0 : static_cast<int64_t>(found->second->workspace_bytes);
}

Result<Placement> CudnnConvolutions::prepare(const Step& step) {
  // A MatMul (a cuDNN graph): its bias runs along the last dim.
  STITCH_ASSIGN_OR_RETURN(std::vector<ir::NodeId> order, ir::topological_order(step.body.graph));
  const bool matmul = !order.empty() && step.body.graph.node(order[0]).op_type == "MatMul";
  Result<LibraryChain> read = read_library_chain(step, /*channel_last=*/matmul);
  if (!read.is_ok()) return refuse_or_fail(read.status(), "cuDNN: ");
  const LibraryChain& chain = *read;
  const ir::Node& op = *chain.op;
  const ir::Graph& body = step.body.graph;
  if (op.inputs.size() < 2 || op.inputs[0] == ir::kNoId || op.inputs[1] == ir::kNoId) {
    return refuse("cuDNN: " + op.display_name() + " lacks an operand");
  }
  // The legacy calls below are float32 only; a float16/bfloat16 Conv is a graph too.
  if (matmul || !chain.legacy || chain.output.dtype != ir::DType::kFloat32) {
    return prepare_graph(step, chain);
  }
  const ir::TensorType& x = body.value(op.inputs[0]).type;
  const ir::TensorType& w = body.value(op.inputs[1]).type;
  if (x.dtype != ir::DType::kFloat32 || w.dtype != ir::DType::kFloat32 ||
      chain.output.dtype != ir::DType::kFloat32) {
    return refuse("cuDNN: Conv " + ir::to_string(x) + " * " + ir::to_string(w) +
                  " (only float32 convolutions)");
  }
  std::optional<std::array<int, 4>> x_dims = nchw(x);
  std::optional<std::array<int, 4>> w_dims = nchw(w);
  std::optional<std::array<int, 4>> y_dims = nchw(chain.output);
  if (!x_dims || !w_dims || !y_dims || x.dims.size() != w.dims.size() ||
      x.dims.size() != chain.output.dims.size()) {
    return refuse("cuDNN: Conv " + ir::to_string(x) + " * " + ir::to_string(w) +
                  " (only 1-D and 2-D convolutions)");
  }
  const int64_t group = op.int_attribute("group", 1);
  if (group < 1 || !fits_int(group) || (*x_dims)[1] != (*w_dims)[1] * group ||
      (*w_dims)[0] % group != 0) {
    return refuse("cuDNN: Conv channels " + ir::to_string(x) + " * " + ir::to_string(w) +
                  " do not match group " + std::to_string(group));
  }
  const std::vector<int64_t> spatial(x.dims.begin() + 2, x.dims.end());
  const std::vector<int64_t> kernel(w.dims.begin() + 2, w.dims.end());
  if (std::vector<int64_t> shape = op.ints_attribute("kernel_shape", kernel); shape != kernel) {
    return refuse("cuDNN: kernel_shape " + dims_text(shape) + " differs from the weights' " +
                  dims_text(kernel));
  }
  Result<Window> window = read_window(op, spatial, kernel, /*allow_dilation=*/true);
  if (!window.is_ok()) return refuse_or_fail(window.status(), "cuDNN: Conv ");
  if (chain.bias_input >= 0 &&
      step.inputs[static_cast<size_t>(chain.bias_input)].type.num_elements() != (*y_dims)[1]) {
    return refuse("cuDNN: the bias " +
                  ir::to_string(step.inputs[static_cast<size_t>(chain.bias_input)].type) +
                  " is not one value per output channel");
  }

  auto plan = std::make_unique<ConvPlan>();
  plan->input_index = step_input_index(step, body, op.inputs[0]);
  plan->filter_index = step_input_index(step, body, op.inputs[1]);
  plan->bias_input = chain.bias_input;
  plan->residual_input = chain.residual_input;
  plan->relu = chain.relu;
  const bool tf32 = dense_tf32(step, group);
  if (Status described = describe_convolution(plan.get(), *window, group, *x_dims, *w_dims, *y_dims,
                                              chain.output, tf32);
      !described.is_ok()) {
    return refuse_or_fail(described, "cuDNN: ");
  }
  STITCH_ASSIGN_OR_RETURN(bool found, choose_algorithm(handle_, plan.get(), tf32));
  if (!found) {
    return refuse("cuDNN: no forward algorithm for Conv " + ir::to_string(x) + " * " +
                  ir::to_string(w) + " within " + std::to_string(kCudnnMaxWorkspaceBytes) +
                  " bytes of workspace");
  }

  if (plan->relu || plan->residual_input >= 0) {
    STITCH_RETURN_IF_ERROR(plan_fused_call(step, (*y_dims)[1], plan.get()));
  }
  if (!plan->fused) {
    if (Status tried = try_plan(step, *plan); !tried.is_ok()) {
      return refuse_or_fail(tried, "cuDNN: ");
    }
  }
  plans_[&step] = std::move(plan);
  return Placement{};
}

Result<Placement> CudnnConvolutions::prepare_graph(const Step& step, const LibraryChain& chain) {
  const ir::Node& op = *chain.op;
  const ir::Graph& body = step.body.graph;
  const std::string form = op.op_type + " " + ir::to_string(body.value(op.inputs[0]).type) + " * " +
                           ir::to_string(body.value(op.inputs[1]).type);
  std::vector<artifact::EpilogueOp> ops;
  for (const ChainOp& bound : chain.ops) ops.push_back(bound.op);
  Result<EpilogueGraphSpec> spec = graph_spec(body, op, chain.output, ops);
  if (!spec.is_ok()) return refuse_or_fail(spec.status(), "cuDNN graph: " + form + ": ");
  spec->tf32 = dense_tf32(step, spec->matmul ? 1 : op.int_attribute("group", 1));
  auto plan = std::make_unique<ConvPlan>();
  plan->input_index = step_input_index(step, body, op.inputs[0]);
  plan->filter_index = step_input_index(step, body, op.inputs[1]);
  for (const ChainOp& bound : chain.ops) plan->operand_inputs.push_back(bound.input);
  Result<std::unique_ptr<CudnnEpilogueGraph>> graph = CudnnEpilogueGraph::build(*spec);
  if (!graph.is_ok()) return refuse_or_fail(graph.status(), "cuDNN graph: " + form + ": ");
  plan->graph = std::move(graph).value();
  if (Status planned = plan->graph->plan(handle_); !planned.is_ok()) {
    // Correct on the host, and said: cuDNN's runtime fusion has no engine for it here.
    return refuse_or_fail(planned, "cuDNN graph: " + form + " with its epilogue: ");
  }
  plan->workspace_bytes = static_cast<size_t>(plan->graph->workspace_bytes());
  if (verbose_) {
    std::cerr << "cuda: " << step.name << ": cuDNN graph " << form << ", workspace "
              << plan->workspace_bytes << " bytes\n";
  }
  plans_[&step] = std::move(plan);
  return Placement{};
}

Status CudnnConvolutions::plan_fused_call(const Step& step, int channels, ConvPlan* plan) {
  STITCH_RETURN_IF_ERROR(cudnn_status(cudnnCreateActivationDescriptor(plan->activation.receive()),
                                      "cudnnCreateActivationDescriptor"));
  STITCH_RETURN_IF_ERROR(cudnn_status(
      cudnnSetActivationDescriptor(plan->activation.get(),
                                   plan->relu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY,
                                   CUDNN_NOT_PROPAGATE_NAN, 0.0),
      "cudnnSetActivationDescriptor"));
  // The fused call: with the identity activation only IMPLICIT_PRECOMP_GEMM is allowed.
  const cudnnConvolutionFwdAlgo_t unfused_algo = plan->algo;
  const size_t unfused_workspace = plan->workspace_bytes;
  if (!plan->relu) plan->algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  cudnnStatus_t status = cudnnGetConvolutionForwardWorkspaceSize(
      handle_, plan->input.get(), plan->filter.get(), plan->convolution.get(), plan->output.get(),
      plan->algo, &plan->workspace_bytes);
  Status rejected;
  if (status != CUDNN_STATUS_SUCCESS) {
    rejected = refusal(cudnn_error_text("cudnnGetConvolutionForwardWorkspaceSize", status));
  } else if (plan->workspace_bytes > kCudnnMaxWorkspaceBytes) {
    rejected = refusal("needs " + std::to_string(plan->workspace_bytes) + " bytes of workspace");
  } else {
    if (plan->bias_input < 0) {
      const size_t bytes = static_cast<size_t>(channels) * sizeof(float);
      STITCH_RETURN_IF_ERROR(
          cuda_status(cudaMalloc(plan->zero_bias.receive(), bytes), "cudaMalloc(zero bias)"));
      STITCH_RETURN_IF_ERROR(cuda_status(cudaMemsetAsync(plan->zero_bias.get(), 0, bytes, stream_),
                                         "cudaMemsetAsync(zero bias)"));
    }
    plan->fused = true;
    rejected = try_plan(step, *plan);
    if (!rejected.is_ok() && !is_refusal(rejected)) return rejected;
  }
  if (!rejected.is_ok()) {
    // Unfused: Forward, then AddTensor for the bias and the residual, ActivationForward.
    if (verbose_) {
      std::cerr << "cuda: " << step.name << ": cudnnConvolutionBiasActivationForward rejected ("
                << rejected.message() << "); running the epilogue as separate cuDNN calls\n";
    }
    plan->fused = false;
    plan->zero_bias.reset();
    plan->algo = unfused_algo;
    plan->workspace_bytes = unfused_workspace;
  }
  return Status::ok();
}

Status CudnnConvolutions::try_plan(const Step& step, const ConvPlan& plan) {
  // Zeroed scratch copies of every tensor the call touches, freed on return.
  std::vector<OwnedDeviceMemory> buffers;
  auto scratch = [&](size_t bytes) -> Result<void*> {
    buffers.emplace_back();
    if (bytes == 0) return static_cast<void*>(nullptr);
    STITCH_RETURN_IF_ERROR(
        cuda_status(cudaMalloc(buffers.back().receive(), bytes), "cudaMalloc(trial buffer)"));
    STITCH_RETURN_IF_ERROR(cuda_status(cudaMemsetAsync(buffers.back().get(), 0, bytes, stream_),
                                       "cudaMemsetAsync(trial buffer)"));
    return buffers.back().get();
  };
  auto bytes_of = [&](int index) {
    return static_cast<size_t>(step.inputs[static_cast<size_t>(index)].bytes);
  };
  STITCH_ASSIGN_OR_RETURN(void* x, scratch(bytes_of(plan.input_index)));
  STITCH_ASSIGN_OR_RETURN(void* w, scratch(bytes_of(plan.filter_index)));
  STITCH_ASSIGN_OR_RETURN(void* y, scratch(static_cast<size_t>(step.outputs[0].bytes)));
  STITCH_ASSIGN_OR_RETURN(void* workspace, scratch(plan.workspace_bytes));
  std::vector<const void*> inputs(step.inputs.size(), nullptr);
  inputs[static_cast<size_t>(plan.input_index)] = x;
  inputs[static_cast<size_t>(plan.filter_index)] = w;
  if (plan.bias_input >= 0) {
    STITCH_ASSIGN_OR_RETURN(inputs[static_cast<size_t>(plan.bias_input)],
                            scratch(bytes_of(plan.bias_input)));
  }
  if (plan.residual_input >= 0) {
    STITCH_ASSIGN_OR_RETURN(inputs[static_cast<size_t>(plan.residual_input)],
                            scratch(bytes_of(plan.residual_input)));
  }
  Status ran = run_plan(plan, inputs, {y}, workspace);
  STITCH_RETURN_IF_ERROR(cuda_status(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"));
  if (!ran.is_ok()) return refusal(ran.message());
  return Status::ok();
}

Status CudnnConvolutions::run(const Step& step, const std::vector<const void*>& inputs,
                              const std::vector<void*>& outputs, void* scratch) {
  auto found = plans_.find(&step);
  STITCH_CHECK(found != plans_.end()) << "step " << step.name << " has no cuDNN convolution plan";
  return run_plan(*found->second, inputs, outputs, scratch);
}

Status CudnnConvolutions::run_plan(const ConvPlan& plan, const std::vector<const void*>& inputs,
                                   const std::vector<void*>& outputs, void* scratch) {
  const float one = 1.0f;
  const float zero = 0.0f;
  const void* x = inputs[static_cast<size_t>(plan.input_index)];
  const void* w = inputs[static_cast<size_t>(plan.filter_index)];
  const void* bias = plan.bias_input >= 0 ? inputs[static_cast<size_t>(plan.bias_input)] : nullptr;
  const void* residual =
      plan.residual_input >= 0 ? inputs[static_cast<size_t>(plan.residual_input)] : nullptr;
  void* y = outputs[0];
  if (plan.graph != nullptr) {
    std::vector<const void*> operands;
    for (int input : plan.operand_inputs) {
      operands.push_back(input >= 0 ? inputs[static_cast<size_t>(input)] : nullptr);
    }
    return plan.graph->execute(handle_, x, w, operands, y, scratch);
  }
  if (plan.fused) {
    // y = act(conv + alpha2 * z + bias); without a residual alpha2 is 0 and z is y,
    // as ONNX Runtime's fused convolution passes it.
    const float alpha2 = residual != nullptr ? 1.0f : 0.0f;
    return cudnn_status(cudnnConvolutionBiasActivationForward(
                            handle_, &one, plan.input.get(), x, plan.filter.get(), w,
                            plan.convolution.get(), plan.algo, scratch, plan.workspace_bytes,
                            &alpha2, plan.output.get(), residual != nullptr ? residual : y,
                            plan.bias.get(), bias != nullptr ? bias : plan.zero_bias.get(),
                            plan.activation.get(), plan.output.get(), y),
                        "cudnnConvolutionBiasActivationForward");
  }
  STITCH_RETURN_IF_ERROR(
      cudnn_status(cudnnConvolutionForward(handle_, &one, plan.input.get(), x, plan.filter.get(), w,
                                           plan.convolution.get(), plan.algo, scratch,
                                           plan.workspace_bytes, &zero, plan.output.get(), y),
                   "cudnnConvolutionForward"));
  if (bias != nullptr) {
    STITCH_RETURN_IF_ERROR(cudnn_status(
        cudnnAddTensor(handle_, &one, plan.bias.get(), bias, &one, plan.output.get(), y),
        "cudnnAddTensor(bias)"));
  }
  if (residual != nullptr) {
    STITCH_RETURN_IF_ERROR(cudnn_status(
        cudnnAddTensor(handle_, &one, plan.output.get(), residual, &one, plan.output.get(), y),
        "cudnnAddTensor(residual)"));
  }
  if (plan.relu) {
    STITCH_RETURN_IF_ERROR(
        cudnn_status(cudnnActivationForward(handle_, plan.activation.get(), &one, plan.output.get(),
                                            y, &zero, plan.output.get(), y),
                     "cudnnActivationForward(relu)"));
  }
  return Status::ok();
}

}  // namespace stitch::runtime::cuda
