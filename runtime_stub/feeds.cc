// A model's inputs from the user's arrays (runtime_stub/feeds.h).
#include "runtime_stub/feeds.h"

#include <optional>
#include <set>
#include <utility>

#include "ir/core/dtype.h"
#include "ir/core/edit_distance.h"
#include "support/escape.h"

namespace stitch::runtime {
namespace {

std::string tensor_text(const ir::TensorType& type) { return array_text(type.dtype, type.dims); }

}  // namespace

std::string array_text(ir::DType dtype, const std::vector<int64_t>& dims) {
  // ONNX's names but for the two numpy calls otherwise ("float", "double").
  const std::string name = dtype == ir::DType::kFloat32   ? "float32"
                           : dtype == ir::DType::kFloat64 ? "float64"
                                                          : std::string(ir::dtype_onnx_name(dtype));
  return name + ir::dims_text(dims);
}

Result<std::vector<const StepTensor*>> match_feeds(const Program& program,
                                                   const std::vector<FeedType>& feeds,
                                                   const std::string& source) {
  return match_feeds(program.inputs, feeds, source);
}

Result<std::vector<const StepTensor*>> match_feeds(const std::vector<StepTensor>& inputs,
                                                   const std::vector<FeedType>& feeds,
                                                   const std::string& source) {
  std::map<std::string, const StepTensor*> wanted;
  std::vector<std::string> names;
  std::string listing;
  for (const StepTensor& input : inputs) {
    wanted.emplace(input.name, &input);
    names.push_back(input.name);
    listing += (listing.empty() ? "" : ", ") + support::printable(input.name) + " " +
               tensor_text(input.type);
  }
  std::vector<const StepTensor*> matched;
  std::set<std::string> seen;
  for (const FeedType& feed : feeds) {
    auto it = wanted.find(feed.name);
    if (it == wanted.end()) {
      std::string hint;
      if (std::optional<std::string> close = ir::closest_match(feed.name, names)) {
        hint = "; did you mean " + support::quote(*close) + "?";
      }
      return Status::invalid_input(
          source + ": the model has no input " + support::quote(feed.name) + hint +
          " (its inputs: " + (listing.empty() ? std::string("none") : listing) + ")");
    }
    const ir::TensorType& type = it->second->type;
    if (feed.dtype != type.dtype || feed.dims != type.dims) {
      return Status::invalid_input(source + ": input " + support::quote(feed.name) + " is " +
                                   array_text(feed.dtype, feed.dims) + "; the model takes " +
                                   tensor_text(type));
    }
    if (!seen.insert(feed.name).second) {
      return Status::invalid_input(source + ": two arrays for input " + support::quote(feed.name));
    }
    matched.push_back(it->second);
  }
  for (const StepTensor& input : inputs) {
    if (!seen.count(input.name)) {
      return Status::invalid_input(source + ": no array for the model's input " +
                                   support::quote(input.name) + " (" + tensor_text(input.type) +
                                   ")");
    }
  }
  return matched;
}

Result<std::map<std::string, ir::Tensor>> bind_feeds(
    const Program& program, std::vector<std::pair<std::string, ir::Tensor>> feeds,
    const std::string& source) {
  return bind_feeds(program.inputs, std::move(feeds), source);
}

Result<std::map<std::string, ir::Tensor>> bind_feeds(
    const std::vector<StepTensor>& inputs, std::vector<std::pair<std::string, ir::Tensor>> feeds,
    const std::string& source) {
  std::vector<FeedType> types;
  for (const auto& [name, tensor] : feeds) types.push_back({name, tensor.dtype, tensor.dims});
  STITCH_RETURN_IF_ERROR(match_feeds(inputs, types, source).status());
  std::map<std::string, ir::Tensor> bound;
  for (auto& [name, tensor] : feeds) bound.emplace(name, std::move(tensor));
  return bound;
}

}  // namespace stitch::runtime
