// What the cuBLASLt and cuDNN plans of libstitch_runtime_cuda.so share: a refusal
// (Placement with the reason a step goes to the host), small dims helpers, and the
// LibraryChain of a library step: the call and its epilogue as the plan decided it
// (Step::epilogue, artifact/library_epilogue.h), each operand bound to a step input.
#pragma once

#include <climits>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "artifact/library_epilogue.h"
#include "ir/core/graph.h"
#include "ir/core/status.h"
#include "runtime_stub/backend.h"
#include "runtime_stub/program.h"

namespace stitch::runtime::cuda {

inline Placement refuse(std::string why) { return Placement{false, std::move(why)}; }

// A library's refusal of a step: why the library has no call for it, so the step runs
// on the host (Placement::why). The planning functions of the plugin return it as a
// Status of code kUnavailable, apart from their errors (kInternal: a failed CUDA call, a
// malformed step), which fail the run.
inline Status refusal(std::string why) { return Status::unavailable(std::move(why)); }
inline bool is_refusal(const Status& status) { return status.code() == StatusCode::kUnavailable; }

// What prepare() returns for a planning function's failure `status` (not ok): a
// refusal goes to the host with why `before` + its reason + `after`; an error is
// returned as it is.
inline Result<Placement> refuse_or_fail(const Status& status, const std::string& before,
                                        const std::string& after = "") {
  STITCH_CHECK(!status.is_ok()) << "refuse_or_fail of an ok status";
  if (is_refusal(status)) return refuse(before + status.message() + after);
  return status;
}

// "[1,2,3]".
std::string dims_text(const std::vector<int64_t>& dims);
int64_t product(const std::vector<int64_t>& dims);
inline bool fits_int(int64_t value) { return value >= 0 && value <= INT_MAX; }

// One op of a library step's epilogue with its operand bound to a step input.
struct ChainOp {
  artifact::EpilogueOp op;
  int input = -1;  // bias, residual add, scale: the step input index it reads
};

// The op a library step calls and the epilogue folded into the call, as the plan
// decided it (Step::epilogue) with each operand bound to a step input. The legacy
// form (artifact::LibraryEpilogue::legacy_form) is also read into the fields below ops:
//   op(...) [+ bias] [+ residual] [-> Relu]   (the Adds in either order)
struct LibraryChain {
  const ir::Node* op = nullptr;
  ir::TensorType output;  // the op's output type, which every chain value keeps
  std::vector<ChainOp> ops;
  bool legacy = true;           // ops are the legacy form
  int bias_input = -1;          // step input index: one value per channel
  int residual_input = -1;      // step input index: the output's exact dims
  float residual_scale = 1.0f;  // Gemm's beta when its own C is the residual
  bool relu = false;
};

// The step input index body graph value `value` is bound to (Step::body_inputs names
// the body's graph input per step input); -1 when it is computed inside the body.
int step_input_index(const Step& step, const ir::Graph& body, ir::ValueId value);

// The chain of the plan's epilogue (Step::epilogue, artifact::bind_epilogue on the
// step's body), or a refusal saying why the step is not one library call with that
// epilogue (a bias or scale that is not one value per channel, a residual of another
// type); an internal error for a step whose body does not match it. `channel_last`: a
// bias or scale runs along the last dim (GEMM) rather than dim 1 (Conv).
Result<LibraryChain> read_library_chain(const Step& step, bool channel_last);

}  // namespace stitch::runtime::cuda
