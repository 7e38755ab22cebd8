// cuBLASLt calls: MatMul / Gemm library steps with their epilogue.
#include "runtime_stub/cuda/cublaslt_gemm.h"

#include <iostream>
#include <optional>
#include <string>
#include <utility>

#include "ir/core/gemm_shape.h"
#include "runtime_stub/cuda/cuda_library_step.h"

namespace stitch::runtime::cuda {
namespace {

// cuBLASLt may pick an algorithm that needs up to this much workspace.
constexpr uint64_t kCublasMaxWorkspaceBytes = uint64_t{32} << 20;

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

// The MatMul/Gemm as one (strided batched) GEMM, or a refusal saying why it is not one.
Result<StridedGemm> strided_gemm(const ir::Graph& body, const ir::Node& op) {
  std::string why_not;
  std::optional<ir::GemmShape> found = ir::gemm_shape(body, op, &why_not);
  if (!found) return refusal(why_not);
  StridedGemm gemm;
  ir::GemmShape& shape = gemm.shape;
  shape = std::move(*found);
  std::optional<int64_t> left_stride =
      batch_stride(shape.left_batch_dims, shape.batch_dims, shape.m * shape.k);
  std::optional<int64_t> right_stride =
      batch_stride(shape.right_batch_dims, shape.batch_dims, shape.k * shape.n);
  if (!left_stride || !right_stride) {
    return refusal("MatMul batch dims " + dims_text(shape.left_batch_dims) + " x " +
                   dims_text(shape.right_batch_dims) +
                   " broadcast partially (each operand must have all of the output's batch dims " +
                   dims_text(shape.batch_dims) + " or none)");
  }
  gemm.left_batch_stride = *left_stride;
  gemm.right_batch_stride = *right_stride;
  // A batched A times one B: the batches of A are consecutive rows of one matrix.
  if (shape.batch > 1 && gemm.left_batch_stride != 0) {
    if (std::optional<ir::GemmShape> folded = ir::batches_folded_into_rows(shape)) {
      shape = std::move(*folded);
      gemm.left_batch_stride = 0;
    }
  }
  if (shape.m == 0 || shape.n == 0 || shape.k == 0 || shape.batch == 0) {
    return refusal("an empty operand or output");
  }
  if (shape.batch > INT32_MAX) return refusal("more than 2^31 batches");
  return gemm;
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

}  // namespace

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

Result<std::unique_ptr<CublasLtGemm>> CublasLtGemm::create(cudaStream_t stream, bool verbose) {
  std::unique_ptr<CublasLtGemm> gemm(new CublasLtGemm(stream, verbose));
  STITCH_RETURN_IF_ERROR(cublas_status(cublasLtCreate(gemm->handle_.receive()), "cublasLtCreate"));
  return gemm;
}

CublasLtGemm::CublasLtGemm(cudaStream_t stream, bool verbose)
    : stream_(stream), verbose_(verbose) {}

CublasLtGemm::~CublasLtGemm() = default;

void CublasLtGemm::forget(const Step& step) { plans_.erase(&step); }

int64_t CublasLtGemm::scratch_bytes(const Step& step) const {
  auto found = plans_.find(&step);
  return found == plans_.end() ? 0 : static_cast<int64_t>(found->second->workspace_bytes);
}

namespace {

// --precision tf32: float32 on TF32 tensor cores; otherwise strict float32 (fp32x3 has
// no cuBLASLt compute type on Hopper, and strict float32 is as accurate).
cublasComputeType_t compute_type(const Step& step, const LibraryChain& chain) {
  return step.products == ir::Precision::kTf32 && chain.output.dtype == ir::DType::kFloat32
             ? CUBLAS_COMPUTE_32F_FAST_TF32
             : CUBLAS_COMPUTE_32F;
}

}  // namespace

Result<Placement> CublasLtGemm::prepare(const Step& step) {
  Result<LibraryChain> read = read_library_chain(step, /*channel_last=*/true);
  if (!read.is_ok()) return refuse_or_fail(read.status(), "cuBLASLt: ");
  const LibraryChain& chain = *read;
  if (!chain.legacy) {
    return refuse("cuBLASLt: the epilogue is not a bias, a residual add and a final relu");
  }
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
  Result<StridedGemm> gemm = strided_gemm(body, op);
  if (!gemm.is_ok()) {
    return refuse_or_fail(gemm.status(), "cuBLASLt: ",
                          " (" + ir::to_string(left) + " x " + ir::to_string(right) + ")");
  }
  const ir::GemmShape& shape = gemm->shape;
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
      cublasLtMatmulDescCreate(plan->operation.receive(), compute_type(step, chain), CUDA_R_32F),
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
                  shape.transpose_left ? shape.m : shape.k, shape.batch, gemm->left_batch_stride));
  STITCH_RETURN_IF_ERROR(make_layout(
      &plan->right_layout, *type, shape.transpose_right ? shape.n : shape.k,
      shape.transpose_right ? shape.k : shape.n, shape.batch, gemm->right_batch_stride));
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
      handle_.get(), plan->operation.get(), plan->right_layout.get(), plan->left_layout.get(),
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
  if (verbose_) {
    std::cerr << "cuda: " << step.name << ": cuBLASLt " << form << ", workspace "
              << plan->workspace_bytes << " bytes\n";
  }
  plans_[&step] = std::move(plan);
  return Placement{};
}

Status CublasLtGemm::run(const Step& step, const std::vector<const void*>& inputs,
                         const std::vector<void*>& outputs, void* scratch) {
  auto found = plans_.find(&step);
  STITCH_CHECK(found != plans_.end()) << "step " << step.name << " has no cuBLASLt plan";
  const MatmulPlan& plan = *found->second;
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
      cublasLtMatmul(handle_.get(), plan.operation.get(), &plan.alpha,
                     inputs[static_cast<size_t>(plan.right_input)], plan.right_layout.get(),
                     inputs[static_cast<size_t>(plan.left_input)], plan.left_layout.get(),
                     &plan.beta, c, plan.output_layout.get(), outputs[0], plan.output_layout.get(),
                     &plan.algo, scratch, plan.workspace_bytes, stream_),
      "cublasLtMatmul");
}

}  // namespace stitch::runtime::cuda
