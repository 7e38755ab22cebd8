// Helpers the fusion tests share: textual IR in, the shipped h100 profile, nodes by
// name. Header-only, like tests/onnx_import/onnx_test_util.h.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "cost_model/device_profile.h"
#include "ir/core/graph.h"
#include "ir/text/text.h"

namespace stitch::fusion::test_util {

// The model of a whole textual IR file; a parse error fails the test.
inline ir::Model parse_ir(const std::string& text) {
  Result<ir::Model> model = ir::parse_model(text, "test.ir");
  EXPECT_TRUE(model.is_ok()) << model.status().message();
  return std::move(model).value();
}

inline cost_model::DeviceProfile h100() {
  Result<cost_model::DeviceProfile> profile = cost_model::builtin_device_profile("h100");
  EXPECT_TRUE(profile.is_ok()) << profile.status().message();
  return std::move(profile).value();
}

// The live node called `name`; kNoId (and a test failure) when there is none.
inline ir::NodeId node_named(const ir::Graph& graph, const std::string& name) {
  for (ir::NodeId id : graph.node_ids()) {
    if (graph.node(id).name == name) return id;
  }
  ADD_FAILURE() << "no node " << name;
  return ir::kNoId;
}

}  // namespace stitch::fusion::test_util
