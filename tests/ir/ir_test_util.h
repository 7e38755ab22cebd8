// Helpers the ir tests share: a graph from a few lines of IR text, a node by name.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "ir/core/graph.h"
#include "ir/text/text.h"

namespace stitch::ir::test_util {

// `body` between the graph header and its return of `outputs`, with the given inputs
// (opset 17); a parse error fails the test.
inline Model parse_graph(const std::string& inputs, const std::string& body,
                         const std::string& outputs = "%o") {
  const std::string text = "stitchopt.ir 1\nmodel ir_version=8 opsets={\"\":17}\ngraph \"g\" (" +
                           inputs + ") {\n" + body + "  return " + outputs + "\n}\n";
  Result<Model> model = parse_model(text, "ir_test");
  EXPECT_TRUE(model.is_ok()) << model.status().message();
  return std::move(model).value();
}

inline NodeId node_named(const Graph& graph, const std::string& name) {
  for (NodeId id : graph.node_ids()) {
    if (graph.node(id).name == name) return id;
  }
  ADD_FAILURE() << "no node " << name;
  return kNoId;
}

}  // namespace stitch::ir::test_util
