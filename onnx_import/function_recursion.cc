// Recursive model-local functions (function_recursion.h).
#include "onnx_import/function_recursion.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ir/core/op_registry.h"
#include "support/escape.h"

namespace stitch::onnx_import {
namespace {

using NodeList = google::protobuf::RepeatedPtrField<onnx::NodeProto>;

// callees[f]: the functions function f calls, by index, in node order.
std::vector<std::vector<int>> call_graph(const onnx::ModelProto& model) {
  const auto& functions = model.functions();
  auto key = [](const std::string& domain, const std::string& name) {
    return std::pair(ir::is_default_domain(domain) ? std::string() : domain, name);
  };
  std::map<std::pair<std::string, std::string>, int> index;
  for (int i = 0; i < functions.size(); ++i) {
    index.emplace(key(functions[i].domain(), functions[i].name()), i);
  }
  std::vector<std::vector<int>> callees(static_cast<size_t>(functions.size()));
  for (int i = 0; i < functions.size(); ++i) {
    std::vector<const NodeList*> bodies = {&functions[i].node()};
    while (!bodies.empty()) {
      const NodeList* nodes = bodies.back();
      bodies.pop_back();
      for (const onnx::NodeProto& node : *nodes) {
        auto called = index.find(key(node.domain(), node.op_type()));
        if (called != index.end()) callees[static_cast<size_t>(i)].push_back(called->second);
        for (const onnx::AttributeProto& attribute : node.attribute()) {
          if (attribute.has_g()) bodies.push_back(&attribute.g().node());
          for (const onnx::GraphProto& graph : attribute.graphs()) bodies.push_back(&graph.node());
        }
      }
    }
  }
  return callees;
}

// The first cycle of a depth-first search, as function indices from a function back
// to itself; empty when there is none.
std::vector<int> find_cycle(const std::vector<std::vector<int>>& callees) {
  enum class Visit { kNew, kOnPath, kDone };
  std::vector<Visit> visits(callees.size(), Visit::kNew);
  struct Step {
    int function;
    size_t next_call;
  };
  for (size_t root = 0; root < callees.size(); ++root) {
    if (visits[root] != Visit::kNew) continue;
    std::vector<Step> path = {{static_cast<int>(root), 0}};
    visits[root] = Visit::kOnPath;
    while (!path.empty()) {
      Step& step = path.back();
      const std::vector<int>& calls = callees[static_cast<size_t>(step.function)];
      if (step.next_call == calls.size()) {
        visits[static_cast<size_t>(step.function)] = Visit::kDone;
        path.pop_back();
        continue;
      }
      const int callee = calls[step.next_call++];
      if (visits[static_cast<size_t>(callee)] == Visit::kNew) {
        visits[static_cast<size_t>(callee)] = Visit::kOnPath;
        path.push_back({callee, 0});
      } else if (visits[static_cast<size_t>(callee)] == Visit::kOnPath) {
        auto first = std::find_if(path.begin(), path.end(),
                                  [&](const Step& on_path) { return on_path.function == callee; });
        std::vector<int> cycle;
        for (auto it = first; it != path.end(); ++it) cycle.push_back(it->function);
        cycle.push_back(callee);
        return cycle;
      }
    }
  }
  return {};
}

}  // namespace

Status check_function_recursion(const onnx::ModelProto& model) {
  const std::vector<int> cycle = find_cycle(call_graph(model));
  if (cycle.empty()) return Status::ok();
  auto name = [&](int i) {
    const onnx::FunctionProto& function = model.functions(i);
    return support::quote_bounded(
        function.domain().empty() ? function.name() : function.domain() + "." + function.name());
  };
  // The chain is cut after 16 functions: a hostile model may chain any number.
  std::string chain;
  for (size_t i = 0; i < cycle.size() && i < support::kMaxListedItems; ++i) {
    chain += (i == 0 ? "" : " -> ") + name(cycle[i]);
  }
  if (cycle.size() > support::kMaxListedItems) chain += " -> ...";
  return Status::invalid_input(
      "model-local function " + name(cycle.front()) + " calls itself (" +
      std::to_string(cycle.size() - 1) + (cycle.size() == 2 ? " call: " : " calls: ") + chain +
      "); a function cannot be recursive: remove the call or write the body out (ONNX Runtime "
      "and the ONNX checker refuse such a model too)");
}

}  // namespace stitch::onnx_import
