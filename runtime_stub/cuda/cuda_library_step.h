// What the cuBLASLt and cuDNN plans of libstitch_runtime_cuda.so share: a refusal
// (Placement with the reason a step goes to the host), small dims helpers, and the
// LibraryChain of a library step: the call and its epilogue as the plan decided it
// (Step::epilogue, fusion/library_epilogue.h), each operand bound to a step input.
#pragma once

#include <climits>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/core/graph.h"
#include "ir/core/status.h"
#include "runtime_stub/backend.h"
#include "runtime_stub/program.h"

namespace stitch::runtime::cuda {

inline Placement refuse(std::string why) { return Placement{false, std::move(why)}; }

// "[1,2,3]".
std::string dims_text(const std::vector<int64_t>& dims);
int64_t product(const std::vector<int64_t>& dims);
inline bool fits_int(int64_t value) { return value >= 0 && value <= INT_MAX; }

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
int step_input_index(const Step& step, const ir::Graph& body, ir::ValueId value);

// Fills `chain` from the plan's epilogue (Step::epilogue, fusion::bind_epilogue on the
// step's body); returns "" or why the step is not one library call with a bias /
// residual / ReLU epilogue. `channel_last`: the bias runs along the last dim (GEMM)
// rather than dim 1 (Conv).
Result<std::string> read_library_chain(const Step& step, bool channel_last, LibraryChain* chain);

}  // namespace stitch::runtime::cuda
