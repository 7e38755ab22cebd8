// Graph analyses: topological order, reachability, dominator and post-dominator trees.
#include "ir/core/analysis.h"

#include <algorithm>
#include <functional>
#include <queue>

namespace stitch::ir {
namespace {

// Calls visit(value) for every present input, implicit inputs included.
template <typename Visit>
void for_each_input(const Node& node, Visit visit) {
  for (ValueId input : node.inputs) {
    if (input != kNoId) visit(input);
  }
  for (ValueId input : node.implicit_inputs) visit(input);
}

// Live nodes that read an output of `node`, each once, in increasing id order.
std::vector<NodeId> successors(const Graph& graph, const Node& node) {
  std::vector<NodeId> result;
  for (ValueId output : node.outputs) {
    if (output == kNoId) continue;
    for (const Use& use : graph.value(output).users) {
      if (!graph.node(use.node).dead) result.push_back(use.node);
    }
  }
  std::sort(result.begin(), result.end());
  result.erase(std::unique(result.begin(), result.end()), result.end());
  return result;
}

// Live nodes whose outputs `node` reads, each once, in increasing id order.
std::vector<NodeId> predecessors(const Graph& graph, const Node& node) {
  std::vector<NodeId> result;
  for_each_input(node, [&](ValueId input) {
    NodeId producer = graph.value(input).producer;
    if (producer != kNoId && !graph.node(producer).dead) result.push_back(producer);
  });
  std::sort(result.begin(), result.end());
  result.erase(std::unique(result.begin(), result.end()), result.end());
  return result;
}

// Among the nodes Kahn's algorithm could not order (pending > 0), finds one that
// lies on a cycle: every such node has an unordered predecessor, so walking back
// along them must revisit a node, and that node is on a cycle. Returns the smallest
// id on that cycle, so the message does not depend on where the walk started.
NodeId node_on_cycle(const Graph& graph, const std::vector<int32_t>& pending) {
  NodeId start = kNoId;
  for (NodeId id : graph.node_ids()) {
    if (pending[static_cast<size_t>(id)] > 0) {
      start = id;
      break;
    }
  }
  STITCH_CHECK(start != kNoId) << "no unordered node although the order is incomplete";
  auto unordered_predecessor = [&](NodeId id) {
    for (NodeId producer : predecessors(graph, graph.node(id))) {
      if (pending[static_cast<size_t>(producer)] > 0) return producer;
    }
    return kNoId;
  };
  std::vector<bool> visited(static_cast<size_t>(graph.node_capacity()), false);
  NodeId current = start;
  while (!visited[static_cast<size_t>(current)]) {
    visited[static_cast<size_t>(current)] = true;
    current = unordered_predecessor(current);
    STITCH_CHECK(current != kNoId) << "unordered node without unordered predecessor";
  }
  NodeId smallest = current;
  for (NodeId id = unordered_predecessor(current); id != current; id = unordered_predecessor(id)) {
    smallest = std::min(smallest, id);
  }
  return smallest;
}

}  // namespace

Result<std::vector<NodeId>> topological_order(const Graph& graph) {
  std::vector<int32_t> pending(static_cast<size_t>(graph.node_capacity()), 0);
  std::priority_queue<NodeId, std::vector<NodeId>, std::greater<>> ready;
  auto count_inputs = [&](const Node& node) {
    int32_t count = 0;
    for_each_input(node, [&](ValueId input) {
      if (graph.value(input).producer != kNoId) ++count;
    });
    return count;
  };
  std::vector<NodeId> live = graph.node_ids();
  for (NodeId id : live) {
    pending[static_cast<size_t>(id)] = count_inputs(graph.node(id));
    if (pending[static_cast<size_t>(id)] == 0) ready.push(id);
  }
  std::vector<NodeId> order;
  order.reserve(live.size());
  while (!ready.empty()) {
    NodeId id = ready.top();
    ready.pop();
    order.push_back(id);
    for (ValueId output : graph.node(id).outputs) {
      if (output == kNoId) continue;
      for (const Use& use : graph.value(output).users) {
        if (--pending[static_cast<size_t>(use.node)] == 0) ready.push(use.node);
      }
    }
  }
  if (order.size() != live.size()) {
    return Status::invalid_input("the graph has a cycle through node " +
                                 graph.node(node_on_cycle(graph, pending)).display_name() +
                                 "; ONNX graphs must be acyclic: re-export the model");
  }
  return order;
}

Result<Reachability> Reachability::build(const Graph& graph) {
  STITCH_ASSIGN_OR_RETURN(std::vector<NodeId> order, topological_order(graph));
  Reachability reachability;
  reachability.words_ = (graph.node_capacity() + 63) / 64;
  auto words = static_cast<size_t>(reachability.words_);
  reachability.bits_.assign(static_cast<size_t>(graph.node_capacity()) * words, 0);
  // In reverse topological order every successor's row is final when it is merged.
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    uint64_t* row = &reachability.bits_[static_cast<size_t>(*it) * words];
    for (NodeId successor : successors(graph, graph.node(*it))) {
      const uint64_t* successor_row = &reachability.bits_[static_cast<size_t>(successor) * words];
      for (size_t word = 0; word < words; ++word) row[word] |= successor_row[word];
      row[static_cast<size_t>(successor) / 64] |= uint64_t{1} << (successor % 64);
    }
  }
  return reachability;
}

bool Reachability::reaches(NodeId from, NodeId to) const {
  auto words = static_cast<size_t>(words_);
  STITCH_CHECK(from >= 0 && to >= 0 && static_cast<size_t>(from) * words < bits_.size() &&
               static_cast<size_t>(to) / 64 < words)
      << "node id out of range: " << from << " -> " << to;
  return (bits_[static_cast<size_t>(from) * words + static_cast<size_t>(to) / 64] >> (to % 64)) &
         1u;
}

Result<DominatorTree> DominatorTree::build(const Graph& graph, bool post) {
  STITCH_ASSIGN_OR_RETURN(std::vector<NodeId> order, topological_order(graph));
  if (post) std::reverse(order.begin(), order.end());
  std::vector<std::vector<NodeId>> preds;
  std::vector<bool> from_root;
  preds.reserve(order.size());
  for (NodeId id : order) {
    const Node& node = graph.node(id);
    preds.push_back(post ? successors(graph, node) : predecessors(graph, node));
    bool exits = false;
    if (post) {
      for (ValueId output : node.outputs) {
        if (output != kNoId && graph.value(output).is_graph_output) exits = true;
      }
    }
    from_root.push_back(exits);
  }
  return from_order(graph.node_capacity(), order, preds, from_root);
}

Result<DominatorTree> DominatorTree::post_dominators(const Graph& graph,
                                                     const std::vector<NodeId>& nodes,
                                                     const std::set<ValueId>& exits) {
  std::vector<NodeId> order(nodes.rbegin(), nodes.rend());
  std::vector<int32_t> position(static_cast<size_t>(graph.node_capacity()), -1);
  for (size_t i = 0; i < order.size(); ++i) {
    position[static_cast<size_t>(order[i])] = static_cast<int32_t>(i);
  }
  std::vector<std::vector<NodeId>> preds(order.size());
  std::vector<bool> from_root(order.size(), false);
  for (size_t i = 0; i < order.size(); ++i) {
    for (ValueId output : graph.node(order[i]).outputs) {
      if (output == kNoId) continue;
      if (exits.count(output)) from_root[i] = true;
      for (const Use& use : graph.value(output).users) {
        const int32_t user = position[static_cast<size_t>(use.node)];
        if (user < 0) continue;
        if (static_cast<size_t>(user) >= i) {
          return Status::invalid_input("node " + graph.node(use.node).display_name() +
                                       " reads node " + graph.node(order[i]).display_name() +
                                       " but comes before it: the subset is not in "
                                       "topological order");
        }
        preds[i].push_back(use.node);
      }
    }
    std::sort(preds[i].begin(), preds[i].end());
    preds[i].erase(std::unique(preds[i].begin(), preds[i].end()), preds[i].end());
  }
  return from_order(graph.node_capacity(), order, preds, from_root);
}

DominatorTree DominatorTree::from_order(int32_t node_capacity, const std::vector<NodeId>& order,
                                        const std::vector<std::vector<NodeId>>& preds,
                                        const std::vector<bool>& from_root) {
  auto capacity = static_cast<size_t>(node_capacity);
  // Position in the processing order, the virtual root being position 0. In a DAG
  // an immediate dominator always comes earlier in this order, which is what
  // Cooper-Harvey-Kennedy's intersect needs; one pass over the order suffices
  // because every predecessor is final before its successors are visited.
  const int32_t kRoot = node_capacity;
  std::vector<int32_t> position(capacity + 1, -1);
  position[static_cast<size_t>(kRoot)] = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    position[static_cast<size_t>(order[i])] = static_cast<int32_t>(i + 1);
  }
  std::vector<int32_t> idom(capacity + 1, kNoId);
  idom[static_cast<size_t>(kRoot)] = kRoot;
  auto intersect = [&](int32_t a, int32_t b) {
    while (a != b) {
      while (position[static_cast<size_t>(a)] > position[static_cast<size_t>(b)]) {
        a = idom[static_cast<size_t>(a)];
      }
      while (position[static_cast<size_t>(b)] > position[static_cast<size_t>(a)]) {
        b = idom[static_cast<size_t>(b)];
      }
    }
    return a;
  };
  for (size_t i = 0; i < order.size(); ++i) {
    const std::vector<NodeId>& node_preds = preds[i];
    int32_t dominator = from_root[i] || node_preds.empty() ? kRoot : node_preds.front();
    for (NodeId pred : node_preds) dominator = intersect(dominator, pred);
    idom[static_cast<size_t>(order[i])] = dominator;
  }

  DominatorTree tree;
  tree.idom_.assign(capacity, kNoId);
  std::vector<std::vector<int32_t>> children(capacity + 1);
  for (NodeId id : order) {
    int32_t dominator = idom[static_cast<size_t>(id)];
    tree.idom_[static_cast<size_t>(id)] = dominator == kRoot ? kNoId : dominator;
    children[static_cast<size_t>(dominator)].push_back(id);
  }
  // Pre/post numbers of a depth-first walk of the tree: a dominates b exactly when
  // b's interval lies inside a's.
  tree.enter_.assign(capacity, -1);
  tree.leave_.assign(capacity, -1);
  int32_t clock = 0;
  std::vector<std::pair<int32_t, size_t>> stack = {{kRoot, 0}};
  while (!stack.empty()) {
    auto& [current, next_child] = stack.back();
    const std::vector<int32_t>& kids = children[static_cast<size_t>(current)];
    if (next_child < kids.size()) {
      int32_t child = kids[next_child++];
      tree.enter_[static_cast<size_t>(child)] = clock++;
      stack.emplace_back(child, 0);
      continue;
    }
    if (current != kRoot) tree.leave_[static_cast<size_t>(current)] = clock++;
    stack.pop_back();
  }
  return tree;
}

Result<DominatorTree> DominatorTree::dominators(const Graph& graph) { return build(graph, false); }

Result<DominatorTree> DominatorTree::post_dominators(const Graph& graph) {
  return build(graph, true);
}

NodeId DominatorTree::immediate_dominator(NodeId node) const {
  STITCH_CHECK(node >= 0 && static_cast<size_t>(node) < idom_.size()) << "node id " << node;
  return idom_[static_cast<size_t>(node)];
}

bool DominatorTree::dominates(NodeId a, NodeId b) const {
  STITCH_CHECK(a >= 0 && b >= 0 && static_cast<size_t>(a) < enter_.size() &&
               static_cast<size_t>(b) < enter_.size())
      << "node id out of range: " << a << ", " << b;
  auto ia = static_cast<size_t>(a);
  auto ib = static_cast<size_t>(b);
  if (enter_[ia] < 0 || enter_[ib] < 0) return false;  // dead nodes
  return enter_[ia] <= enter_[ib] && leave_[ib] <= leave_[ia];
}

}  // namespace stitch::ir
