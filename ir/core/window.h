// Sliding windows: the geometry Conv and the pools share, and which of them are
// stencils (memory-bound windows the CUDA emitter generates instead of calling cuDNN).
//
// A window node reads, for every output position o of its N spatial axes, the input
// positions o * stride - pad_begin + k * dilation for every kernel position k; taps
// outside the input read nothing (a pool skips them; a Conv adds 0). auto_pad
// SAME_* pads so that the output is ceil(in / stride) (auto_pads), and with ceil_mode
// a last window that would start in the end padding is dropped (the ONNX spec and
// PyTorch agree; the reference interpreter computes it so).
//
// Pads against auto_pad, one rule for the shape rules, the window and cuDNN's
// descriptors: the spec says the two "cannot be used simultaneously", ONNX's shape
// inference lets explicit pads win and ONNX Runtime lets auto_pad win, so a node with
// both is taken only when its pads are the ones auto_pad gives (then every reading
// agrees); otherwise shape inference refuses it (ir/shapes/shape_rules_nn.cc), and
// nothing after it sees the node.
//
// Stencils (OpKind::kStencil, ir/core/op_registry.h): MaxPool, AveragePool and a
// grouped Conv (group > 1). They fuse like index functions when stencil_refusal says
// nothing: float elements, a grouped Conv with at most the caller's limit of input
// channels per group (depthwise convolutions have 1; the limit is fusion's policy,
// fusion/fusion_policy.h), a MaxPool whose Indices output nothing reads.
// A dense Conv (group 1) stays a cuDNN call: its arithmetic intensity is a GEMM's.
//
// Example: Conv(x: f32[1,32,56,56], w: f32[32,1,3,3]) {group=32, pads=[1,1,1,1]} is a
// stencil with 9 taps per output; its window has output [56,56], pad_begin [1,1].
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/core/graph.h"
#include "ir/core/status.h"

namespace stitch::ir {

// How auto_pad pads one spatial axis of `input` elements for a window of `extent`
// (kernel with dilation) and `stride` > 0: SAME_UPPER and SAME_LOWER so that the output
// is ceil(input / stride), the odd element at the end for SAME_UPPER and at the
// begin for SAME_LOWER; VALID not at all; nullopt for NOTSET (the explicit pads) and
// for any other text.
struct AxisPads {
  int64_t begin = 0;
  int64_t end = 0;
};
std::optional<AxisPads> auto_pads(std::string_view auto_pad, int64_t input, int64_t extent,
                                  int64_t stride);

struct Window {
  std::vector<int64_t> input;  // spatial input dims
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pad_begin;
  std::vector<int64_t> pad_end;
  std::vector<int64_t> output;  // spatial output dims
};

// The window of `node` (Conv, MaxPool, AveragePool) over the spatial input dims
// `input` with `kernel` (kernel_shape, or the weight's trailing dims), from its
// strides, dilations, pads and auto_pad attributes. An error without the node's name
// (the caller adds it) when the attributes do not fit or the kernel is larger than
// the padded input.
Result<Window> sliding_window(const Node& node, const std::vector<int64_t>& input,
                              std::vector<int64_t> kernel, bool ceil_mode);

// `window` over two spatial axes: a 1-D window gets a leading unit axis (kernel 1,
// stride 1, dilation 1, no pads); a 2-D window is returned as it is. The staged tiles
// of the CUDA emitter walk 1-D and 2-D windows alike (a Conformer's 1-D depthwise
// conv: one row of outputs per plane).
Window planar_window(const Window& window);

// Why the stencil-kind `node` cannot be a generated stencil (an input that is not
// float, a grouped Conv over `max_channels_per_group` input channels per group or with
// a weight of unknown shape, a MaxPool whose Indices output is read, or no stencil_of:
// a window, weight or bias that does not fit), or nullopt when it can. The limit is
// the caller's: fusion::stencil_refusal passes fusion::kStencilMaxChannelsPerGroup.
std::optional<std::string> stencil_refusal(const Graph& graph, const Node& node,
                                           int64_t max_channels_per_group);

// The stencil's window and the input elements each output combines (kernel positions
// times input channels per group), or nullopt when shapes are not static or the
// attributes do not fit (a Conv's kernel_shape, group, weight and bias dims must
// agree, as the generated code indexes by them).
struct Stencil {
  Window window;
  int64_t channels_per_group = 1;  // Conv: C / group; the pools: 1
  int64_t filters_per_group = 1;   // Conv: M / group (a channel multiplier); the pools: 1
  int64_t taps = 1;                // kernel positions x channels_per_group
  bool weighted = false;           // Conv: each tap also reads a filter weight; pools: none
};
std::optional<Stencil> stencil_of(const Graph& graph, const Node& node);

}  // namespace stitch::ir
