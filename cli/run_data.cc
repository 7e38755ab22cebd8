// `stitchopt run` on the user's data (cli/run_data.h).
#include "cli/run_data.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <regex>
#include <system_error>
#include <utility>

#include "ir/core/dtype.h"
#include "onnx_import/tensor_file.h"
#include "runtime_stub/feeds.h"
#include "runtime_stub/npz.h"
#include "support/escape.h"

namespace stitch::cli {
namespace fs = std::filesystem;
namespace {

// More files than any test data set has: a mistaken path (a home directory) stops here.
constexpr size_t kMaxEntries = 100000;

// The numbered files `<prefix>_K.pb` in `directory`, by K, which must run 0, 1, ...
// without gaps.
Result<std::vector<fs::path>> numbered_files(const fs::path& directory, const std::string& prefix) {
  const std::regex pattern(prefix + "_([0-9]{1,6})\\.pb");
  std::map<int, fs::path> files;
  std::error_code error;
  size_t seen = 0;
  for (fs::directory_iterator it(directory, error), end; !error && it != end; it.increment(error)) {
    if (++seen > kMaxEntries) {
      return Status::invalid_input(directory.string() + ": has more than " +
                                   std::to_string(kMaxEntries) +
                                   " entries; is it a test data set?");
    }
    std::smatch match;
    const std::string name = it->path().filename().string();
    if (std::regex_match(name, match, pattern)) files.emplace(std::stoi(match[1]), it->path());
  }
  if (error)
    return Status::invalid_input(directory.string() + ": cannot list it: " + error.message());
  std::vector<fs::path> ordered;
  for (const auto& [index, file] : files) {
    if (index != static_cast<int>(ordered.size())) {
      return Status::invalid_input(directory.string() + ": has " + prefix + "_" +
                                   std::to_string(index) + ".pb but no " + prefix + "_" +
                                   std::to_string(ordered.size()) +
                                   ".pb; the files are numbered from 0 without gaps");
    }
    ordered.push_back(file);
  }
  return ordered;
}

// The tensors of `files`, each named by its TensorProto or else by its position in
// `model` (the model's inputs or outputs).
Result<std::vector<std::pair<std::string, ir::Tensor>>> named_tensors(
    const std::vector<fs::path>& files, const std::vector<runtime::StepTensor>& model,
    const std::string& kind) {
  std::vector<std::pair<std::string, ir::Tensor>> tensors;
  for (size_t k = 0; k < files.size(); ++k) {
    STITCH_ASSIGN_OR_RETURN(onnx_import::NamedTensor named,
                            onnx_import::read_tensor_file(files[k]));
    if (named.name.empty()) {
      if (k >= model.size()) {
        return Status::invalid_input(files[k].string() + ": has no name, and the model has only " +
                                     std::to_string(model.size()) + " " + kind + "s");
      }
      named.name = model[k].name;
    }
    tensors.emplace_back(std::move(named.name), std::move(named.tensor));
  }
  return tensors;
}

// The expected outputs, checked against the model's outputs.
Result<std::map<std::string, ir::Tensor>> expected_outputs(
    const runtime::Program& program, std::vector<std::pair<std::string, ir::Tensor>> tensors,
    const std::string& directory) {
  std::map<std::string, ir::Tensor> expected;
  for (auto& entry : tensors) {
    const std::string& name = entry.first;
    ir::Tensor& tensor = entry.second;
    auto output = std::find_if(program.outputs.begin(), program.outputs.end(),
                               [&](const runtime::StepTensor& o) { return o.name == name; });
    if (output == program.outputs.end()) {
      return Status::invalid_input(directory + ": an expected output named " +
                                   support::quote(name) + ", which the model does not have");
    }
    if (tensor.dtype != output->type.dtype || tensor.dims != output->type.dims) {
      return Status::invalid_input(directory + ": expected output " + support::quote(name) +
                                   " is " + runtime::array_text(tensor.dtype, tensor.dims) +
                                   "; the model writes " +
                                   runtime::array_text(output->type.dtype, output->type.dims));
    }
    if (!expected.emplace(name, std::move(tensor)).second) {
      return Status::invalid_input(directory + ": two expected outputs named " +
                                   support::quote(name));
    }
  }
  return expected;
}

Result<TestDataSet> read_set(const runtime::Program& program, const fs::path& directory) {
  STITCH_ASSIGN_OR_RETURN(std::vector<fs::path> inputs, numbered_files(directory, "input"));
  STITCH_ASSIGN_OR_RETURN(std::vector<fs::path> outputs, numbered_files(directory, "output"));
  if (outputs.empty()) {
    return Status::invalid_input(directory.string() +
                                 ": has no output_0.pb, so there is nothing to check the run "
                                 "against");
  }
  TestDataSet set;
  set.directory = directory.string();
  STITCH_ASSIGN_OR_RETURN(auto input_tensors, named_tensors(inputs, program.inputs, "input"));
  STITCH_ASSIGN_OR_RETURN(set.inputs,
                          runtime::bind_feeds(program, std::move(input_tensors), set.directory));
  STITCH_ASSIGN_OR_RETURN(auto output_tensors, named_tensors(outputs, program.outputs, "output"));
  STITCH_ASSIGN_OR_RETURN(set.expected,
                          expected_outputs(program, std::move(output_tensors), set.directory));
  return set;
}

bool exact(ir::DType dtype) { return !ir::dtype_is_float(dtype); }

}  // namespace

Result<std::vector<TestDataSet>> read_test_data(const runtime::Program& program,
                                                const fs::path& path) {
  std::error_code error;
  if (!fs::is_directory(path, error)) {
    return Status::invalid_input(path.string() +
                                 ": is not a directory; give a test data set (input_0.pb, "
                                 "output_0.pb, ...) or a directory of test_data_set_* sets");
  }
  if (fs::exists(path / "input_0.pb", error) || fs::exists(path / "output_0.pb", error)) {
    STITCH_ASSIGN_OR_RETURN(TestDataSet set, read_set(program, path));
    return std::vector<TestDataSet>{std::move(set)};
  }
  std::vector<std::pair<long long, fs::path>> directories;
  const std::regex pattern("test_data_set_([0-9]{1,9})");
  size_t seen = 0;
  for (fs::directory_iterator it(path, error), end; !error && it != end; it.increment(error)) {
    if (++seen > kMaxEntries) break;
    std::smatch match;
    const std::string name = it->path().filename().string();
    if (std::regex_match(name, match, pattern) && fs::is_directory(it->path())) {
      directories.emplace_back(std::stoll(match[1]), it->path());
    }
  }
  if (directories.empty()) {
    return Status::invalid_input(path.string() +
                                 ": holds neither input_0.pb nor test_data_set_* directories; "
                                 "give an ONNX test data set");
  }
  std::sort(directories.begin(), directories.end());
  std::vector<TestDataSet> sets;
  for (const auto& [index, directory] : directories) {
    STITCH_ASSIGN_OR_RETURN(TestDataSet set, read_set(program, directory));
    sets.push_back(std::move(set));
  }
  return sets;
}

Result<std::map<std::string, ir::Tensor>> read_feeds(const runtime::Program& program,
                                                     const fs::path& path) {
  STITCH_ASSIGN_OR_RETURN(runtime::NamedTensors arrays, runtime::read_npz(path));
  return runtime::bind_feeds(program, std::move(arrays), path.string());
}

Status save_outputs(const runtime::Program& program,
                    const std::map<std::string, ir::Tensor>& outputs, const fs::path& path) {
  runtime::NamedTensors ordered;
  for (const runtime::StepTensor& output : program.outputs) {
    ordered.emplace_back(output.name, outputs.at(output.name));
  }
  return runtime::write_npz(path, ordered);
}

Mismatch compare_to_expected(const ir::Tensor& got, const ir::Tensor& expected) {
  Mismatch mismatch;
  const bool half = expected.dtype == ir::DType::kFloat16 || expected.dtype == ir::DType::kBFloat16;
  const double rtol = half ? 1e-2 : 1e-3;
  const double atol = half ? 1e-3 : 1e-5;
  for (int64_t i = 0; i < expected.num_elements(); ++i) {
    bool ok;
    double a, b;
    if (exact(expected.dtype)) {
      a = static_cast<double>(got.int_at(i));
      b = static_cast<double>(expected.int_at(i));
      ok = got.int_at(i) == expected.int_at(i);
    } else {
      a = got.float_at(i);
      b = expected.float_at(i);
      if (std::isnan(b) || std::isinf(b) || std::isnan(a) || std::isinf(a)) {
        ok = (std::isnan(a) && std::isnan(b)) || a == b;
      } else {
        const double error = std::fabs(a - b);
        mismatch.max_abs_error = std::max(mismatch.max_abs_error, error);
        ok = error <= atol + rtol * std::fabs(b);
      }
    }
    if (ok) continue;
    if (mismatch.elements++ == 0) {
      mismatch.first = i;
      mismatch.got = a;
      mismatch.expected = b;
    }
  }
  return mismatch;
}

}  // namespace stitch::cli
