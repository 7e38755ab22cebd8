// A "stitchopt" node carrying given attributes, for the fused node's readers
// (artifact/fused_node_attributes.h, artifact/library_epilogue.h) under test.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ir/core/graph.h"

namespace stitch::artifact::test_util {

// Node `name` of op stitch_k0 in domain "stitchopt"; error messages name it.
inline ir::Node fused_node(std::string name, std::vector<ir::Attribute> attributes) {
  ir::Node node;
  node.name = std::move(name);
  node.op_type = "stitch_k0";
  node.domain = "stitchopt";
  node.attributes = std::move(attributes);
  return node;
}

}  // namespace stitch::artifact::test_util
