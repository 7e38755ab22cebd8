// Subgraph nesting of a serialized ModelProto, from the wire format
// (subgraph_nesting.h).
#include "onnx_import/subgraph_nesting.h"

#include <vector>

namespace stitch::onnx_import {
namespace {

// The messages the scan enters, and which of their fields hold the next ones (the
// field numbers of onnx.proto).
enum class Message { kModel, kGraph, kFunction, kNode, kAttribute };

std::optional<Message> nested_message(Message parent, uint64_t field) {
  switch (parent) {
    case Message::kModel:
      if (field == 7) return Message::kGraph;
      if (field == 25) return Message::kFunction;
      return std::nullopt;
    case Message::kGraph:
      return field == 1 ? std::optional(Message::kNode) : std::nullopt;
    case Message::kFunction:
      return field == 7 ? std::optional(Message::kNode) : std::nullopt;
    case Message::kNode:
      return field == 5 ? std::optional(Message::kAttribute) : std::nullopt;
    case Message::kAttribute:
      return field == 6 || field == 11 ? std::optional(Message::kGraph) : std::nullopt;
  }
  return std::nullopt;
}

bool read_varint(std::string_view bytes, size_t& at, uint64_t& value) {
  value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (at >= bytes.size()) return false;
    const auto byte = static_cast<unsigned char>(bytes[at++]);
    value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

struct Frame {
  Message message;
  size_t at;       // the next field's offset
  size_t end;      // one past the message's last byte
  int64_t depth;   // protobuf's nesting depth of this message
  int64_t graphs;  // graphs and function bodies on the path to it, itself included
};

}  // namespace

std::optional<SubgraphNesting> measure_subgraph_nesting(std::string_view bytes) {
  SubgraphNesting nesting;
  std::vector<Frame> stack = {{Message::kModel, 0, bytes.size(), 0, 0}};
  while (!stack.empty()) {
    Frame& frame = stack.back();
    if (frame.at == frame.end) {
      stack.pop_back();
      continue;
    }
    uint64_t tag = 0;
    if (!read_varint(bytes.substr(0, frame.end), frame.at, tag)) return std::nullopt;
    uint64_t skip = 0;
    switch (tag & 7) {
      case 0: {  // varint
        uint64_t value = 0;
        if (!read_varint(bytes.substr(0, frame.end), frame.at, value)) return std::nullopt;
        break;
      }
      case 1:  // fixed64
        skip = 8;
        break;
      case 5:  // fixed32
        skip = 4;
        break;
      case 2:  // length-delimited: a string, bytes, packed numbers or a message
        if (!read_varint(bytes.substr(0, frame.end), frame.at, skip)) return std::nullopt;
        break;
      default:  // groups (unused by onnx.proto) or no wire type at all
        return std::nullopt;
    }
    if (skip > frame.end - frame.at) return std::nullopt;
    const size_t begin = frame.at;
    frame.at += skip;
    std::optional<Message> child =
        (tag & 7) == 2 ? nested_message(frame.message, tag >> 3) : std::nullopt;
    if (!child) continue;
    // A function body counts as a graph: an If inside it holds a subgraph.
    const bool holds_nodes = *child == Message::kGraph || *child == Message::kFunction;
    const int64_t graphs = frame.graphs + (holds_nodes ? 1 : 0);
    const int64_t depth = frame.depth + 1;
    // The outermost graph (the main graph or a function body) is no subgraph.
    if (*child == Message::kGraph && graphs - 1 >= nesting.subgraphs) {
      nesting.subgraphs = graphs - 1;
      nesting.message_depth = depth;
    }
    stack.push_back({*child, begin, begin + skip, depth, graphs});
  }
  return nesting;
}

}  // namespace stitch::onnx_import
