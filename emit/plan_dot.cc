// out/plan.dot: the fusion plan as a Graphviz picture.
#include "emit/plan_dot.h"

#include <array>
#include <set>
#include <sstream>
#include <string_view>

#include "support/escape.h"

namespace stitch::emit {
namespace {

// Pastel fills that stay readable with black text; cycled over the groups.
constexpr std::array<const char*, 10> kPalette = {"#a6cee3", "#b2df8a", "#fb9a99", "#fdbf6f",
                                                  "#cab2d6", "#ffff99", "#8dd3c7", "#bebada",
                                                  "#fccde5", "#d9d9d9"};

// A DOT string of `text` as messages show it (support::quote's escapes for newlines,
// control characters and bytes that are not UTF-8, without its outer quotes), with
// DOT's own escapes on top.
std::string dot_string(std::string_view text) {
  std::string shown = support::quote(text);
  std::string out = "\"";
  for (char c : std::string_view(shown).substr(1, shown.size() - 2)) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// Joins escaped parts with DOT's centred line break.
std::string dot_lines(std::string_view first, std::string_view second) {
  std::string a = dot_string(first);
  std::string b = dot_string(second);
  return a.substr(0, a.size() - 1) + "\\n" + b.substr(1);
}

std::string node_label(const ir::Node& node) {
  return node.name.empty() ? dot_string(node.op_type) : dot_lines(node.op_type, node.name);
}

// "elementwise", or for a library call with its epilogue "cuDNN: bias+relu".
std::string cluster_kind(const fusion::PlannedGroup& group) {
  if (group.category != artifact::GroupCategory::kLibrary) {
    return std::string(artifact::to_string(group.category));
  }
  STITCH_CHECK(group.epilogue.has_value()) << "library group without its epilogue";
  std::string text = std::string(artifact::library_name(group.epilogue->library)) + ":";
  const std::vector<std::string> ops = group.epilogue->op_names();
  for (size_t i = 0; i < ops.size(); ++i) text += (i == 0 ? " " : "+") + ops[i];
  return text;
}

}  // namespace

std::string render_plan_dot(const ir::Graph& graph, const fusion::PlannerResult& plan,
                            const std::vector<std::string>& kernel_names) {
  std::ostringstream out;
  out << "digraph plan {\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n";
  for (ir::ValueId id : graph.graph_inputs()) {
    if (graph.value(id).is_initializer()) continue;
    out << "  " << dot_string("v:" + graph.value(id).name)
        << " [shape=diamond, label=" << dot_string(graph.value(id).name) << "];\n";
  }
  for (size_t index = 0; index < plan.groups.size(); ++index) {
    const fusion::PlannedGroup& group = plan.groups[index];
    out << "  subgraph cluster_" << index
        << " {\n    style=filled; color=" << dot_string(kPalette[index % kPalette.size()])
        << ";\n    label="
        << dot_string(kernel_names[index] + " (" + cluster_kind(group) + ", " +
                      std::to_string(group.nodes.size()) + " ops)")
        << ";\n";
    for (ir::NodeId id : group.nodes) {
      out << "    n" << id << " [label=" << node_label(graph.node(id))
          << ", style=filled, fillcolor=white];\n";
    }
    out << "  }\n";
  }
  for (const fusion::UnfusedNode& unfused : plan.unfused) {
    const ir::Node& node = graph.node(unfused.node);
    const char* shape = unfused.kind == fusion::UnfusedKind::kLibraryCall ? "box" : "ellipse";
    const char* style = unfused.kind == fusion::UnfusedKind::kNoKernel ? ", style=dashed" : "";
    out << "  n" << unfused.node << " [label=" << node_label(node) << ", shape=" << shape << style
        << "];\n";
  }
  for (ir::NodeId id : graph.node_ids()) {
    const ir::Node& node = graph.node(id);
    // One edge per value read, however often the node reads it: Graphviz slows to a
    // crawl on many parallel edges (a Sum of one input 150 times).
    std::set<ir::ValueId> drawn;
    for (ir::ValueId input : node.inputs) {
      if (input == ir::kNoId || !drawn.insert(input).second) continue;
      const ir::Value& value = graph.value(input);
      if (value.producer != ir::kNoId) {
        out << "  n" << value.producer << " -> n" << id << ";\n";
      } else if (value.is_graph_input && !value.is_initializer()) {
        out << "  " << dot_string("v:" + value.name) << " -> n" << id << ";\n";
      }
    }
  }
  for (ir::ValueId id : graph.graph_outputs()) {
    const ir::Value& value = graph.value(id);
    out << "  " << dot_string("out:" + value.name)
        << " [shape=diamond, label=" << dot_string(value.name) << "];\n";
    if (value.producer != ir::kNoId) {
      out << "  n" << value.producer << " -> " << dot_string("out:" + value.name) << ";\n";
    }
  }
  out << "}\n";
  return out.str();
}

}  // namespace stitch::emit
