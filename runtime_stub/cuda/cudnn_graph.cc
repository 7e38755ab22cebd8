// A convolution or matmul and its pointwise epilogue as one cuDNN graph (cudnn-frontend).
#include "runtime_stub/cuda/cudnn_graph.h"

#include <cudnn_frontend.h>

#include "ir/core/gemm_shape.h"
#include "ir/core/window.h"

#include <exception>
#include <optional>
#include <unordered_map>
#include <utility>

namespace stitch::runtime::cuda {

namespace fe = cudnn_frontend;
using TensorPtr = std::shared_ptr<fe::graph::Tensor_attributes>;

struct CudnnEpilogueGraph::Impl {
  fe::graph::Graph graph;
  TensorPtr x, w, y;
  std::vector<TensorPtr> operands;  // per op; null for an op without an operand
  bool float32 = true;
  bool tf32 = false;  // EpilogueGraphSpec::tf32
  int64_t workspace_bytes = 0;
};

namespace {

// Why the graph has no cuDNN form: a refusal, as the plugin's planning functions
// return it (runtime_stub/cuda/cuda_library_step.h), so the step runs on the host.
Status refusal(std::string why) { return Status::unavailable(std::move(why)); }

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

// The product of a cuDNN graph into `spec`: a Conv's dims and window, or a MatMul as
// [B,M,K] x [B or 1,K,N] (batches of A over one B fold into M). Ok or a refusal.
Status product_spec(const ir::Graph& body, const ir::Node& op, const ir::TensorType& output,
                    EpilogueGraphSpec* spec) {
  if (op.inputs.size() < 2 || op.inputs[0] == ir::kNoId || op.inputs[1] == ir::kNoId) {
    return refusal(op.display_name() + " lacks an operand");
  }
  const ir::TensorType& x = body.value(op.inputs[0]).type;
  const ir::TensorType& w = body.value(op.inputs[1]).type;
  spec->dtype = output.dtype;
  if (op.op_type == "MatMul") {
    std::string why_not;
    std::optional<ir::GemmShape> shape = ir::gemm_shape(body, op, &why_not);
    if (!shape) return refusal(why_not);
    spec->matmul = true;
    if (std::optional<ir::GemmShape> folded = ir::batches_folded_into_rows(*shape)) {
      spec->x = {1, folded->m, folded->k};
      spec->w = {1, folded->k, folded->n};
      spec->y = {1, folded->m, folded->n};
    } else if (shape->left_batch_dims == shape->right_batch_dims) {
      spec->x = {shape->batch, shape->m, shape->k};
      spec->w = {shape->batch, shape->k, shape->n};
      spec->y = {shape->batch, shape->m, shape->n};
    } else {
      return refusal("MatMul batch dims " + dims_text(shape->left_batch_dims) + " x " +
                     dims_text(shape->right_batch_dims) +
                     " (B must be one matrix or batched as A)");
    }
    return Status::ok();
  }
  if (!x.is_static() || !w.is_static() || x.dims.size() != output.dims.size() ||
      w.dims.size() != x.dims.size() || x.dims.size() < 3) {
    return refusal("static shapes of one rank >= 3 only");
  }
  const std::vector<int64_t> spatial(x.dims.begin() + 2, x.dims.end());
  const std::vector<int64_t> kernel(w.dims.begin() + 2, w.dims.end());
  Result<ir::Window> window = ir::sliding_window(op, spatial, kernel, /*ceil_mode=*/false);
  if (!window.is_ok()) return refusal(window.status().message());
  spec->x = x.dims;
  spec->w = w.dims;
  spec->y = output.dims;
  spec->pre_padding = window->pad_begin;
  spec->post_padding = window->pad_end;
  spec->stride = window->strides;
  spec->dilation = window->dilations;
  return Status::ok();
}

std::string frontend_error(const char* what, fe::error_t error) {
  return std::string(what) + ": " + error.get_message();
}

}  // namespace

Result<EpilogueGraphSpec> graph_spec(const ir::Graph& body, const ir::Node& op,
                                     const ir::TensorType& output,
                                     const std::vector<artifact::EpilogueOp>& ops) {
  EpilogueGraphSpec spec;
  STITCH_RETURN_IF_ERROR(product_spec(body, op, output, &spec));
  // A bias or scale holds one value per channel: [1,K,1,...] (Conv) or [1,1,N]
  // (MatMul) at y's rank; a residual y's dims.
  const size_t channel = spec.matmul ? spec.y.size() - 1 : 1;
  spec.ops = ops;
  for (artifact::EpilogueOp op_of_chain : ops) {
    std::vector<int64_t> dims;
    if (op_of_chain == artifact::EpilogueOp::kResidualAdd) {
      dims = spec.y;
    } else if (op_of_chain.reads_operand()) {
      dims.assign(spec.y.size(), 1);
      dims[channel] = spec.y[channel];
    }
    spec.operand_dims.push_back(std::move(dims));
  }
  return spec;
}

CudnnEpilogueGraph::CudnnEpilogueGraph(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudnnEpilogueGraph::~CudnnEpilogueGraph() = default;

Result<std::unique_ptr<CudnnEpilogueGraph>> CudnnEpilogueGraph::build(
    const EpilogueGraphSpec& spec) {
  std::optional<fe::DataType_t> type = frontend_type(spec.dtype);
  const size_t rank = spec.y.size();
  const size_t spatial = rank < 2 ? 0 : rank - 2;
  if (!type) {
    return refusal(std::string(spec.matmul ? "a matmul" : "a convolution") + " of " +
                   std::string(ir::dtype_name(spec.dtype)) +
                   " (only float32, float16 and bfloat16)");
  }
  const size_t window = spec.matmul ? 0 : spatial;
  if (rank < 3 || (spec.matmul && rank != 3) || spec.x.size() != rank || spec.w.size() != rank ||
      spec.pre_padding.size() != window || spec.post_padding.size() != window ||
      spec.stride.size() != window || spec.dilation.size() != window ||
      spec.operand_dims.size() != spec.ops.size()) {
    return refusal("a malformed spec (ranks of x, w, y, the window or the operands differ)");
  }
  auto impl = std::make_unique<Impl>();
  impl->float32 = spec.dtype == ir::DType::kFloat32;
  impl->tf32 = spec.tf32;
  fe::graph::Graph& graph = impl->graph;
  try {
    graph.set_io_data_type(*type)
        .set_intermediate_data_type(fe::DataType_t::FLOAT)
        .set_compute_data_type(fe::DataType_t::FLOAT);
    impl->x = input_tensor(graph, "x", spec.x);
    impl->w = input_tensor(graph, "w", spec.w);
    const TensorPtr product =
        spec.matmul
            ? graph.matmul(impl->x, impl->w,
                           fe::graph::Matmul_attributes().set_name("matmul").set_compute_data_type(
                               fe::DataType_t::FLOAT))
            : graph.conv_fprop(impl->x, impl->w,
                               fe::graph::Conv_fprop_attributes()
                                   .set_name("conv")
                                   .set_pre_padding(spec.pre_padding)
                                   .set_post_padding(spec.post_padding)
                                   .set_stride(spec.stride)
                                   .set_dilation(spec.dilation));
    TensorPtr v = product;
    impl->operands.resize(spec.ops.size());
    for (size_t i = 0; i < spec.ops.size(); ++i) {
      const artifact::EpilogueOp op = spec.ops[i];
      const std::string name = "op" + std::to_string(i) + "." + artifact::epilogue_op_name(op);
      if (op.reads_operand() != !spec.operand_dims[i].empty()) {
        return refusal("op " + name + " " +
                       (op.reads_operand() ? "lacks its operand's dims" : "has an operand"));
      }
      switch (op.kind) {
        case artifact::EpilogueOpKind::kBias:
        case artifact::EpilogueOpKind::kResidualAdd:
        case artifact::EpilogueOpKind::kScale:
          impl->operands[i] = input_tensor(graph, name + ".operand", spec.operand_dims[i]);
          v = graph.pointwise(v, impl->operands[i],
                              pointwise(name, op.kind == artifact::EpilogueOpKind::kScale
                                                  ? fe::PointwiseMode_t::MUL
                                                  : fe::PointwiseMode_t::ADD));
          break;
        case artifact::EpilogueOpKind::kRelu:
          v = graph.pointwise(v, pointwise(name, fe::PointwiseMode_t::RELU_FWD));
          break;
        case artifact::EpilogueOpKind::kClip:
          v = clip(graph, name, v, op.a, op.b);
          break;
        case artifact::EpilogueOpKind::kSigmoid:
          v = graph.pointwise(v, pointwise(name, fe::PointwiseMode_t::SIGMOID_FWD));
          break;
        case artifact::EpilogueOpKind::kTanh:
          v = graph.pointwise(v, pointwise(name, fe::PointwiseMode_t::TANH_FWD));
          break;
        case artifact::EpilogueOpKind::kSwish:
          v = graph.pointwise(v,
                              pointwise(name, fe::PointwiseMode_t::SWISH_FWD).set_swish_beta(1.0f));
          break;
        case artifact::EpilogueOpKind::kHardSigmoid:
          v = hard_sigmoid(graph, name, v, op.a, op.b);
          break;
        case artifact::EpilogueOpKind::kGelu:
          // cuDNN's GELU_FWD is the erf form (GELU_APPROX_TANH_FWD the tanh one).
          v = graph.pointwise(v, pointwise(name, fe::PointwiseMode_t::GELU_FWD));
          break;
        case artifact::EpilogueOpKind::kGeluTanh:
          v = graph.pointwise(v, pointwise(name, fe::PointwiseMode_t::GELU_APPROX_TANH_FWD));
          break;
        case artifact::EpilogueOpKind::kHardSwish: {
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
      return refusal(frontend_error("cudnn-frontend validate", valid));
    }
    // validate infers the product's dims (a convolution's from its window); the
    // epilogue keeps them.
    if (product->get_dim() != spec.y) {
      return refusal("cudnn-frontend validate: the product is " + dims_text(product->get_dim()) +
                     ", not " + dims_text(spec.y));
    }
  } catch (const std::exception& error) {
    return refusal(std::string("cudnn-frontend: ") + error.what());
  }
  return std::unique_ptr<CudnnEpilogueGraph>(new CudnnEpilogueGraph(std::move(impl)));
}

std::string CudnnEpilogueGraph::json() const {
  nlohmann::json printed = nlohmann::json::parse(impl_->graph.print());
  nlohmann::json kept;
  kept["nodes"] = printed["nodes"];
  kept["tensors"] = printed["tensors"];
  kept["context"] = printed["context"];
  kept["context"].erase("sm_count");
  return kept.dump(2) + "\n";
}

Status CudnnEpilogueGraph::plan(cudnnHandle_t handle) {
  fe::graph::Graph& graph = impl_->graph;
  try {
    fe::error_t status = graph.build_operation_graph(handle);
    if (!status.is_good()) return refusal(frontend_error("build_operation_graph", status));
    status = graph.create_execution_plans({fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK});
    if (!status.is_good()) return refusal(frontend_error("create_execution_plans", status));
    // float32 keeps FMA math unless compiled for --precision tf32: TF32 tensor cores
    // would miss the float32 reference by more than 1e-5, as in the legacy path
    // (cudnn_conv.cc).
    if (impl_->float32 && !impl_->tf32) {
      graph.deselect_numeric_notes({fe::NumericalNote_t::TENSOR_CORE});
    }
    status = graph.check_support(handle);
    if (!status.is_good()) return refusal(frontend_error("check_support", status));
    status = graph.build_plans(handle, fe::BuildPlanPolicy_t::HEURISTICS_CHOICE);
    if (!status.is_good()) return refusal(frontend_error("build_plans", status));
    status = graph.get_workspace_size(impl_->workspace_bytes);
    if (!status.is_good()) return refusal(frontend_error("get_workspace_size", status));
  } catch (const std::exception& error) {
    return refusal(std::string("cudnn-frontend: ") + error.what());
  }
  return Status::ok();
}

int64_t CudnnEpilogueGraph::workspace_bytes() const { return impl_->workspace_bytes; }

Status CudnnEpilogueGraph::execute(cudnnHandle_t handle, const void* x, const void* w,
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
