// Kernel names a profiler user can read (see kernel_name.h).
#include "emit/kernel_name.h"

#include <algorithm>
#include <map>
#include <string_view>

#include "support/escape.h"
#include "support/strings.h"

namespace stitch::emit {
namespace {

// The module path of a node name: its '/'-separated parts but the last (the node's
// own name), empty parts dropped.
std::vector<std::string> scope_of(std::string_view name) {
  std::vector<std::string> parts = support::split(name, '/');
  if (!parts.empty()) parts.pop_back();
  return parts;
}

std::string lowercase(std::string text) {
  for (char& c : text) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return text;
}

std::vector<std::string> where(const ir::Graph& graph,
                               const std::vector<std::vector<ir::NodeId>>& sites) {
  std::vector<std::string> common;
  bool first = true;
  for (const std::vector<ir::NodeId>& site : sites) {
    for (ir::NodeId id : site) {
      std::vector<std::string> scope = scope_of(graph.node(id).name);
      if (first) {
        common = std::move(scope);
        first = false;
        continue;
      }
      size_t same = 0;
      while (same < common.size() && same < scope.size() && common[same] == scope[same]) ++same;
      common.resize(same);
    }
  }
  constexpr size_t kParts = 3;
  if (common.size() > kParts) common.erase(common.begin(), common.end() - kParts);
  return common;
}

std::vector<std::string> what(const ir::Graph& graph, const std::vector<ir::NodeId>& nodes) {
  std::map<std::string, int> count;
  std::vector<std::string> order;
  for (ir::NodeId id : nodes) {
    const std::string& op = graph.node(id).op_type;
    if (count[op]++ == 0) order.push_back(op);
  }
  auto number = [&](const char* op) {
    auto it = count.find(op);
    return it == count.end() ? 0 : it->second;
  };
  auto has = [&](const char* op, int at_least = 1) { return number(op) >= at_least; };
  const int gemms = number("MatMul") + number("Gemm");
  const bool softmax = has("ReduceMax") && has("Exp") && has("ReduceSum");
  std::vector<std::string> words;
  if (softmax && gemms >= 2) return {"attention"};
  if (gemms > 0) words.push_back("matmul");
  if (softmax) words.push_back("softmax");
  if (has("ReduceMean", 2) && has("Sqrt")) words.push_back("layernorm");
  if (has("Erf") || (has("Tanh") && has("Pow"))) words.push_back("gelu");
  if (!words.empty()) return words;
  for (const std::string& op : order) {
    if (words.size() == 3) break;
    words.push_back(lowercase(support::identifier_slug(op)));
  }
  return words;
}

}  // namespace

std::string kernel_description(const ir::Graph& graph,
                               const std::vector<std::vector<ir::NodeId>>& sites) {
  if (sites.empty()) return "kernel";
  auto slug = [](const std::string& word) {
    const bool letters = std::any_of(word.begin(), word.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    });
    return letters ? lowercase(support::identifier_slug(word)) : std::string();
  };
  // What first; then the scope's parts nearest the ops, as many as still fit.
  std::string text;
  std::vector<std::string> words;
  for (const std::string& word : what(graph, sites.front())) {
    const std::string part = slug(word);
    if (part.empty() || text.size() + part.size() + 1 > kMaxDescription) continue;
    text += (text.empty() ? "" : "_") + part;
    words.push_back(part);
  }
  // A module named after its pattern ("LayerNorm") is said once.
  const std::vector<std::string> scope = where(graph, sites);
  for (size_t p = scope.size(); p-- > 0;) {
    const std::string part = slug(scope[p]);
    if (part.empty() || std::find(words.begin(), words.end(), part) != words.end()) continue;
    if (text.size() + part.size() + 1 > kMaxDescription) break;
    text = part + (text.empty() ? "" : "_") + text;
  }
  return text.empty() ? "kernel" : text;
}

}  // namespace stitch::emit
