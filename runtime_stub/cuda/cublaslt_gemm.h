// cuBLASLt calls of libstitch_runtime_cuda.so: a MatMul or Gemm library step,
// optionally followed by a bias Add, a residual Add and a final Relu (the plan's
// epilogue, cuda_library_step.h), as one cublasLtMatmul computing
//   D = act(alpha * op(A) op(B) + beta * C + bias)
// with CUBLASLT_EPILOGUE_BIAS / RELU / RELU_BIAS and C = the residual (beta = 1, or
// Gemm's beta when Gemm's own C is the residual). cuBLASLt is column-major; a
// row-major X[r][c] is the column-major X^T (r and c swapped, ld = c), so the row-major
// D = A B is computed as the column-major D^T = B^T A^T: our B is cuBLASLt's A, our A
// its B, m = N, n = M, and the bias (one value per row of the column-major D^T) runs
// along N, the last dim, as ONNX broadcasting wants. float32 computes in
// CUBLAS_COMPUTE_32F (no TF32: results match the reference interpreter to float32
// rounding) unless the step's products are kTf32 (--precision tf32:
// CUBLAS_COMPUTE_32F_FAST_TF32), float16/bfloat16 in 32F as well. m, n, k and the batch dims come
// from ir::gemm_shape; each operand either carries exactly the output's batch dims (strided batch)
// or none / only 1s (batch stride 0); a rank-2 B under a batched A folds the batch into M (one
// large GEMM).
//
// Plans (descriptors, the chosen algorithm) are made in prepare() and keyed by the
// Step's address: run() must get the Step object prepare() got.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "ir/core/status.h"
#include "runtime_stub/backend.h"
#include "runtime_stub/cuda/cuda_plugin.h"
#include "runtime_stub/program.h"

namespace stitch::runtime::cuda {

struct MatmulPlan;

class CublasLtGemm {
 public:
  // Every call is enqueued on `stream`; `verbose` prints each plan to stderr.
  static Result<std::unique_ptr<CublasLtGemm>> create(cudaStream_t stream, bool verbose);
  ~CublasLtGemm();

  // Plans `step`, or says why it goes to the host.
  Result<Placement> prepare(const Step& step);
  void forget(const Step& step);
  bool planned(const Step& step) const { return plans_.contains(&step); }
  int64_t scratch_bytes(const Step& step) const;  // cuBLASLt's workspace; 0 when not planned
  // Precondition: planned(step).
  Status run(const Step& step, const std::vector<const void*>& inputs,
             const std::vector<void*>& outputs, void* scratch);

 private:
  CublasLtGemm(cudaStream_t stream, bool verbose);

  Owned<cublasLtHandle_t, cublasLtDestroy> handle_;
  cudaStream_t stream_;
  bool verbose_;
  std::map<const Step*, std::unique_ptr<MatmulPlan>> plans_;
};

}  // namespace stitch::runtime::cuda
