// `stitchopt run` on the user's data (docs/runtime.md, "Running on your own data"):
// inputs from an .npz (--inputs), outputs to one (--save-outputs), and ONNX test data
// sets (--test-data), checked against their expected outputs.
//
// A test data set is a directory as the ONNX model zoo and ONNX's backend tests ship
// it: input_0.pb, input_1.pb, ... and output_0.pb, ... (TensorProto files,
// onnx_import/tensor_file.h), numbered from 0 without gaps. --test-data takes one
// such directory or a directory of them (test_data_set_0, test_data_set_1, ...: every
// subdirectory whose name starts with test_data_set_, in numeric order). A tensor
// whose TensorProto has a name is the model input or output of that name; one without
// is the model's K-th input (or output), in the graph's order.
//
// An output matches its expected tensor when every element does:
//   float32, float64     |got - expected| <= 1e-5 + 1e-3 * |expected|
//   float16, bfloat16    |got - expected| <= 1e-3 + 1e-2 * |expected|
//   integers, bool       equal
// (NaN matches NaN, an infinity the same infinity): the tolerances of ONNX's backend
// test runner (rtol 1e-3) with an absolute floor for the values near zero that
// another runtime's summation order moves, and float16's 11-bit mantissa.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "ir/core/status.h"
#include "ir/core/tensor.h"
#include "runtime_stub/program.h"

namespace stitch::cli {

struct TestDataSet {
  std::string directory;
  std::map<std::string, ir::Tensor> inputs;    // checked by runtime::bind_feeds
  std::map<std::string, ir::Tensor> expected;  // by model output name
};

// The sets under `path` (one set, or a directory of test_data_set_* sets), read and
// checked against `program`'s inputs and outputs (names, dtypes, shapes).
Result<std::vector<TestDataSet>> read_test_data(const runtime::Program& program,
                                                const std::filesystem::path& path);

// The model's inputs from the .npz at `path`, checked (runtime::bind_feeds).
Result<std::map<std::string, ir::Tensor>> read_feeds(const runtime::Program& program,
                                                     const std::filesystem::path& path);

// `outputs` (in the model's output order) written to the .npz at `path`.
Status save_outputs(const runtime::Program& program,
                    const std::map<std::string, ir::Tensor>& outputs,
                    const std::filesystem::path& path);

struct Mismatch {
  int64_t elements = 0;  // elements out of tolerance
  int64_t first = -1;    // the first one's flat index, -1 when none
  double got = 0, expected = 0;
  double max_abs_error = 0;  // over the finite elements
};

// How `got` differs from `expected` (same dtype and shape) under the tolerances above.
Mismatch compare_to_expected(const ir::Tensor& got, const ir::Tensor& expected);

}  // namespace stitch::cli
