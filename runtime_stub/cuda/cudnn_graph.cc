// A convolution and its pointwise epilogue as one cuDNN graph (cudnn-frontend).
#include "runtime_stub/cuda/cudnn_graph.h"

#include <cudnn_frontend.h>

#include <exception>
#include <optional>
#include <unordered_map>
#include <utility>

namespace stitch::runtime::cuda {

namespace fe = cudnn_frontend;
using TensorPtr = std::shared_ptr<fe::graph::Tensor_attributes>;

struct CudnnConvGraph::Impl {
  fe::graph::Graph graph;
  TensorPtr x, w, y;
  std::vector<TensorPtr> operands;  // per op; null for an op without an operand
  bool float32 = true;
  int64_t workspace_bytes = 0;
};

namespace {

std::optional<fe::DataType_t> frontend_type(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::kFloat32:
      return fe::DataType_t::FLOAT;
    case ir::DType::kFloat16:
      return fe::DataType_t::HALF;
    case ir::DType::kBFloat16:
      return fe::DataType_t::BFLOAT16;
    default:
      return std::nullopt;
  }
}

// Packed row-major strides of `dims` (NCHW; KCRS for the filter).
std::vector<int64_t> packed_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

TensorPtr input_tensor(fe::graph::Graph& graph, const std::string& name,
                       const std::vector<int64_t>& dims) {
  return graph.tensor(
      fe::graph::Tensor_attributes().set_name(name).set_dim(dims).set_stride(packed_strides(dims)));
}

fe::graph::Pointwise_attributes pointwise(const std::string& name, fe::PointwiseMode_t mode) {
  return fe::graph::Pointwise_attributes().set_name(name).set_mode(mode);
}

// v clipped to [lower, upper] by RELU_FWD's clips (slope 0 below the lower clip).
TensorPtr clip(fe::graph::Graph& graph, const std::string& name, const TensorPtr& v, float lower,
               float upper) {
  return graph.pointwise(v, pointwise(name, fe::PointwiseMode_t::RELU_FWD)
                                .set_relu_lower_clip(lower)
                                .set_relu_upper_clip(upper));
}

// max(0, min(1, alpha * v + beta)).
TensorPtr hard_sigmoid(fe::graph::Graph& graph, const std::string& name, const TensorPtr& v,
                       float alpha, float beta) {
  TensorPtr scaled =
      graph.pointwise(v, graph.tensor(alpha), pointwise(name + ".alpha", fe::PointwiseMode_t::MUL));
  TensorPtr shifted = graph.pointwise(scaled, graph.tensor(beta),
                                      pointwise(name + ".beta", fe::PointwiseMode_t::ADD));
  return clip(graph, name + ".clip", shifted, 0.0f, 1.0f);
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? "," : "") + std::to_string(dims[i]);
  return text + "]";
}

std::string frontend_error(const char* what, fe::error_t error) {
  return std::string(what) + ": " + error.get_message();
}

}  // namespace

CudnnConvGraph::CudnnConvGraph(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudnnConvGraph::~CudnnConvGraph() = default;

std::unique_ptr<CudnnConvGraph> CudnnConvGraph::build(const ConvGraphSpec& spec,
                                                      std::string* why_not) {
  std::optional<fe::DataType_t> type = frontend_type(spec.dtype);
  const size_t rank = spec.y.size();
  const size_t spatial = rank < 2 ? 0 : rank - 2;
  if (!type) {
    *why_not = "a convolution of " + std::string(ir::dtype_name(spec.dtype)) +
               " (only float32, float16 and bfloat16)";
    return nullptr;
  }
  if (rank < 3 || spec.x.size() != rank || spec.w.size() != rank ||
      spec.pre_padding.size() != spatial || spec.post_padding.size() != spatial ||
      spec.stride.size() != spatial || spec.dilation.size() != spatial ||
      spec.operand_dims.size() != spec.ops.size()) {
    *why_not = "a malformed convolution spec (ranks of x, w, y, the window or the operands differ)";
    return nullptr;
  }
  auto impl = std::make_unique<Impl>();
  impl->float32 = spec.dtype == ir::DType::kFloat32;
  fe::graph::Graph& graph = impl->graph;
  try {
    graph.set_io_data_type(*type)
        .set_intermediate_data_type(fe::DataType_t::FLOAT)
        .set_compute_data_type(fe::DataType_t::FLOAT);
    impl->x = input_tensor(graph, "x", spec.x);
    impl->w = input_tensor(graph, "w", spec.w);
    const TensorPtr product = graph.conv_fprop(impl->x, impl->w,
                                               fe::graph::Conv_fprop_attributes()
                                                   .set_name("conv")
                                                   .set_pre_padding(spec.pre_padding)
                                                   .set_post_padding(spec.post_padding)
                                                   .set_stride(spec.stride)
                                                   .set_dilation(spec.dilation));
    TensorPtr v = product;
    impl->operands.resize(spec.ops.size());
    for (size_t i = 0; i < spec.ops.size(); ++i) {
      const fusion::EpilogueOp op = spec.ops[i];
      const std::string name = "op" + std::to_string(i) + "." + fusion::epilogue_op_name(op);
      if (op.reads_operand() != !spec.operand_dims[i].empty()) {
        *why_not = "op " + name + " " +
                   (op.reads_operand() ? "lacks its operand's dims" : "has an operand");
        return nullptr;
      }
      switch (op.kind) {
        case fusion::EpilogueOpKind::kBias:
        case fusion::EpilogueOpKind::kResidualAdd:
        case fusion::EpilogueOpKind::kScale:
          impl->operands[i] = input_tensor(graph, name + ".operand", spec.operand_dims[i]);
          v = graph.pointwise(v, impl->operands[i],
                              pointwise(name, op.kind == fusion::EpilogueOpKind::kScale
                                                  ? fe::PointwiseMode_t::MUL
                                                  : fe::PointwiseMode_t::ADD));
          break;
        case fusion::EpilogueOpKind::kRelu:
          v = graph.pointwise(v, pointwise(name, fe::PointwiseMode_t::RELU_FWD));
          break;
        case fusion::EpilogueOpKind::kClip:
          v = clip(graph, name, v, op.a, op.b);
          break;
        case fusion::EpilogueOpKind::kSigmoid:
          v = graph.pointwise(v, pointwise(name, fe::PointwiseMode_t::SIGMOID_FWD));
          break;
        case fusion::EpilogueOpKind::kTanh:
          v = graph.pointwise(v, pointwise(name, fe::PointwiseMode_t::TANH_FWD));
          break;
        case fusion::EpilogueOpKind::kSwish:
          v = graph.pointwise(v,
                              pointwise(name, fe::PointwiseMode_t::SWISH_FWD).set_swish_beta(1.0f));
          break;
        case fusion::EpilogueOpKind::kHardSigmoid:
          v = hard_sigmoid(graph, name, v, op.a, op.b);
          break;
        case fusion::EpilogueOpKind::kHardSwish: {
          TensorPtr gate = hard_sigmoid(graph, name, v, 1.0f / 6.0f, 0.5f);
          v = graph.pointwise(v, gate, pointwise(name + ".mul", fe::PointwiseMode_t::MUL));
          break;
        }
      }
    }
    v->set_output(true).set_dim(spec.y).set_stride(packed_strides(spec.y)).set_data_type(*type);
    impl->y = v;
    fe::error_t valid = graph.validate();
    if (!valid.is_good()) {
      *why_not = frontend_error("cudnn-frontend validate", valid);
      return nullptr;
    }
    // validate infers the product's dims from the window; the epilogue keeps them.
    if (product->get_dim() != spec.y) {
      *why_not = "cudnn-frontend validate: the convolution's output is " +
                 dims_text(product->get_dim()) + " for these pads and strides, not " +
                 dims_text(spec.y);
      return nullptr;
    }
  } catch (const std::exception& error) {
    *why_not = std::string("cudnn-frontend: ") + error.what();
    return nullptr;
  }
  return std::unique_ptr<CudnnConvGraph>(new CudnnConvGraph(std::move(impl)));
}

std::string CudnnConvGraph::json() const {
  nlohmann::json printed = nlohmann::json::parse(impl_->graph.print());
  nlohmann::json kept;
  kept["nodes"] = printed["nodes"];
  kept["tensors"] = printed["tensors"];
  kept["context"] = printed["context"];
  kept["context"].erase("sm_count");
  return kept.dump(2) + "\n";
}

Result<std::string> CudnnConvGraph::plan(cudnnHandle_t handle) {
  fe::graph::Graph& graph = impl_->graph;
  try {
    fe::error_t status = graph.build_operation_graph(handle);
    if (!status.is_good()) return frontend_error("build_operation_graph", status);
    status = graph.create_execution_plans({fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK});
    if (!status.is_good()) return frontend_error("create_execution_plans", status);
    // float32 keeps FMA math: TF32 tensor cores would miss the reference by more than
    // 1e-5, as in the legacy path (cudnn_conv.cc).
    if (impl_->float32) graph.deselect_numeric_notes({fe::NumericalNote_t::TENSOR_CORE});
    status = graph.check_support(handle);
    if (!status.is_good()) return frontend_error("check_support", status);
    status = graph.build_plans(handle, fe::BuildPlanPolicy_t::HEURISTICS_CHOICE);
    if (!status.is_good()) return frontend_error("build_plans", status);
    status = graph.get_workspace_size(impl_->workspace_bytes);
    if (!status.is_good()) return frontend_error("get_workspace_size", status);
  } catch (const std::exception& error) {
    return std::string("cudnn-frontend: ") + error.what();
  }
  return std::string();
}

int64_t CudnnConvGraph::workspace_bytes() const { return impl_->workspace_bytes; }

Status CudnnConvGraph::execute(cudnnHandle_t handle, const void* x, const void* w,
                               const std::vector<const void*>& operands, void* y,
                               void* workspace) const {
  // The frontend's variant pack takes non-const pointers; it only reads x, w and the
  // operands.
  std::unordered_map<TensorPtr, void*> pack = {
      {impl_->x, const_cast<void*>(x)}, {impl_->w, const_cast<void*>(w)}, {impl_->y, y}};
  for (size_t i = 0; i < impl_->operands.size() && i < operands.size(); ++i) {
    if (impl_->operands[i] != nullptr) pack[impl_->operands[i]] = const_cast<void*>(operands[i]);
  }
  fe::error_t status = impl_->graph.execute(handle, pack, workspace);
  if (!status.is_good()) return Status::internal(frontend_error("cudnn graph execute", status));
  return Status::ok();
}

}  // namespace stitch::runtime::cuda
