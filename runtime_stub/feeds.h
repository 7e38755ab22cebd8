// A model's inputs from the user's arrays: each Program::inputs entry named once, of
// its exact dtype and shape. The one check every way of feeding a compiled model goes
// through (`stitchopt run --inputs` and `--test-data`, the Python and C++ sessions, and
// the compiler's --inputs for --precision), so that a wrong feed is
// refused with the same message whichever way it came.
//
// Errors are Status::invalid_input, start with `source` (the file the arrays came
// from) and say what to change, e.g.
//   feeds.npz: the model has no input "imput"; did you mean "input"? (its inputs:
//     input float32[1,3,224,224])
//   feeds.npz: input "input" is float64[1,3,224,224]; the model takes
//     float32[1,3,224,224]
//   feeds.npz: no array for the model's input "mask" (bool[1,128])
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ir/core/status.h"
#include "ir/core/tensor.h"
#include "runtime_stub/program.h"

namespace stitch::runtime {

// An array's type as numpy names it: "float32[1,3]", "int64[]", "bool[2]".
std::string array_text(ir::DType dtype, const std::vector<int64_t>& dims);

// A feed's name and type, for checking before any of its bytes are touched.
struct FeedType {
  std::string name;
  ir::DType dtype = ir::DType::kUndefined;
  std::vector<int64_t> dims;
};

// `feeds` checked against `program`'s inputs: for each feed, in order, the input it
// is (runtime::Session binds the caller's memory with it, no copy before the upload).
Result<std::vector<const StepTensor*>> match_feeds(const Program& program,
                                                   const std::vector<FeedType>& feeds,
                                                   const std::string& source);

// The same against a list of inputs (graph_input_tensors for a model not compiled yet).
Result<std::vector<const StepTensor*>> match_feeds(const std::vector<StepTensor>& inputs,
                                                   const std::vector<FeedType>& feeds,
                                                   const std::string& source);

// `feeds` (name, array) checked against `program`'s inputs; the inputs by name.
Result<std::map<std::string, ir::Tensor>> bind_feeds(
    const Program& program, std::vector<std::pair<std::string, ir::Tensor>> feeds,
    const std::string& source);
// The same against a list of inputs.
Result<std::map<std::string, ir::Tensor>> bind_feeds(
    const std::vector<StepTensor>& inputs, std::vector<std::pair<std::string, ir::Tensor>> feeds,
    const std::string& source);

}  // namespace stitch::runtime
