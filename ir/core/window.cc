// Sliding windows and stencils (see window.h).
#include "ir/core/window.h"

#include <algorithm>

#include "ir/core/dtype.h"
#include "ir/core/op_registry.h"

namespace stitch::ir {

std::optional<AxisPads> auto_pads(std::string_view auto_pad, int64_t input, int64_t extent,
                                  int64_t stride) {
  if (auto_pad == "VALID") return AxisPads{0, 0};
  if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") return std::nullopt;
  const int64_t residual = input % stride;
  const int64_t total = std::max<int64_t>(0, extent - (residual == 0 ? stride : residual));
  const int64_t small = total / 2;
  const int64_t begin = auto_pad == "SAME_UPPER" ? small : total - small;
  return AxisPads{begin, total - begin};
}

Result<Window> sliding_window(const Node& node, const std::vector<int64_t>& input,
                              std::vector<int64_t> kernel, bool ceil_mode) {
  const size_t rank = input.size();
  Window w;
  w.input = input;
  w.kernel = std::move(kernel);
  w.strides = node.ints_attribute("strides", std::vector<int64_t>(rank, 1));
  w.dilations = node.ints_attribute("dilations", std::vector<int64_t>(rank, 1));
  std::vector<int64_t> pads = node.ints_attribute("pads", std::vector<int64_t>(2 * rank, 0));
  if (w.kernel.size() != rank || w.strides.size() != rank || w.dilations.size() != rank ||
      pads.size() != 2 * rank) {
    return Status::invalid_input("kernel_shape, strides, dilations or pads do not match the " +
                                 std::to_string(rank) +
                                 " spatial axes of the input; fix the attributes");
  }
  std::string auto_pad = node.string_attribute("auto_pad", "NOTSET");
  for (size_t d = 0; d < rank; ++d) {
    if (w.strides[d] <= 0 || w.dilations[d] <= 0 || w.kernel[d] <= 0) {
      return Status::invalid_input("has a stride, dilation or kernel dim <= 0; fix the attributes");
    }
    const int64_t extent = (w.kernel[d] - 1) * w.dilations[d] + 1;
    int64_t begin = pads[d];
    int64_t end = pads[d + rank];
    int64_t out = 0;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const AxisPads same = *auto_pads(auto_pad, input[d], extent, w.strides[d]);
      begin = same.begin;
      end = same.end;
      out = (input[d] + w.strides[d] - 1) / w.strides[d];
    } else if (auto_pad == "VALID") {
      begin = end = 0;
      out = input[d] >= extent ? (input[d] - extent) / w.strides[d] + 1 : 0;
    } else if (auto_pad == "NOTSET") {
      int64_t span = input[d] + begin + end - extent;
      if (span < 0) {
        return Status::invalid_input("the kernel (extent " + std::to_string(extent) +
                                     ") is larger than the padded input on spatial axis " +
                                     std::to_string(d) + "; fix kernel_shape or pads");
      }
      out = (ceil_mode ? (span + w.strides[d] - 1) / w.strides[d] : span / w.strides[d]) + 1;
      // A window starting in the end padding is dropped.
      if (ceil_mode && (out - 1) * w.strides[d] >= input[d] + begin) --out;
    } else {
      return Status::invalid_input("has auto_pad \"" + auto_pad +
                                   "\"; use NOTSET, SAME_UPPER, SAME_LOWER or VALID");
    }
    w.pad_begin.push_back(begin);
    w.pad_end.push_back(end);
    w.output.push_back(out);
  }
  return w;
}

namespace {

const TensorType* type_of(const Graph& graph, const Node& node, size_t input) {
  if (node.inputs.size() <= input || node.inputs[input] == kNoId) return nullptr;
  return &graph.value(node.inputs[input]).type;
}

}  // namespace

std::optional<std::string> stencil_refusal(const Graph& graph, const Node& node,
                                           int64_t max_channels_per_group) {
  const TensorType* x = type_of(graph, node, 0);
  if (x != nullptr && !dtype_is_float(x->dtype)) {
    return node.op_type + " of " + std::string(dtype_name(x->dtype)) +
           " elements: runs as its own kernel";
  }
  if (node.op_type == "MaxPool") {
    if (node.outputs.size() > 1 && node.outputs[1] != kNoId &&
        (!graph.value(node.outputs[1]).users.empty() ||
         graph.value(node.outputs[1]).is_graph_output)) {
      return "MaxPool's Indices output is read: runs as its own kernel";
    }
  }
  if (node.op_type == "Conv") {
    const TensorType* w = type_of(graph, node, 1);
    if (w == nullptr || !w->is_static() || w->dims.size() < 3) {
      return "grouped Conv with a weight of unknown shape: cuDNN library call";
    }
    if (w->dims[1] > max_channels_per_group) {
      return "grouped Conv with " + std::to_string(w->dims[1]) +
             " input channels per group (a stencil takes at most " +
             std::to_string(max_channels_per_group) + "): cuDNN library call";
    }
  }
  if (!stencil_of(graph, node)) {
    return node.op_type +
           ": its window, weight or bias does not fit its input; runs as its own kernel";
  }
  return std::nullopt;
}

Window planar_window(const Window& window) {
  if (window.input.size() != 1) return window;
  auto with_unit = [](int64_t unit, const std::vector<int64_t>& dims) {
    std::vector<int64_t> result = {unit};
    result.insert(result.end(), dims.begin(), dims.end());
    return result;
  };
  return Window{with_unit(1, window.input),     with_unit(1, window.kernel),
                with_unit(1, window.strides),   with_unit(1, window.dilations),
                with_unit(0, window.pad_begin), with_unit(0, window.pad_end),
                with_unit(1, window.output)};
}

std::optional<Stencil> stencil_of(const Graph& graph, const Node& node) {
  if (op_kind(node) != OpKind::kStencil) return std::nullopt;
  const TensorType* x = type_of(graph, node, 0);
  if (x == nullptr || !x->is_static() || x->dims.size() < 3) return std::nullopt;
  std::vector<int64_t> spatial(x->dims.begin() + 2, x->dims.end());
  Stencil stencil;
  std::vector<int64_t> kernel = node.ints_attribute("kernel_shape", {});
  if (node.op_type == "Conv") {
    stencil.weighted = true;
    // The generated code indexes the weight and the bias by these dims: every one must
    // agree (a model is untrusted input), as the reference interpreter requires.
    const TensorType* w = type_of(graph, node, 1);
    if (w == nullptr || !w->is_static() || w->dims.size() != x->dims.size()) return std::nullopt;
    const std::vector<int64_t> weight_kernel(w->dims.begin() + 2, w->dims.end());
    if (kernel.empty()) kernel = weight_kernel;
    const int64_t group = node.int_attribute("group", 1);
    if (kernel != weight_kernel || group <= 0 || w->dims[0] % group != 0 ||
        x->dims[1] != w->dims[1] * group) {
      return std::nullopt;
    }
    const TensorType* bias = type_of(graph, node, 2);
    if (bias != nullptr && (!bias->is_static() || bias->num_elements() != w->dims[0])) {
      return std::nullopt;
    }
    stencil.channels_per_group = w->dims[1];
    stencil.filters_per_group = w->dims[0] / group;
  }
  const bool ceil_mode = node.op_type != "Conv" && node.int_attribute("ceil_mode", 0) != 0;
  Result<Window> window = sliding_window(node, spatial, kernel, ceil_mode);
  if (!window.is_ok()) return std::nullopt;
  stencil.window = std::move(window).value();
  stencil.taps = stencil.channels_per_group;
  for (int64_t k : stencil.window.kernel) stencil.taps *= k;
  return stencil;
}

}  // namespace stitch::ir
