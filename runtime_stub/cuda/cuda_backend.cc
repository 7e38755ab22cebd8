// CudaBackend: runs the steps of a Program on one NVIDIA GPU (runtime_stub/backend.h).
//
// Everything is enqueued on one non-blocking stream; device memory comes from
// cudaMalloc (256-byte aligned); upload/download are cudaMemcpyAsync on that stream
// followed by a stream synchronize.
//
// Kernel steps: the generated kernels of OUT/kernels/ are compiled into
// OUT/kernels/build/libstitch_kernels.so on the first kernel step (runtime_stub/
// kernel_library.h: one nvcc per .cu in parallel, stamped, then one link with the
// shared cudart, so the kernels and this library use the same CUDA runtime), or
// CudaBackendOptions::kernels_library is loaded instead. Each step calls its launcher `cudaError_t <kernel>_launch(const void* const* inputs,
// void* const* outputs, void* workspace, cudaStream_t stream)` (emit/cuda_emitter.h);
// `<kernel>_workspace_bytes()` must equal kernels.json's workspace_bytes.
//
// Library steps (the epilogue is the plan's, Step::epilogue, matched to the step's
// body by fusion::bind_epilogue):
//   - cuBLASLt: MatMul or Gemm, optionally followed by a bias Add, a residual Add and a
//     final Relu (fusion/epilogue.h's forms), as one cublasLtMatmul computing
//       D = act(alpha * op(A) op(B) + beta * C + bias)
//     with CUBLASLT_EPILOGUE_BIAS / RELU / RELU_BIAS and C = the residual (beta = 1,
//     or Gemm's beta when Gemm's own C is the residual). cuBLASLt is column-major; a
//     row-major X[r][c] is the column-major X^T (r and c swapped, ld = c), so the
//     row-major D = A B is computed as the column-major D^T = B^T A^T: our B is
//     cuBLASLt's A, our A its B, m = N, n = M, and the bias (one value per row of the
//     column-major D^T) runs along N, the last dim, as ONNX broadcasting wants.
//     float32 computes in CUBLAS_COMPUTE_32F (no TF32: results match the reference
//     interpreter to float32 rounding), float16/bfloat16 in 32F as well. MatMul batch
//     dims: each operand either carries exactly the output's batch dims (strided
//     batch) or none / only 1s (batch stride 0); a rank-2 B under a batched A folds
//     the batch into M (one large GEMM). Rank-1 operands are [1,K] / [K,1].
//   - cuDNN: Conv (1-D or 2-D, NCHW, float32, groups, symmetric pads, strides,
//     dilations) with cudnnConvolutionForward (+ cudnnAddTensor for a bias) or, when a
//     residual Add or a Relu follows, cudnnConvolutionBiasActivationForward
//       y = act(conv(x, w) + alpha2 * z + bias)
//     (cuDNN allows only IMPLICIT_PRECOMP_GEMM with the identity activation). Every
//     convolution plan runs once at prepare time on zeroed scratch buffers: a fused
//     call cuDNN rejects falls back to Forward + AddTensor + ActivationForward, an
//     unfused one it rejects goes to the host. The algorithm is cuDNN's heuristic
//     choice (cudnnGetConvolutionForwardAlgorithm_v7) within 256 MiB of workspace;
//     math type CUDNN_FMA_MATH: no TF32.
//     MaxPool, AveragePool (count_include_pad either way), GlobalAveragePool and
//     GlobalMaxPool (1-D or 2-D, float32/float16, symmetric pads, no dilation, an
//     output size equal to cuDNN's floor formula) with cudnnPoolingForward.
//   Any other form is placed on the host with the reason (Placement::why).
//
// Plans (descriptors, chosen algorithms, launcher pointers) are made in prepare() and
// keyed by the Step's address: run() must get the Step object prepare() got (the
// executor passes program.steps[i] to both).
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "fusion/library_epilogue.h"
#include "ir/core/analysis.h"
#include "ir/core/gemm_shape.h"
#include "ir/core/graph.h"
#include "runtime_stub/cuda/cuda_plugin.h"
#include "runtime_stub/kernel_library.h"
#include "support/subprocess.h"

namespace stitch::runtime::cuda {
namespace fs = std::filesystem;
namespace {

// cuBLASLt may pick an algorithm that needs up to this much workspace.
constexpr uint64_t kCublasMaxWorkspaceBytes = uint64_t{32} << 20;
// cuDNN algorithms needing more workspace than this are skipped.
constexpr size_t kCudnnMaxWorkspaceBytes = size_t{256} << 20;

using KernelLaunchFn = cudaError_t (*)(const void* const*, void* const*, void*, cudaStream_t);
using KernelWorkspaceFn = size_t (*)();

Placement refuse(std::string why) { return Placement{false, std::move(why)}; }

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? "," : "") + std::to_string(dims[i]);
  return text + "]";
}

int64_t product(const std::vector<int64_t>& dims) {
  int64_t result = 1;
  for (int64_t dim : dims) result *= dim;
  return result;
}

bool fits_int(int64_t value) { return value >= 0 && value <= INT_MAX; }

// ---------------------------------------------------------------------------------
// Reading a library step's body.

// The op a library step calls and the epilogue folded into the call, as the plan
// decided it (Step::epilogue) with each operand bound to a step input:
//   op(...) [+ bias] [+ residual] [-> Relu]   (the Adds in either order)
struct LibraryChain {
  const ir::Node* op = nullptr;
  ir::TensorType output;        // the op's output type, which every chain value keeps
  int bias_input = -1;          // step input index: one value per channel
  int residual_input = -1;      // step input index: the output's exact dims
  float residual_scale = 1.0f;  // Gemm's beta when its own C is the residual
  bool relu = false;
};

// The step input index body graph value `value` is bound to (Step::body_inputs names
// the body's graph input per step input); -1 when it is computed inside the body.
int step_input_index(const Step& step, const ir::Graph& body, ir::ValueId value) {
  if (value == ir::kNoId || !body.value(value).is_graph_input) return -1;
  const std::string& name = body.value(value).name;
  for (size_t i = 0; i < step.body_inputs.size() && i < step.inputs.size(); ++i) {
    if (step.inputs[i].value != ir::kNoId && step.body_inputs[i] == name) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

// A bias for `output`: its dims, right-aligned, are 1 except the channel axis, which
// equals the output's; its data is then channel-contiguous. The plan only ever binds
// such a bias; checked because the library reads one value per channel.
bool is_channel_vector(const ir::TensorType& operand, const ir::TensorType& output,
                       size_t channel_axis) {
  if (operand.dtype != output.dtype || !operand.is_static() ||
      operand.dims.size() > output.dims.size()) {
    return false;
  }
  size_t offset = output.dims.size() - operand.dims.size();
  for (size_t axis = 0; axis < output.dims.size(); ++axis) {
    int64_t dim = axis >= offset ? operand.dims[axis - offset] : 1;
    if (dim != (axis == channel_axis ? output.dims[axis] : 1)) return false;
  }
  return true;
}

// Checks the library op of the step's bound epilogue: an ONNX op with one output
// whose operands are all step inputs; "" or why not.
std::string check_library_op(const Step& step, const ir::Node& op) {
  const ir::Graph& body = step.body.graph;
  if (!op.domain.empty()) return op.display_name() + " is not an ONNX op";
  for (size_t slot = 1; slot < op.outputs.size(); ++slot) {
    if (op.outputs[slot] != ir::kNoId) {
      return op.display_name() + " has a second output (e.g. MaxPool's Indices), which the " +
             "library call does not produce";
    }
  }
  for (ir::ValueId input : op.inputs) {
    if (input != ir::kNoId && step_input_index(step, body, input) < 0) {
      return op.display_name() + " reads \"" + body.value(input).name +
             "\", which is not an input of the step";
    }
  }
  return "";
}

// Fills `chain` from the plan's epilogue (Step::epilogue, fusion::bind_epilogue on the
// step's body); returns "" or why the step is not one library call with a bias /
// residual / ReLU epilogue. `channel_last`: the bias runs along the last dim (GEMM)
// rather than dim 1 (Conv).
Result<std::string> read_library_chain(const Step& step, bool channel_last, LibraryChain* chain) {
  const ir::Graph& body = step.body.graph;
  if (step.body_inputs.size() != step.inputs.size() ||
      step.body_outputs.size() != step.outputs.size()) {
    return Status::internal("step " + step.name + ": body_inputs/body_outputs do not match its " +
                            "inputs/outputs");
  }
  if (step.outputs.size() != 1) {
    return "the step has " + std::to_string(step.outputs.size()) +
           " outputs; a library call writes one";
  }
  if (!step.epilogue) {
    return std::string("the call has no library form (a Gemm's C that is neither a residual of ") +
           "the output's shape nor a bias along the last dim with beta 1)";
  }
  std::string why;
  std::optional<fusion::BoundEpilogue> bound = fusion::bind_epilogue(body, *step.epilogue, &why);
  if (!bound) return why;
  const ir::Node& op = body.node(bound->call);
  chain->op = &op;
  if (std::string reason = check_library_op(step, op); !reason.empty()) return reason;
  chain->output = body.value(op.outputs[0]).type;
  if (!chain->output.is_static() || chain->output.dims.empty()) {
    return op.display_name() + "'s output " + ir::to_string(chain->output) +
           " is a scalar or has no static shape";
  }
  const size_t channel_axis = channel_last ? chain->output.dims.size() - 1 : 1;
  if (channel_axis >= chain->output.dims.size()) {
    return op.display_name() + "'s output " + ir::to_string(chain->output) + " has no channel dim";
  }
  if (body.value(bound->output).type != chain->output) {
    return "the epilogue's output " + ir::to_string(body.value(bound->output).type) +
           " does not keep the type " + ir::to_string(chain->output) + " of " + op.display_name();
  }
  if (bound->bias != ir::kNoId) {
    chain->bias_input = step_input_index(step, body, bound->bias);
    const ir::TensorType& type = body.value(bound->bias).type;
    if (chain->bias_input < 0 || !is_channel_vector(type, chain->output, channel_axis)) {
      return "the bias " + ir::to_string(type) + " is not a step input with one value per " +
             "channel of " + ir::to_string(chain->output);
    }
  }
  if (bound->residual != ir::kNoId) {
    chain->residual_input = step_input_index(step, body, bound->residual);
    chain->residual_scale = bound->residual_scale;
    const ir::TensorType& type = body.value(bound->residual).type;
    if (chain->residual_input < 0 || type != chain->output) {
      return "the residual " + ir::to_string(type) + " is not a step input of the output's type " +
             ir::to_string(chain->output);
    }
  }
  chain->relu = bound->relu;
  if (body.value(bound->output).name != step.body_outputs[0]) {
    return std::string("the step's output is not the end of the op -> bias/residual -> Relu chain");
  }
  return std::string();
}

// ---------------------------------------------------------------------------------
// cuBLASLt: MatMul / Gemm.

// A MatMul/Gemm as one (strided batched) cuBLASLt call: its shape
// (ir/core/gemm_shape.h) with the elements between batches of each operand.
struct StridedGemm {
  ir::GemmShape shape;
  int64_t left_batch_stride = 0;  // elements between batches; 0 broadcasts
  int64_t right_batch_stride = 0;
};

// The batch stride of an operand with batch dims `operand` against the output's batch
// dims `output`: 0 when it has none (or only 1s), `matrix` when they are exactly the
// output's (after left-padding with 1s); nullopt for a partial broadcast.
std::optional<int64_t> batch_stride(const std::vector<int64_t>& operand,
                                    const std::vector<int64_t>& output, int64_t matrix) {
  if (product(operand) == 1) return 0;
  if (operand.size() > output.size()) return std::nullopt;
  std::vector<int64_t> padded(output.size() - operand.size(), 1);
  padded.insert(padded.end(), operand.begin(), operand.end());
  if (padded != output) return std::nullopt;
  return matrix;
}

// Returns "" and fills `gemm`, or why the MatMul/Gemm is not one (strided batched) GEMM.
std::string strided_gemm(const ir::Graph& body, const ir::Node& op, StridedGemm* gemm) {
  std::string why_not;
  std::optional<ir::GemmShape> found = ir::gemm_shape(body, op, &why_not);
  if (!found) return why_not;
  ir::GemmShape& shape = gemm->shape;
  shape = std::move(*found);
  std::optional<int64_t> left_stride =
      batch_stride(shape.left_batch_dims, shape.batch_dims, shape.m * shape.k);
  std::optional<int64_t> right_stride =
      batch_stride(shape.right_batch_dims, shape.batch_dims, shape.k * shape.n);
  if (!left_stride || !right_stride) {
    return "MatMul batch dims " + dims_text(shape.left_batch_dims) + " x " +
           dims_text(shape.right_batch_dims) +
           " broadcast partially (each operand must have all of the output's batch dims " +
           dims_text(shape.batch_dims) + " or none)";
  }
  gemm->left_batch_stride = *left_stride;
  gemm->right_batch_stride = *right_stride;
  // A batched A times one B: the batches of A are consecutive rows of one matrix.
  if (shape.batch > 1 && gemm->right_batch_stride == 0 && gemm->left_batch_stride != 0) {
    shape.m *= shape.batch;
    shape.batch = 1;
    gemm->left_batch_stride = 0;
  }
  if (shape.m == 0 || shape.n == 0 || shape.k == 0 || shape.batch == 0) {
    return "an empty operand or output";
  }
  if (shape.batch > INT32_MAX) return "more than 2^31 batches";
  return "";
}

std::optional<cudaDataType_t> cuda_data_type(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::kFloat32:
      return CUDA_R_32F;
    case ir::DType::kFloat16:
      return CUDA_R_16F;
    case ir::DType::kBFloat16:
      return CUDA_R_16BF;
    default:
      return std::nullopt;
  }
}

using OwnedMatmulDesc = Owned<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy>;
using OwnedMatrixLayout = Owned<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>;
using OwnedMatmulPreference = Owned<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy>;

struct MatmulPlan {
  OwnedMatmulDesc operation;
  OwnedMatrixLayout right_layout;   // cuBLASLt's A
  OwnedMatrixLayout left_layout;    // cuBLASLt's B
  OwnedMatrixLayout output_layout;  // C and D
  cublasLtMatmulAlgo_t algo{};
  size_t workspace_bytes = 0;
  float alpha = 1.0f;
  float beta = 0.0f;  // applies to the residual
  int left_input = 0;
  int right_input = 1;
  int bias_input = -1;
  int residual_input = -1;
};

// Column-major layout of a row-major [rows][cols] matrix (see the file comment),
// `batch` of them `stride` elements apart.
Status make_layout(OwnedMatrixLayout* layout, cudaDataType_t type, int64_t rows, int64_t cols,
                   int64_t batch, int64_t stride) {
  STITCH_RETURN_IF_ERROR(
      cublas_status(cublasLtMatrixLayoutCreate(layout->receive(), type, static_cast<uint64_t>(cols),
                                               static_cast<uint64_t>(rows), cols),
                    "cublasLtMatrixLayoutCreate"));
  if (batch > 1) {
    int32_t count = static_cast<int32_t>(batch);
    STITCH_RETURN_IF_ERROR(
        cublas_status(cublasLtMatrixLayoutSetAttribute(
                          layout->get(), CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
                      "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)"));
    STITCH_RETURN_IF_ERROR(cublas_status(
        cublasLtMatrixLayoutSetAttribute(layout->get(), CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                         &stride, sizeof(stride)),
        "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)"));
  }
  return Status::ok();
}

// ---------------------------------------------------------------------------------
// cuDNN: convolution and pooling geometry.

// One spatial window of a Conv or pooling node, 2-D (a 1-D node gets a leading axis of
// size 1): pads are per side (cuDNN pads both sides of an axis equally).
struct Window {
  int kernel[2] = {1, 1};
  int pad[2] = {0, 0};
  int stride[2] = {1, 1};
  int dilation[2] = {1, 1};
};

// Reads kernel_shape/pads/strides/dilations/auto_pad of `node` over the input's
// spatial dims; returns "" or why cuDNN cannot express the window.
std::string read_window(const ir::Node& node, const std::vector<int64_t>& spatial,
                        const std::vector<int64_t>& kernel, bool allow_dilation, Window* window) {
  const size_t rank = spatial.size();
  std::vector<int64_t> strides = node.ints_attribute("strides", std::vector<int64_t>(rank, 1));
  std::vector<int64_t> dilations = node.ints_attribute("dilations", std::vector<int64_t>(rank, 1));
  std::vector<int64_t> pads = node.ints_attribute("pads", std::vector<int64_t>(2 * rank, 0));
  std::string auto_pad = node.string_attribute("auto_pad", "NOTSET");
  if (strides.size() != rank || dilations.size() != rank || pads.size() != 2 * rank) {
    return "strides/dilations/pads do not match the " + std::to_string(rank) + " spatial dims";
  }
  if (!allow_dilation && product(dilations) != 1) return "dilated pooling";
  for (size_t axis = 0; axis < rank; ++axis) {
    int64_t extent = (kernel[axis] - 1) * dilations[axis] + 1;
    if (auto_pad == "VALID") {
      pads[axis] = pads[axis + rank] = 0;
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      if (strides[axis] <= 0) return "a stride <= 0";
      int64_t out = (spatial[axis] + strides[axis] - 1) / strides[axis];
      int64_t total = std::max<int64_t>(0, (out - 1) * strides[axis] + extent - spatial[axis]);
      int64_t small = total / 2;
      pads[axis] = auto_pad == "SAME_UPPER" ? small : total - small;
      pads[axis + rank] = total - pads[axis];
    } else if (auto_pad != "NOTSET" && !auto_pad.empty()) {
      return "auto_pad " + auto_pad;
    }
    if (pads[axis] != pads[axis + rank]) {
      return "asymmetric pads " + dims_text(pads) + " (cuDNN pads both sides of an axis equally)";
    }
    const size_t slot = rank == 1 ? 1 : axis;
    if (!fits_int(kernel[axis]) || !fits_int(pads[axis]) || !fits_int(strides[axis]) ||
        !fits_int(dilations[axis]) || strides[axis] == 0 || dilations[axis] == 0) {
      return "a window attribute out of range";
    }
    window->kernel[slot] = static_cast<int>(kernel[axis]);
    window->pad[slot] = static_cast<int>(pads[axis]);
    window->stride[slot] = static_cast<int>(strides[axis]);
    window->dilation[slot] = static_cast<int>(dilations[axis]);
  }
  return "";
}

// NCHW dims of a rank-3 (N, C, L -> N, C, 1, L) or rank-4 tensor, or nullopt.
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

using OwnedTensorDesc = Owned<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor>;
using OwnedFilterDesc = Owned<cudnnFilterDescriptor_t, cudnnDestroyFilterDescriptor>;
using OwnedConvolutionDesc = Owned<cudnnConvolutionDescriptor_t, cudnnDestroyConvolutionDescriptor>;
using OwnedActivationDesc = Owned<cudnnActivationDescriptor_t, cudnnDestroyActivationDescriptor>;
using OwnedPoolingDesc = Owned<cudnnPoolingDescriptor_t, cudnnDestroyPoolingDescriptor>;

// Creates a 4-D NCHW descriptor; "" or cuDNN's reason for rejecting the dims.
Result<std::string> make_tensor_desc(OwnedTensorDesc* desc, cudnnDataType_t type,
                                     const std::array<int, 4>& dims) {
  STITCH_RETURN_IF_ERROR(
      cudnn_status(cudnnCreateTensorDescriptor(desc->receive()), "cudnnCreateTensorDescriptor"));
  cudnnStatus_t status = cudnnSetTensor4dDescriptor(desc->get(), CUDNN_TENSOR_NCHW, type, dims[0],
                                                    dims[1], dims[2], dims[3]);
  if (status != CUDNN_STATUS_SUCCESS) return cudnn_error_text("cudnnSetTensor4dDescriptor", status);
  return std::string();
}

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
};

struct PoolPlan {
  OwnedTensorDesc input;
  OwnedTensorDesc output;
  OwnedPoolingDesc pooling;
  int input_index = 0;
};

// ---------------------------------------------------------------------------------
// Building libstitch_kernels.so.

// nvcc as given (a path), or searched in PATH, then $CUDA_HOME/bin, $CUDA_PATH/bin
// and /usr/local/cuda/bin (where the toolkit installs itself without touching PATH).
Result<std::string> find_nvcc(const std::string& nvcc) {
  std::vector<std::string> directories;
  for (const char* variable : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* root = std::getenv(variable)) directories.push_back(std::string(root) + "/bin");
  }
  directories.emplace_back("/usr/local/cuda/bin");
  std::string found = support::find_executable(nvcc, directories);
  if (!found.empty()) return found;
  return Status::unavailable(
      nvcc +
      " not found (searched PATH, $CUDA_HOME/bin, $CUDA_PATH/bin and /usr/local/cuda/bin): "
      "install the CUDA toolkit, or build OUT/kernels with its CMakeLists.txt and pass "
      "the resulting libstitch_kernels.so");
}

// Builds OUT/kernels/build/libstitch_kernels.so from the kernel steps' sources for the
// device's architecture (kernel_library.h: reusing what is up to date) and returns its
// path. Linked with the shared cudart, so the kernels and this library share one CUDA
// runtime (streams and pointers are the same objects).
Result<std::string> build_kernels_library(const Program& program, const CudaBackendOptions& options,
                                          const cudaDeviceProp& properties) {
  KernelLibraryRecipe recipe;
  STITCH_ASSIGN_OR_RETURN(recipe.compiler, find_nvcc(options.nvcc));
  const fs::path kernels_dir = program.kernels_dir;
  // Headers every kernel may include (stitch_prelude.cuh, kernels.h).
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(kernels_dir, error)) {
    std::string extension = entry.path().extension().string();
    if (entry.is_regular_file() && (extension == ".cuh" || extension == ".h")) {
      recipe.headers.push_back(entry.path());
    }
  }
  std::sort(recipe.headers.begin(), recipe.headers.end());
  const std::string arch =
      "-arch=sm_" + std::to_string(properties.major) + std::to_string(properties.minor);
  recipe.compile_flags = {"-Xcompiler", "-fPIC", "-O3", "-std=c++17", arch, "-I" + kernels_dir.string()};
  recipe.link_flags = {"-shared", "--cudart", "shared", arch};
  recipe.build_dir = kernels_dir / "build";
  recipe.library_name = "libstitch_kernels.so";
  recipe.verbose = options.verbose;
  return build_kernel_library(program, recipe);
}

// ---------------------------------------------------------------------------------
// The backend.

class CudaBackend final : public Backend {
 public:
  static Result<std::unique_ptr<Backend>> create(const CudaBackendOptions& options);
  ~CudaBackend() override {
    if (stream_) static_cast<void>(cudaStreamSynchronize(stream_.get()));
  }

  std::string device_name() const override {
    return std::string(properties_.name) + " (sm_" + std::to_string(properties_.major) +
           std::to_string(properties_.minor) + ", " +
           std::to_string(properties_.multiProcessorCount) + " SMs)";
  }
  bool is_gpu() const override { return true; }

  Result<void*> allocate(int64_t bytes) override;
  void release(void* pointer) override {
    if (pointer != nullptr) static_cast<void>(cudaFree(pointer));
  }
  Status upload(void* destination, const void* source, int64_t bytes) override;
  Status download(void* destination, const void* source, int64_t bytes) override;
  Status zero(void* destination, int64_t bytes) override;

  Result<Placement> prepare(const Program& program, const Step& step) override;
  int64_t scratch_bytes(const Step& step) const override;
  Status run(const Step& step, const std::vector<const void*>& inputs,
             const std::vector<void*>& outputs, void* workspace, void* scratch) override;
  Status synchronize() override {
    return cuda_status(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize");
  }

  Result<double> time(const std::function<Status()>& enqueue) override;
  Result<std::vector<double>> time_graph(const std::function<Status()>& enqueue, int warmup,
                                         int iterations) override;

 private:
  explicit CudaBackend(const CudaBackendOptions& options) : options_(options) {}

  Result<Placement> prepare_kernel(const Program& program, const Step& step);
  Result<Placement> prepare_matmul(const Step& step);
  Result<Placement> prepare_conv(const Step& step);
  Result<Placement> prepare_pool(const Step& step);
  // Runs the planned cuDNN calls once on zeroed scratch buffers: "" when cuDNN accepts
  // them, else its error (so a form cuDNN rejects goes to the host at prepare time
  // instead of failing the run).
  Result<std::string> try_conv(const Step& step, const ConvPlan& plan);
  Status run_matmul(const MatmulPlan& plan, const std::vector<const void*>& inputs,
                    const std::vector<void*>& outputs, void* scratch);
  Status run_conv(const ConvPlan& plan, const std::vector<const void*>& inputs,
                  const std::vector<void*>& outputs, void* scratch);

  CudaBackendOptions options_;
  cudaDeviceProp properties_{};
  // Declared first, destroyed last: the kernels' code must outlive the stream's work.
  Owned<void*, dlclose> kernels_library_;
  std::optional<Status> kernels_library_status_;  // set by the first kernel step
  OwnedStream stream_;
  Owned<cublasLtHandle_t, cublasLtDestroy> cublas_;
  Owned<cudnnHandle_t, cudnnDestroy> cudnn_;
  std::string cudnn_unavailable_;  // why cuDNN steps go to the host; "" when usable
  std::map<const Step*, KernelLaunchFn> kernels_;
  std::map<const Step*, std::unique_ptr<MatmulPlan>> matmuls_;
  std::map<const Step*, std::unique_ptr<ConvPlan>> convolutions_;
  std::map<const Step*, std::unique_ptr<PoolPlan>> pools_;
};

Result<std::unique_ptr<Backend>> CudaBackend::create(const CudaBackendOptions& options) {
  int count = 0;
  cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    return Status::unavailable(cuda_error_text("cudaGetDeviceCount", error) +
                               ": no usable CUDA device");
  }
  if (count == 0)
    return Status::unavailable("cudaGetDeviceCount: 0 devices: no usable CUDA device");
  if (options.device < 0 || options.device >= count) {
    return Status::invalid_input("CUDA device " + std::to_string(options.device) +
                                 " does not exist: this machine has " + std::to_string(count) +
                                 " (0 to " + std::to_string(count - 1) + ")");
  }
  std::unique_ptr<CudaBackend> backend(new CudaBackend(options));
  error = cudaSetDevice(options.device);
  if (error != cudaSuccess) {
    return Status::unavailable(cuda_error_text("cudaSetDevice", error) + ": device " +
                               std::to_string(options.device) + " is not usable");
  }
  STITCH_RETURN_IF_ERROR(cuda_status(cudaGetDeviceProperties(&backend->properties_, options.device),
                                     "cudaGetDeviceProperties"));
  STITCH_RETURN_IF_ERROR(
      cuda_status(cudaStreamCreateWithFlags(backend->stream_.receive(), cudaStreamNonBlocking),
                  "cudaStreamCreateWithFlags"));
  STITCH_RETURN_IF_ERROR(
      cublas_status(cublasLtCreate(backend->cublas_.receive()), "cublasLtCreate"));
  // cuDNN loads its sub-libraries (libcudnn_cnn/ops/engines) lazily; a missing one
  // only sends convolution and pooling steps to the host.
  cudnnStatus_t status = cudnnCreate(backend->cudnn_.receive());
  if (status != CUDNN_STATUS_SUCCESS) {
    backend->cudnn_.reset();
    backend->cudnn_unavailable_ =
        "cuDNN is unavailable (" + cudnn_error_text("cudnnCreate", status) + ")";
  } else if ((status = cudnnSetStream(backend->cudnn_.get(), backend->stream_.get())) !=
             CUDNN_STATUS_SUCCESS) {
    backend->cudnn_unavailable_ =
        "cuDNN is unavailable (" + cudnn_error_text("cudnnSetStream", status) + ")";
  }
  if (options.verbose && !backend->cudnn_unavailable_.empty()) {
    std::cerr << "cuda: " << backend->cudnn_unavailable_ << "\n";
  }
  return std::unique_ptr<Backend>(std::move(backend));
}

Result<void*> CudaBackend::allocate(int64_t bytes) {
  STITCH_CHECK(bytes >= 0) << "allocate(" << bytes << ")";
  if (bytes == 0) return static_cast<void*>(nullptr);
  void* pointer = nullptr;
  cudaError_t error = cudaMalloc(&pointer, static_cast<size_t>(bytes));
  if (error != cudaSuccess) {
    static_cast<void>(cudaGetLastError());  // out of memory is not sticky; clear it
    size_t free_bytes = 0;
    size_t total_bytes = 0;
    std::string memory;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
      memory = "; " + std::to_string(free_bytes) + " of " + std::to_string(total_bytes) +
               " bytes are free on the device";
    }
    return Status::internal(
        cuda_error_text("cudaMalloc(" + std::to_string(bytes) + " bytes)", error) + memory);
  }
  return pointer;
}

// Copies are ordered on the backend's stream and waited for: a plain cudaMemcpy runs
// on the legacy default stream, which a non-blocking stream does not wait for, and
// from pageable memory it may return before the DMA of the last chunk has landed.
Status CudaBackend::upload(void* destination, const void* source, int64_t bytes) {
  if (bytes == 0) return Status::ok();
  STITCH_RETURN_IF_ERROR(
      cuda_status(cudaMemcpyAsync(destination, source, static_cast<size_t>(bytes),
                                  cudaMemcpyHostToDevice, stream_.get()),
                  "cudaMemcpyAsync(host to device, " + std::to_string(bytes) + " bytes)"));
  return cuda_status(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize(upload)");
}

Status CudaBackend::download(void* destination, const void* source, int64_t bytes) {
  if (bytes == 0) return Status::ok();
  STITCH_RETURN_IF_ERROR(
      cuda_status(cudaMemcpyAsync(destination, source, static_cast<size_t>(bytes),
                                  cudaMemcpyDeviceToHost, stream_.get()),
                  "cudaMemcpyAsync(device to host, " + std::to_string(bytes) + " bytes)"));
  return cuda_status(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize(download)");
}

Status CudaBackend::zero(void* destination, int64_t bytes) {
  if (bytes == 0) return Status::ok();
  return cuda_status(cudaMemsetAsync(destination, 0, static_cast<size_t>(bytes), stream_.get()),
                     "cudaMemsetAsync(" + std::to_string(bytes) + " bytes)");
}

Result<Placement> CudaBackend::prepare(const Program& program, const Step& step) {
  kernels_.erase(&step);
  matmuls_.erase(&step);
  convolutions_.erase(&step);
  pools_.erase(&step);
  switch (step.kind) {
    case StepKind::kHost:
      return refuse(step.why);
    case StepKind::kView:
      return Placement{};  // the executor aliases the buffers
    case StepKind::kKernel:
      return prepare_kernel(program, step);
    case StepKind::kLibrary:
      break;
  }
  if (step.library == "cuBLAS" || step.library == "cuBLASLt") return prepare_matmul(step);
  if (step.library == "cuDNN") {
    if (!cudnn_unavailable_.empty()) return refuse(cudnn_unavailable_);
    const ir::Graph& body = step.body.graph;
    STITCH_ASSIGN_OR_RETURN(std::vector<ir::NodeId> order, ir::topological_order(body));
    const std::string op_type = order.empty() ? "" : body.node(order[0]).op_type;
    if (op_type == "Conv") return prepare_conv(step);
    if (op_type == "MaxPool" || op_type == "AveragePool" || op_type == "GlobalAveragePool" ||
        op_type == "GlobalMaxPool") {
      return prepare_pool(step);
    }
    return refuse("cuDNN: " + (op_type.empty() ? std::string("an empty body") : op_type) +
                  " is not one of Conv, MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool");
  }
  return refuse("library \"" + step.library + "\" is not one this backend calls (cuBLAS, cuDNN)");
}

int64_t CudaBackend::scratch_bytes(const Step& step) const {
  if (auto matmul = matmuls_.find(&step); matmul != matmuls_.end()) {
    return static_cast<int64_t>(matmul->second->workspace_bytes);
  }
  if (auto conv = convolutions_.find(&step); conv != convolutions_.end()) {
    return static_cast<int64_t>(conv->second->workspace_bytes);
  }
  return 0;
}

Result<Placement> CudaBackend::prepare_kernel(const Program& program, const Step& step) {
  if (!kernels_library_status_) {
    std::string path = options_.kernels_library;
    Status status;
    if (path.empty()) {
      Result<std::string> built = build_kernels_library(program, options_, properties_);
      if (built.is_ok()) {
        path = *built;
      } else {
        status = built.status();
      }
    }
    if (status.is_ok()) {
      kernels_library_ = Owned<void*, dlclose>(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL));
      if (!kernels_library_) {
        const char* reason = dlerror();
        status = Status::invalid_input("cannot load " + path + ": " +
                                       (reason != nullptr ? reason : "dlopen failed"));
      } else if (options_.verbose) {
        std::cerr << "cuda: loaded " << path << "\n";
      }
    }
    kernels_library_status_ = status;
  }
  STITCH_RETURN_IF_ERROR(*kernels_library_status_);
  const std::string launcher = step.kernel + "_launch";
  const std::string workspace_function = step.kernel + "_workspace_bytes";
  auto launch = reinterpret_cast<KernelLaunchFn>(dlsym(kernels_library_.get(), launcher.c_str()));
  auto workspace = reinterpret_cast<KernelWorkspaceFn>(
      dlsym(kernels_library_.get(), workspace_function.c_str()));
  if (launch == nullptr || workspace == nullptr) {
    return Status::invalid_input("libstitch_kernels.so has no " +
                                 (launch == nullptr ? launcher : workspace_function) +
                                 ": it was built from other kernels than " + program.kernels_dir +
                                 " holds; rebuild it (or drop the explicit kernels library)");
  }
  const size_t workspace_bytes = workspace();
  if (static_cast<int64_t>(workspace_bytes) != step.workspace_bytes) {
    return Status::invalid_input(workspace_function + "() returns " +
                                 std::to_string(workspace_bytes) + " bytes, kernels.json says " +
                                 std::to_string(step.workspace_bytes) +
                                 ": libstitch_kernels.so is stale; rebuild it");
  }
  kernels_[&step] = launch;
  return Placement{};
}

Result<Placement> CudaBackend::prepare_matmul(const Step& step) {
  LibraryChain chain;
  STITCH_ASSIGN_OR_RETURN(std::string why, read_library_chain(step, /*channel_last=*/true, &chain));
  if (!why.empty()) return refuse("cuBLASLt: " + why);
  const ir::Node& op = *chain.op;
  if (op.op_type != "MatMul" && op.op_type != "Gemm") {
    return refuse("cuBLASLt: " + op.display_name() + " is not a MatMul or Gemm");
  }
  const ir::Graph& body = step.body.graph;
  if (op.inputs.size() < 2 || op.inputs[0] == ir::kNoId || op.inputs[1] == ir::kNoId) {
    return refuse("cuBLASLt: " + op.display_name() + " lacks an operand");
  }
  const ir::TensorType& left = body.value(op.inputs[0]).type;
  const ir::TensorType& right = body.value(op.inputs[1]).type;
  std::optional<cudaDataType_t> type = cuda_data_type(chain.output.dtype);
  if (!type || left.dtype != chain.output.dtype || right.dtype != chain.output.dtype) {
    return refuse("cuBLASLt: " + ir::to_string(left) + " x " + ir::to_string(right) + " -> " +
                  ir::to_string(chain.output) + " (only float32, float16 and bfloat16, one type)");
  }
  if (!left.is_static() || !right.is_static())
    return refuse("cuBLASLt: operands without static shapes");
  StridedGemm gemm;
  if (std::string reason = strided_gemm(body, op, &gemm); !reason.empty()) {
    return refuse("cuBLASLt: " + reason + " (" + ir::to_string(left) + " x " +
                  ir::to_string(right) + ")");
  }
  const ir::GemmShape& shape = gemm.shape;
  if (chain.bias_input >= 0 && right.dims.size() < 2) {
    return refuse("cuBLASLt: a bias with a rank-1 B (the output's last dim is then M, not N)");
  }

  auto plan = std::make_unique<MatmulPlan>();
  plan->left_input = step_input_index(step, body, op.inputs[0]);
  plan->right_input = step_input_index(step, body, op.inputs[1]);
  plan->bias_input = chain.bias_input;
  plan->residual_input = chain.residual_input;
  plan->alpha = op.op_type == "Gemm" ? op.float_attribute("alpha", 1.0f) : 1.0f;
  plan->beta = chain.residual_input >= 0 ? chain.residual_scale : 0.0f;

  STITCH_RETURN_IF_ERROR(cublas_status(
      cublasLtMatmulDescCreate(plan->operation.receive(), CUBLAS_COMPUTE_32F, CUDA_R_32F),
      "cublasLtMatmulDescCreate"));
  auto set = [&](cublasLtMatmulDescAttributes_t attribute, const auto& value, const char* name) {
    return cublas_status(
        cublasLtMatmulDescSetAttribute(plan->operation.get(), attribute, &value, sizeof(value)),
        std::string("cublasLtMatmulDescSetAttribute(") + name + ")");
  };
  // cuBLASLt's A is our B, its B our A (the row-major to column-major swap).
  const cublasOperation_t transa = shape.transpose_right ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t transb = shape.transpose_left ? CUBLAS_OP_T : CUBLAS_OP_N;
  STITCH_RETURN_IF_ERROR(set(CUBLASLT_MATMUL_DESC_TRANSA, transa, "TRANSA"));
  STITCH_RETURN_IF_ERROR(set(CUBLASLT_MATMUL_DESC_TRANSB, transb, "TRANSB"));
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  if (chain.bias_input >= 0) {
    epilogue = chain.relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
  } else if (chain.relu) {
    epilogue = CUBLASLT_EPILOGUE_RELU;
  }
  STITCH_RETURN_IF_ERROR(set(CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue, "EPILOGUE"));

  // Row-major storage of each operand per batch: A is [m][k] ([k][m] transposed), B
  // [k][n] ([n][k] transposed), D [m][n]; the bias broadcasts over batches (its batch
  // stride stays 0).
  STITCH_RETURN_IF_ERROR(
      make_layout(&plan->left_layout, *type, shape.transpose_left ? shape.k : shape.m,
                  shape.transpose_left ? shape.m : shape.k, shape.batch, gemm.left_batch_stride));
  STITCH_RETURN_IF_ERROR(make_layout(
      &plan->right_layout, *type, shape.transpose_right ? shape.n : shape.k,
      shape.transpose_right ? shape.k : shape.n, shape.batch, gemm.right_batch_stride));
  STITCH_RETURN_IF_ERROR(
      make_layout(&plan->output_layout, *type, shape.m, shape.n, shape.batch, shape.m * shape.n));

  OwnedMatmulPreference preference;
  STITCH_RETURN_IF_ERROR(cublas_status(cublasLtMatmulPreferenceCreate(preference.receive()),
                                       "cublasLtMatmulPreferenceCreate"));
  uint64_t max_workspace = kCublasMaxWorkspaceBytes;
  STITCH_RETURN_IF_ERROR(
      cublas_status(cublasLtMatmulPreferenceSetAttribute(preference.get(),
                                                         CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                         &max_workspace, sizeof(max_workspace)),
                    "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)"));
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
      cublas_.get(), plan->operation.get(), plan->right_layout.get(), plan->left_layout.get(),
      plan->output_layout.get(), plan->output_layout.get(), preference.get(), 1, &result,
      &returned);
  const std::string form = ir::to_string(left) + " x " + ir::to_string(right) + " as " +
                           std::to_string(shape.batch) + " x [" + std::to_string(shape.m) + "," +
                           std::to_string(shape.k) + "]x[" + std::to_string(shape.k) + "," +
                           std::to_string(shape.n) + "]";
  if (status == CUBLAS_STATUS_NOT_SUPPORTED || (status == CUBLAS_STATUS_SUCCESS && returned == 0)) {
    return refuse("cuBLASLt: no algorithm for " + form);
  }
  STITCH_RETURN_IF_ERROR(cublas_status(status, "cublasLtMatmulAlgoGetHeuristic (" + form + ")"));
  if (result.state != CUBLAS_STATUS_SUCCESS) {
    return refuse("cuBLASLt: " +
                  cublas_error_text("no usable algorithm for " + form, result.state));
  }
  plan->algo = result.algo;
  plan->workspace_bytes = result.workspaceSize;
  if (options_.verbose) {
    std::cerr << "cuda: " << step.name << ": cuBLASLt " << form << ", workspace "
              << plan->workspace_bytes << " bytes\n";
  }
  matmuls_[&step] = std::move(plan);
  return Placement{};
}

Result<Placement> CudaBackend::prepare_conv(const Step& step) {
  LibraryChain chain;
  STITCH_ASSIGN_OR_RETURN(std::string why,
                          read_library_chain(step, /*channel_last=*/false, &chain));
  if (!why.empty()) return refuse("cuDNN: " + why);
  const ir::Node& op = *chain.op;
  const ir::Graph& body = step.body.graph;
  if (op.inputs.size() < 2 || op.inputs[0] == ir::kNoId || op.inputs[1] == ir::kNoId) {
    return refuse("cuDNN: " + op.display_name() + " lacks an operand");
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
  Window window;
  if (std::string reason = read_window(op, spatial, kernel, true, &window); !reason.empty()) {
    return refuse("cuDNN: Conv " + reason);
  }
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
  for (auto [desc, dims] : {std::pair{&plan->input, *x_dims}, std::pair{&plan->output, *y_dims},
                            std::pair{&plan->bias, std::array<int, 4>{1, (*y_dims)[1], 1, 1}}}) {
    STITCH_ASSIGN_OR_RETURN(std::string reason, make_tensor_desc(desc, CUDNN_DATA_FLOAT, dims));
    if (!reason.empty()) return refuse("cuDNN: " + reason);
  }
  STITCH_RETURN_IF_ERROR(cudnn_status(cudnnCreateFilterDescriptor(plan->filter.receive()),
                                      "cudnnCreateFilterDescriptor"));
  cudnnStatus_t status =
      cudnnSetFilter4dDescriptor(plan->filter.get(), CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                 (*w_dims)[0], (*w_dims)[1], (*w_dims)[2], (*w_dims)[3]);
  if (status != CUDNN_STATUS_SUCCESS) {
    return refuse("cuDNN: " + cudnn_error_text("cudnnSetFilter4dDescriptor", status));
  }
  STITCH_RETURN_IF_ERROR(cudnn_status(cudnnCreateConvolutionDescriptor(plan->convolution.receive()),
                                      "cudnnCreateConvolutionDescriptor"));
  status = cudnnSetConvolution2dDescriptor(
      plan->convolution.get(), window.pad[0], window.pad[1], window.stride[0], window.stride[1],
      window.dilation[0], window.dilation[1], CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
  if (status == CUDNN_STATUS_SUCCESS) {
    status = cudnnSetConvolutionGroupCount(plan->convolution.get(), static_cast<int>(group));
  }
  // FMA only: TF32 tensor cores would miss the reference by far more than 1e-5.
  if (status == CUDNN_STATUS_SUCCESS) {
    status = cudnnSetConvolutionMathType(plan->convolution.get(), CUDNN_FMA_MATH);
  }
  if (status != CUDNN_STATUS_SUCCESS) {
    return refuse("cuDNN: " + cudnn_error_text("cudnnSetConvolution2dDescriptor", status));
  }
  std::array<int, 4> computed{};
  status = cudnnGetConvolution2dForwardOutputDim(plan->convolution.get(), plan->input.get(),
                                                 plan->filter.get(), &computed[0], &computed[1],
                                                 &computed[2], &computed[3]);
  if (status != CUDNN_STATUS_SUCCESS || computed != *y_dims) {
    return refuse("cuDNN: the convolution's output " + ir::to_string(chain.output) +
                  " is not what cuDNN computes for these pads and strides");
  }

  // The fastest algorithm by cuDNN's heuristics within the workspace limit.
  int max_algorithms = 0;
  STITCH_RETURN_IF_ERROR(
      cudnn_status(cudnnGetConvolutionForwardAlgorithmMaxCount(cudnn_.get(), &max_algorithms),
                   "cudnnGetConvolutionForwardAlgorithmMaxCount"));
  std::vector<cudnnConvolutionFwdAlgoPerf_t> candidates(
      static_cast<size_t>(std::max(max_algorithms, 1)));
  int returned = 0;
  STITCH_RETURN_IF_ERROR(cudnn_status(
      cudnnGetConvolutionForwardAlgorithm_v7(
          cudnn_.get(), plan->input.get(), plan->filter.get(), plan->convolution.get(),
          plan->output.get(), static_cast<int>(candidates.size()), &returned, candidates.data()),
      "cudnnGetConvolutionForwardAlgorithm_v7"));
  // Candidates evaluated with FMA math first; the descriptor's FMA math type rules out
  // TF32 for any of them.
  bool found = false;
  for (bool require_fma : {true, false}) {
    for (int i = 0; i < returned && !found; ++i) {
      const cudnnConvolutionFwdAlgoPerf_t& candidate = candidates[static_cast<size_t>(i)];
      if (candidate.status == CUDNN_STATUS_SUCCESS && candidate.memory <= kCudnnMaxWorkspaceBytes &&
          (!require_fma || candidate.mathType == CUDNN_FMA_MATH)) {
        plan->algo = candidate.algo;
        plan->workspace_bytes = candidate.memory;
        found = true;
      }
    }
  }
  if (!found) {
    return refuse("cuDNN: no forward algorithm for Conv " + ir::to_string(x) + " * " +
                  ir::to_string(w) + " within " + std::to_string(kCudnnMaxWorkspaceBytes) +
                  " bytes of workspace");
  }

  if (chain.relu || chain.residual_input >= 0) {
    STITCH_RETURN_IF_ERROR(cudnn_status(cudnnCreateActivationDescriptor(plan->activation.receive()),
                                        "cudnnCreateActivationDescriptor"));
    STITCH_RETURN_IF_ERROR(cudnn_status(
        cudnnSetActivationDescriptor(plan->activation.get(),
                                     chain.relu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY,
                                     CUDNN_NOT_PROPAGATE_NAN, 0.0),
        "cudnnSetActivationDescriptor"));
    // The fused call: with the identity activation only IMPLICIT_PRECOMP_GEMM is allowed.
    const cudnnConvolutionFwdAlgo_t unfused_algo = plan->algo;
    const size_t unfused_workspace = plan->workspace_bytes;
    if (!chain.relu) plan->algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
    status = cudnnGetConvolutionForwardWorkspaceSize(
        cudnn_.get(), plan->input.get(), plan->filter.get(), plan->convolution.get(),
        plan->output.get(), plan->algo, &plan->workspace_bytes);
    std::string rejected;
    if (status != CUDNN_STATUS_SUCCESS) {
      rejected = cudnn_error_text("cudnnGetConvolutionForwardWorkspaceSize", status);
    } else if (plan->workspace_bytes > kCudnnMaxWorkspaceBytes) {
      rejected = "needs " + std::to_string(plan->workspace_bytes) + " bytes of workspace";
    } else {
      if (chain.bias_input < 0) {
        const size_t bytes = static_cast<size_t>((*y_dims)[1]) * sizeof(float);
        STITCH_RETURN_IF_ERROR(
            cuda_status(cudaMalloc(plan->zero_bias.receive(), bytes), "cudaMalloc(zero bias)"));
        STITCH_RETURN_IF_ERROR(
            cuda_status(cudaMemsetAsync(plan->zero_bias.get(), 0, bytes, stream_.get()),
                        "cudaMemsetAsync(zero bias)"));
      }
      plan->fused = true;
      STITCH_ASSIGN_OR_RETURN(rejected, try_conv(step, *plan));
    }
    if (!rejected.empty()) {
      // Unfused: Forward, then AddTensor for the bias and the residual, ActivationForward.
      if (options_.verbose) {
        std::cerr << "cuda: " << step.name << ": cudnnConvolutionBiasActivationForward rejected ("
                  << rejected << "); running the epilogue as separate cuDNN calls\n";
      }
      plan->fused = false;
      plan->zero_bias.reset();
      plan->algo = unfused_algo;
      plan->workspace_bytes = unfused_workspace;
    }
  }
  if (!plan->fused) {
    STITCH_ASSIGN_OR_RETURN(std::string rejected, try_conv(step, *plan));
    if (!rejected.empty()) return refuse("cuDNN: " + rejected);
  }
  convolutions_[&step] = std::move(plan);
  return Placement{};
}

Result<std::string> CudaBackend::try_conv(const Step& step, const ConvPlan& plan) {
  // Zeroed scratch copies of every tensor the call touches, freed on return.
  std::vector<OwnedDeviceMemory> buffers;
  auto scratch = [&](size_t bytes) -> Result<void*> {
    buffers.emplace_back();
    if (bytes == 0) return static_cast<void*>(nullptr);
    STITCH_RETURN_IF_ERROR(
        cuda_status(cudaMalloc(buffers.back().receive(), bytes), "cudaMalloc(trial buffer)"));
    STITCH_RETURN_IF_ERROR(
        cuda_status(cudaMemsetAsync(buffers.back().get(), 0, bytes, stream_.get()),
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
  Status ran = run_conv(plan, inputs, {y}, workspace);
  STITCH_RETURN_IF_ERROR(
      cuda_status(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize"));
  return ran.is_ok() ? std::string() : ran.message();
}

Result<Placement> CudaBackend::prepare_pool(const Step& step) {
  const ir::Graph& body = step.body.graph;
  STITCH_ASSIGN_OR_RETURN(std::vector<ir::NodeId> order, ir::topological_order(body));
  LibraryChain chain;
  STITCH_ASSIGN_OR_RETURN(std::string why,
                          read_library_chain(step, /*channel_last=*/false, &chain));
  if (!why.empty()) return refuse("cuDNN: " + why);
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
    if (std::string reason = read_window(op, spatial, kernel, false, &window); !reason.empty()) {
      return refuse("cuDNN: " + op.op_type + " " + reason);
    }
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
    STITCH_ASSIGN_OR_RETURN(std::string reason, make_tensor_desc(desc, *type, dims));
    if (!reason.empty()) return refuse("cuDNN: " + reason);
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
  pools_[&step] = std::move(plan);
  return Placement{};
}

Status CudaBackend::run(const Step& step, const std::vector<const void*>& inputs,
                        const std::vector<void*>& outputs, void* workspace, void* scratch) {
  STITCH_CHECK(inputs.size() == step.inputs.size() && outputs.size() == step.outputs.size())
      << "step " << step.name << ": " << inputs.size() << " inputs and " << outputs.size()
      << " outputs for a step of " << step.inputs.size() << " and " << step.outputs.size();
  if (step.kind == StepKind::kView) return Status::ok();
  if (auto kernel = kernels_.find(&step); kernel != kernels_.end()) {
    return cuda_status(kernel->second(inputs.data(), outputs.data(), workspace, stream_.get()),
                       step.kernel + "_launch");
  }
  if (auto matmul = matmuls_.find(&step); matmul != matmuls_.end()) {
    return run_matmul(*matmul->second, inputs, outputs, scratch);
  }
  if (auto conv = convolutions_.find(&step); conv != convolutions_.end()) {
    return run_conv(*conv->second, inputs, outputs, scratch);
  }
  auto pool = pools_.find(&step);
  STITCH_CHECK(pool != pools_.end()) << "step " << step.name << " was not prepared on the GPU";
  const float one = 1.0f;
  const float zero = 0.0f;
  return cudnn_status(cudnnPoolingForward(cudnn_.get(), pool->second->pooling.get(), &one,
                                          pool->second->input.get(),
                                          inputs[static_cast<size_t>(pool->second->input_index)],
                                          &zero, pool->second->output.get(), outputs[0]),
                      "cudnnPoolingForward");
}

Status CudaBackend::run_matmul(const MatmulPlan& plan, const std::vector<const void*>& inputs,
                               const std::vector<void*>& outputs, void* scratch) {
  if (plan.bias_input >= 0) {
    const void* bias = inputs[static_cast<size_t>(plan.bias_input)];
    STITCH_RETURN_IF_ERROR(cublas_status(
        cublasLtMatmulDescSetAttribute(plan.operation.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                       &bias, sizeof(bias)),
        "cublasLtMatmulDescSetAttribute(BIAS_POINTER)"));
  }
  // Without a residual beta is 0 and C (= D) is not read.
  const void* c =
      plan.residual_input >= 0 ? inputs[static_cast<size_t>(plan.residual_input)] : outputs[0];
  return cublas_status(
      cublasLtMatmul(cublas_.get(), plan.operation.get(), &plan.alpha,
                     inputs[static_cast<size_t>(plan.right_input)], plan.right_layout.get(),
                     inputs[static_cast<size_t>(plan.left_input)], plan.left_layout.get(),
                     &plan.beta, c, plan.output_layout.get(), outputs[0], plan.output_layout.get(),
                     &plan.algo, scratch, plan.workspace_bytes, stream_.get()),
      "cublasLtMatmul");
}

Status CudaBackend::run_conv(const ConvPlan& plan, const std::vector<const void*>& inputs,
                             const std::vector<void*>& outputs, void* scratch) {
  const float one = 1.0f;
  const float zero = 0.0f;
  const void* x = inputs[static_cast<size_t>(plan.input_index)];
  const void* w = inputs[static_cast<size_t>(plan.filter_index)];
  const void* bias = plan.bias_input >= 0 ? inputs[static_cast<size_t>(plan.bias_input)] : nullptr;
  const void* residual =
      plan.residual_input >= 0 ? inputs[static_cast<size_t>(plan.residual_input)] : nullptr;
  void* y = outputs[0];
  if (plan.fused) {
    // y = act(conv + alpha2 * z + bias); without a residual alpha2 is 0 and z is y,
    // as ONNX Runtime's fused convolution passes it.
    const float alpha2 = residual != nullptr ? 1.0f : 0.0f;
    return cudnn_status(cudnnConvolutionBiasActivationForward(
                            cudnn_.get(), &one, plan.input.get(), x, plan.filter.get(), w,
                            plan.convolution.get(), plan.algo, scratch, plan.workspace_bytes,
                            &alpha2, plan.output.get(), residual != nullptr ? residual : y,
                            plan.bias.get(), bias != nullptr ? bias : plan.zero_bias.get(),
                            plan.activation.get(), plan.output.get(), y),
                        "cudnnConvolutionBiasActivationForward");
  }
  STITCH_RETURN_IF_ERROR(cudnn_status(
      cudnnConvolutionForward(cudnn_.get(), &one, plan.input.get(), x, plan.filter.get(), w,
                              plan.convolution.get(), plan.algo, scratch, plan.workspace_bytes,
                              &zero, plan.output.get(), y),
      "cudnnConvolutionForward"));
  if (bias != nullptr) {
    STITCH_RETURN_IF_ERROR(cudnn_status(
        cudnnAddTensor(cudnn_.get(), &one, plan.bias.get(), bias, &one, plan.output.get(), y),
        "cudnnAddTensor(bias)"));
  }
  if (residual != nullptr) {
    STITCH_RETURN_IF_ERROR(cudnn_status(
        cudnnAddTensor(cudnn_.get(), &one, plan.output.get(), residual, &one, plan.output.get(), y),
        "cudnnAddTensor(residual)"));
  }
  if (plan.relu) {
    STITCH_RETURN_IF_ERROR(
        cudnn_status(cudnnActivationForward(cudnn_.get(), plan.activation.get(), &one,
                                            plan.output.get(), y, &zero, plan.output.get(), y),
                     "cudnnActivationForward(relu)"));
  }
  return Status::ok();
}

Result<double> CudaBackend::time(const std::function<Status()>& enqueue) {
  OwnedEvent start;
  OwnedEvent stop;
  STITCH_RETURN_IF_ERROR(cuda_status(cudaEventCreate(start.receive()), "cudaEventCreate"));
  STITCH_RETURN_IF_ERROR(cuda_status(cudaEventCreate(stop.receive()), "cudaEventCreate"));
  STITCH_RETURN_IF_ERROR(
      cuda_status(cudaEventRecord(start.get(), stream_.get()), "cudaEventRecord"));
  STITCH_RETURN_IF_ERROR(enqueue());
  STITCH_RETURN_IF_ERROR(
      cuda_status(cudaEventRecord(stop.get(), stream_.get()), "cudaEventRecord"));
  STITCH_RETURN_IF_ERROR(cuda_status(cudaEventSynchronize(stop.get()), "cudaEventSynchronize"));
  float milliseconds = 0.0f;
  STITCH_RETURN_IF_ERROR(cuda_status(cudaEventElapsedTime(&milliseconds, start.get(), stop.get()),
                                     "cudaEventElapsedTime"));
  return static_cast<double>(milliseconds);
}

Result<std::vector<double>> CudaBackend::time_graph(const std::function<Status()>& enqueue,
                                                    int warmup, int iterations) {
  if (warmup < 0 || iterations < 1) {
    return Status::invalid_input("time_graph: warmup " + std::to_string(warmup) +
                                 " and iterations " + std::to_string(iterations) +
                                 " (need >= 0 and >= 1)");
  }
  // Capture: only this thread's calls are checked for capture safety.
  STITCH_RETURN_IF_ERROR(
      cuda_status(cudaStreamBeginCapture(stream_.get(), cudaStreamCaptureModeThreadLocal),
                  "cudaStreamBeginCapture"));
  Status enqueued = enqueue();
  Owned<cudaGraph_t, cudaGraphDestroy> graph;
  cudaError_t ended = cudaStreamEndCapture(stream_.get(), graph.receive());
  if (!enqueued.is_ok() || ended != cudaSuccess) {
    static_cast<void>(cudaGetLastError());  // a failed capture leaves its error behind
    if (!enqueued.is_ok()) {
      return enqueued.with_prefix(
          "capturing a CUDA graph (a host step, a synchronizing copy or an uncapturable launch "
          "cannot be captured): ");
    }
    return Status::internal(cuda_error_text("cudaStreamEndCapture", ended) +
                            ": the enqueued work cannot be captured into a CUDA graph");
  }
  Owned<cudaGraphExec_t, cudaGraphExecDestroy> executable;
  STITCH_RETURN_IF_ERROR(cuda_status(cudaGraphInstantiate(executable.receive(), graph.get(), 0),
                                     "cudaGraphInstantiate"));
  for (int i = 0; i < warmup; ++i) {
    STITCH_RETURN_IF_ERROR(
        cuda_status(cudaGraphLaunch(executable.get(), stream_.get()), "cudaGraphLaunch"));
  }
  STITCH_RETURN_IF_ERROR(synchronize());
  OwnedEvent start;
  OwnedEvent stop;
  STITCH_RETURN_IF_ERROR(cuda_status(cudaEventCreate(start.receive()), "cudaEventCreate"));
  STITCH_RETURN_IF_ERROR(cuda_status(cudaEventCreate(stop.receive()), "cudaEventCreate"));
  std::vector<double> milliseconds;
  for (int i = 0; i < iterations; ++i) {
    STITCH_RETURN_IF_ERROR(
        cuda_status(cudaEventRecord(start.get(), stream_.get()), "cudaEventRecord"));
    STITCH_RETURN_IF_ERROR(
        cuda_status(cudaGraphLaunch(executable.get(), stream_.get()), "cudaGraphLaunch"));
    STITCH_RETURN_IF_ERROR(
        cuda_status(cudaEventRecord(stop.get(), stream_.get()), "cudaEventRecord"));
    STITCH_RETURN_IF_ERROR(cuda_status(cudaEventSynchronize(stop.get()), "cudaEventSynchronize"));
    float elapsed = 0.0f;
    STITCH_RETURN_IF_ERROR(cuda_status(cudaEventElapsedTime(&elapsed, start.get(), stop.get()),
                                       "cudaEventElapsedTime"));
    milliseconds.push_back(static_cast<double>(elapsed));
  }
  return milliseconds;
}

}  // namespace

Result<std::unique_ptr<Backend>> create_cuda_backend(const CudaBackendOptions& options) {
  return CudaBackend::create(options);
}

}  // namespace stitch::runtime::cuda
