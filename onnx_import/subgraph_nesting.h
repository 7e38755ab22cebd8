// How deeply a serialized ModelProto nests subgraphs, read from the wire format
// without protobuf's parser.
//
// Protobuf refuses messages nested deeper than its recursion limit (100 by default),
// and every If, Loop or Scan body costs three levels (AttributeProto.g ->
// GraphProto.node -> NodeProto.attribute), so a model with more than about 31
// subgraphs inside each other does not parse. Its parse error cannot tell that from a
// truncated file; this scan, which follows only the fields that hold graphs, can. It
// keeps its own stack (no recursion), so any depth is safe to measure.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace stitch::onnx_import {

struct SubgraphNesting {
  // The most subgraphs inside each other (0: only the main graph and functions).
  int64_t subgraphs = 0;
  // Protobuf's nesting depth of that innermost GraphProto (the ModelProto is 0, its
  // graph 1).
  int64_t message_depth = 0;
};

// Nullopt when `bytes` is not well-formed wire data along the graph-holding fields:
// ModelProto.graph and .functions, GraphProto.node, FunctionProto.node,
// NodeProto.attribute, AttributeProto.g and .graphs.
std::optional<SubgraphNesting> measure_subgraph_nesting(std::string_view bytes);

}  // namespace stitch::onnx_import
