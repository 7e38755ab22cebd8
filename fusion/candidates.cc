// Candidate fusion patterns: substitution, exploratory and packing, all convex.
//
// Exploration evaluates ~10 node sets per graph node, so the per-set work avoids
// allocation: one cost_model::PatternScorer scores every set (per-node facts kept,
// scratch reused), NodeSetMemo keeps the sets in one arena, explore() grows a set
// in per-depth scratch, and an accepted set stays a Found record (memo index and
// score) until take_patterns builds the sorted Pattern list.
#include "fusion/candidates.h"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <span>
#include <unordered_map>
#include <utility>

#include "fusion/epilogue.h"
#include "fusion/fusion_policy.h"
#include "ir/core/analysis.h"
#include "ir/core/dtype.h"
#include "ir/core/op_registry.h"
#include "ir/core/windowed_reachability.h"

namespace stitch::fusion {
namespace {

using ir::NodeId;
using NodeSet = std::vector<NodeId>;       // sorted ascending, unique
using NodeSpan = std::span<const NodeId>;  // a NodeSet stored elsewhere

// Units reading one value that packing pairs up, at most (bounds the pairs to 28 per value).
constexpr size_t kSiblingsPerValue = 8;
static_assert(kSiblingsPerValue < 256, "packing counts siblings per value in a uint8_t");

bool is_constant_node(const ir::Node& node) { return node.op_type == "Constant"; }

bool in_set(NodeSpan nodes, NodeId id) {
  return std::binary_search(nodes.begin(), nodes.end(), id);
}

NodeSet set_union(NodeSpan a, NodeSpan b) {
  NodeSet result;
  result.reserve(a.size() + b.size());
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(result));
  return result;
}

bool intersects(NodeSpan a, NodeSpan b) {
  auto i = a.begin();
  auto j = b.begin();
  while (i != a.end() && j != b.end()) {
    if (*i < *j) {
      ++i;
    } else if (*j < *i) {
      ++j;
    } else {
      return true;
    }
  }
  return false;
}

// What evaluating a node set concluded, and whether exploration expanded it.
enum class Outcome { kAccepted, kDropped, kNonConvex, kInfeasible };
struct Memo {
  Outcome outcome = Outcome::kDropped;
  bool explored = false;  // exploration already expanded this set
};

// Every node set evaluated so far, with its Memo: an open-addressing hash table
// (linear probing, at most half full) whose keys lie back to back in one arena, so
// a lookup allocates nothing and a new set costs one append. Looked up, never
// iterated, so its layout cannot leak into the output.
class NodeSetMemo {
 public:
  // The index of `nodes`' Memo, and whether this call added it (with a default Memo).
  std::pair<size_t, bool> find_or_insert(const NodeSet& nodes) {
    STITCH_CHECK(!sealed_) << "node set looked up after the memo was sealed";
    if (2 * (memos_.size() + 1) > slots_.size()) grow();
    uint64_t hash = hash_of(nodes);
    size_t mask = slots_.size() - 1;
    for (size_t slot = static_cast<size_t>(hash) & mask;; slot = (slot + 1) & mask) {
      Slot& entry = slots_[slot];
      if (entry.index == kEmpty) {
        entry = Slot{hash, static_cast<uint32_t>(memos_.size())};
        offsets_.push_back(arena_.size() + nodes.size());
        arena_.insert(arena_.end(), nodes.begin(), nodes.end());
        memos_.emplace_back();
        return {entry.index, true};
      }
      if (entry.hash == hash && equals(entry.index, nodes)) return {entry.index, false};
    }
  }

  // Frees the hash index once no set will be looked up again: nodes() still
  // answers, find_or_insert may not be called. The index is a third of the memo on
  // long chains.
  void seal() {
    slots_ = std::vector<Slot>();  // `= {}` would keep the capacity
    sealed_ = true;
  }

  // Both valid until the next find_or_insert.
  Memo& at(size_t index) { return memos_[index]; }
  NodeSpan nodes(size_t index) const {
    size_t begin = index == 0 ? 0 : offsets_[index - 1];
    return NodeSpan(arena_.data() + begin, offsets_[index] - begin);
  }

 private:
  static constexpr uint32_t kEmpty = UINT32_MAX;
  struct Slot {
    uint64_t hash = 0;
    uint32_t index = kEmpty;  // into memos_ and the arena
  };

  static uint64_t hash_of(const NodeSet& nodes) {
    uint64_t hash = nodes.size();
    for (NodeId id : nodes) {
      // splitmix64's finalizer per element: ids differ in few low bits.
      uint64_t mixed =
          hash + static_cast<uint64_t>(static_cast<uint32_t>(id)) + 0x9e3779b97f4a7c15ULL;
      mixed = (mixed ^ (mixed >> 30)) * 0xbf58476d1ce4e5b9ULL;
      mixed = (mixed ^ (mixed >> 27)) * 0x94d049bb133111ebULL;
      hash = mixed ^ (mixed >> 31);
    }
    return hash;
  }

  bool equals(uint32_t index, const NodeSet& nodes) const {
    NodeSpan stored = this->nodes(index);
    return stored.size() == nodes.size() && std::equal(nodes.begin(), nodes.end(), stored.begin());
  }

  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(std::max<size_t>(1024, 2 * old.size()), Slot{});
    STITCH_CHECK(memos_.size() < kEmpty) << "too many node sets for the candidate memo";
    size_t mask = slots_.size() - 1;
    for (const Slot& entry : old) {
      if (entry.index == kEmpty) continue;
      size_t slot = static_cast<size_t>(entry.hash) & mask;
      while (slots_[slot].index != kEmpty) slot = (slot + 1) & mask;
      slots_[slot] = entry;
    }
  }

  std::vector<Slot> slots_;      // size a power of two
  std::vector<NodeId> arena_;    // the sets, back to back
  std::vector<size_t> offsets_;  // end of set i in the arena
  std::vector<Memo> memos_;
  bool sealed_ = false;
};

using Clock = std::chrono::steady_clock;

// Everything one generate_candidates call shares: graph structure by position, the
// reachability window, the patterns found and the memo of scored node sets.
class CandidateGenerator {
 public:
  CandidateGenerator(const ir::Graph& graph, const Partition& partition,
                     const cost_model::DeviceProfile& profile,
                     const cost_model::ScoreOptions& score_options, const CandidateOptions& options,
                     CandidateStatistics& statistics, std::vector<NodeId> order)
      : graph_(graph),
        partition_(partition),
        profile_(profile),
        options_(options),
        statistics_(statistics),
        start_(Clock::now()),
        scorer_(graph, profile, with_fusion_policy(score_options)),
        order_(std::move(order)) {
    auto capacity = static_cast<size_t>(graph.node_capacity());
    position_.assign(capacity, -1);
    for (size_t i = 0; i < order_.size(); ++i)
      position_[static_cast<size_t>(order_[i])] = static_cast<int32_t>(i);
    launching_.assign(capacity, false);
    explorable_.assign(capacity, false);
    for (NodeId id : order_) {
      launching_[static_cast<size_t>(id)] = cost_model::launches_work(graph.node(id));
      explorable_[static_cast<size_t>(id)] =
          partition_.role(id) != NodeRole::kPartition && !is_constant_node(graph.node(id));
    }
    for (const ir::AttentionCore& core : partition_.attention_cores)
      core_nodes_.push_back(core.nodes());
    successors_.assign(capacity, {});
    predecessors_.assign(capacity, {});
    for (NodeId id : order_) {
      for (ir::ValueId output : graph.node(id).outputs) {
        if (output == ir::kNoId) continue;
        for (const ir::Use& use : graph.value(output).users) {
          if (!graph.node(use.node).dead) successors_[static_cast<size_t>(id)].push_back(use.node);
        }
      }
      auto& successors = successors_[static_cast<size_t>(id)];
      std::sort(successors.begin(), successors.end());
      successors.erase(std::unique(successors.begin(), successors.end()), successors.end());
      for (NodeId successor : successors)
        predecessors_[static_cast<size_t>(successor)].push_back(id);
    }
    for (auto& predecessors : predecessors_) std::sort(predecessors.begin(), predecessors.end());
    std::vector<std::vector<int32_t>> successor_positions(order_.size());
    for (size_t i = 0; i < order_.size(); ++i) {
      for (NodeId successor : successors_[static_cast<size_t>(order_[i])]) {
        successor_positions[i].push_back(position_[static_cast<size_t>(successor)]);
      }
    }
    reachability_.emplace(successor_positions, options.reachability_memory_bytes);
  }

  void substitution() {
    // Step s adds the s-th role after kPartition to the partition set.
    const NodeRole kStepRoles[] = {NodeRole::kPartition, NodeRole::kBatchedGemm,
                                   NodeRole::kColumnReduction, NodeRole::kScalarReduction};
    std::vector<bool> partition_at_step(static_cast<size_t>(NodeRole::kPartition) + 1, false);
    for (int step = 0; step < 4; ++step) {
      partition_at_step[static_cast<size_t>(kStepRoles[step])] = true;
      NodeSet segment;
      auto flush = [&] {
        substitution_segment(segment, step);
        segment.clear();
      };
      for (NodeId id : order_) {
        if (partition_at_step[static_cast<size_t>(partition_.role(id))]) {
          flush();
        } else if (explorable_[static_cast<size_t>(id)]) {  // Constant nodes join no segment
          segment.push_back(id);
        }
      }
      flush();
    }
  }

  // Each attention core alone and with its prologue (candidates.h, 5.).
  void attention() {
    for (const ir::AttentionCore& core : partition_.attention_cores) {
      const NodeSet nodes = core.nodes();
      bool usable = true;
      for (NodeId id : nodes) usable = usable && explorable_[static_cast<size_t>(id)];
      if (!usable) continue;
      evaluate(nodes, PatternSource::kAttention, -1, false);
      // The prologue: operands of the core (and of what joined) produced by index
      // functions whose every output only the set reads; with data movement alone
      // (views, transposes, slices: an elementwise producer such as a bias add may be
      // worth more in a library call's epilogue), with elementwise ops too, and with
      // fine-grained GEMMs too (projections recomputed in the tile loads).
      // Each also with the epilogue that merges the heads back (a Transpose of O and
      // views after it), which the kernel writes where the Transpose puts each element.
      const NodeSet epilogue = output_moves(core);
      auto evaluate_both = [&](const NodeSet& set) {
        evaluate(set, PatternSource::kAttention, -1, false);
        if (!epilogue.empty()) {
          evaluate(set_union(set, epilogue), PatternSource::kAttention, -1, false);
        }
      };
      if (!epilogue.empty()) {
        evaluate(set_union(nodes, epilogue), PatternSource::kAttention, -1, false);
      }
      NodeSet previous = nodes;
      for (Prologue level : {Prologue::kMoves, Prologue::kElementwise, Prologue::kGemms}) {
        NodeSet grown = grow_prologue(nodes, level);
        if (grown.size() > previous.size()) {
          evaluate_both(grown);
          previous = std::move(grown);
        }
      }
    }
  }

  // The Transpose after an attention core's output and the views after it, each the
  // only reader of the value before it: sorted, or empty when O is not transposed so.
  NodeSet output_moves(const ir::AttentionCore& core) const {
    NodeSet moves;
    bool transposed = false;
    for (ir::ValueId value = core.output; value != ir::kNoId;) {
      const ir::Value& v = graph_.value(value);
      std::vector<ir::Use> live;
      for (const ir::Use& use : v.users) {
        if (!graph_.node(use.node).dead) live.push_back(use);
      }
      if (v.is_graph_output || live.size() != 1) break;
      const NodeId reader = live[0].node;
      const ir::Node& node = graph_.node(reader);
      const bool transpose = node.op_type == "Transpose" && node.domain.empty() && !transposed;
      if (!explorable_[static_cast<size_t>(reader)] || live[0].slot != 0 ||
          (!transpose && ir::op_kind(node) != ir::OpKind::kView)) {
        break;
      }
      transposed = transposed || transpose;
      moves.push_back(reader);
      value = node.outputs.empty() ? ir::kNoId : node.outputs[0];
    }
    if (!transposed) return {};
    std::sort(moves.begin(), moves.end());
    return moves;
  }

  void exploratory() {
    levels_.resize(static_cast<size_t>(std::max(options_.max_pattern_size, 1)));
    NodeSet seed_set(1);
    for (NodeId seed : exploration_seeds()) {
      if (out_of_time()) return;
      patterns_this_seed_ = 0;
      seed_set[0] = seed;
      explore(seed_set);
    }
  }

  void packing() {
    // Units: single launching nodes, then the patterns found so far, in that order.
    // A pattern unit is read from the memo each time (evaluate may move the arena).
    std::vector<NodeSet> singles;
    for (NodeId id : order_) {
      if (partition_.role(id) != NodeRole::kPartition && launching_[static_cast<size_t>(id)]) {
        singles.push_back({id});
      }
    }
    const size_t single_count = singles.size();
    const size_t unit_count = single_count + found_.size();
    auto unit = [&](size_t i) -> NodeSpan {
      return i < single_count ? NodeSpan(singles[i]) : memo_.nodes(found_[i - single_count].set);
    };
    const int64_t half_wave =
        static_cast<int64_t>(profile_.sm_count) * profile_.max_threads_per_sm / 2;
    std::vector<int64_t> node_largest(static_cast<size_t>(graph_.node_capacity()), 0);
    for (NodeId id : order_) node_largest[static_cast<size_t>(id)] = largest_tensor_elements(id);
    std::vector<bool> small(unit_count);
    for (size_t i = 0; i < unit_count; ++i) {
      int64_t largest = 0;
      for (NodeId id : unit(i)) largest = std::max(largest, node_largest[static_cast<size_t>(id)]);
      small[i] = largest < half_wave;
    }
    std::vector<double> cost(unit_count, -1.0);
    auto unit_cost = [&](size_t i) {
      if (cost[i] < 0) {
        NodeSpan nodes = unit(i);
        cost[i] = cost_model::estimate_group(graph_, NodeSet(nodes.begin(), nodes.end()), profile_)
                      .time.total_us;
      }
      return cost[i];
    };
    auto try_pair = [&](size_t a, size_t b) {
      if (intersects(unit(a), unit(b)) || !independent(unit(a), unit(b))) return;
      double gain = unit_cost(a) + unit_cost(b) - std::max(unit_cost(a), unit_cost(b));
      if (gain <= 0) return;
      NodeSet merged = set_union(unit(a), unit(b));
      if (static_cast<int>(merged.size()) > options_.max_pattern_size) return;
      evaluate(merged, PatternSource::kPacking, -1, /*convex_known=*/true);
    };

    // Siblings: units reading the same value from outside, the first
    // kSiblingsPerValue of them per value, values in id order.
    std::vector<uint8_t> sibling_count(static_cast<size_t>(graph_.value_capacity()), 0);
    std::vector<std::pair<ir::ValueId, size_t>> siblings;  // (value, unit)
    for (size_t i = 0; i < unit_count; ++i) {
      if (!small[i]) continue;
      for (ir::ValueId value : external_inputs(unit(i))) {
        uint8_t& count = sibling_count[static_cast<size_t>(value)];
        if (static_cast<size_t>(count) == kSiblingsPerValue) continue;
        ++count;
        siblings.emplace_back(value, i);
      }
    }
    std::stable_sort(siblings.begin(), siblings.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
    for (size_t begin = 0, end = 0; begin < siblings.size(); begin = end) {
      while (end < siblings.size() && siblings[end].first == siblings[begin].first) ++end;
      for (size_t a = begin; a < end; ++a) {
        for (size_t b = a + 1; b < end; ++b) {
          if (out_of_time()) return;
          try_pair(siblings[a].second, siblings[b].second);
        }
      }
      // Three or more siblings: also all of them in one kernel, each unit taken in
      // order when it is disjoint from and independent of those taken (the Q, K and V
      // projections of one input: pairs alone leave a third launch, and the plan that
      // packs all three feeds an attention core that reads them at its floor).
      if (end - begin < 3) continue;
      NodeSet merged;
      size_t taken = 0;
      for (size_t a = begin; a < end; ++a) {
        if (out_of_time()) return;
        const NodeSpan candidate = unit(siblings[a].second);
        if (!merged.empty() && (intersects(merged, candidate) || !independent(merged, candidate)))
          continue;
        NodeSet grown = set_union(merged, candidate);
        if (static_cast<int>(grown.size()) > options_.max_pattern_size) continue;
        merged = std::move(grown);
        ++taken;
      }
      if (taken >= 3) evaluate(merged, PatternSource::kPacking, -1, /*convex_known=*/true);
    }

    // Single nodes at the same longest-path depth, adjacent by id.
    std::vector<int32_t> depth(static_cast<size_t>(graph_.node_capacity()), 0);
    for (NodeId id : order_) {
      for (NodeId predecessor : predecessors_[static_cast<size_t>(id)]) {
        depth[static_cast<size_t>(id)] =
            std::max(depth[static_cast<size_t>(id)], depth[static_cast<size_t>(predecessor)] + 1);
      }
    }
    std::map<int32_t, std::vector<size_t>> by_depth;
    for (size_t i = 0; i < single_count; ++i) {
      if (small[i]) by_depth[depth[static_cast<size_t>(singles[i][0])]].push_back(i);
    }
    for (auto& [level, list] : by_depth) {
      std::sort(list.begin(), list.end(),
                [&](size_t a, size_t b) { return singles[a][0] < singles[b][0]; });
      for (size_t k = 0; k + 1 < list.size(); ++k) {
        if (out_of_time()) return;
        try_pair(list[k], list[k + 1]);
      }
    }
  }

  // Patterns found elsewhere (fusion/epilogue.h), sorted and counted with the rest.
  void add(std::vector<Pattern> patterns) {
    for (Pattern& pattern : patterns) added_.push_back(std::move(pattern));
  }

  // Every pattern, sorted by (first node, size, nodes): node sets are distinct, so
  // the order is total and the output does not depend on the sort algorithm. The
  // generator's last call: the search is over, so its reachability window (256 MiB
  // from ~46k nodes on) and the memo's index are freed before the patterns, the
  // largest structure on long chains, are built.
  std::vector<Pattern> take_patterns() {
    reachability_.reset();
    memo_.seal();
    // Pattern i < found_.size() is found_[i], the others added_[i - found_.size()].
    auto nodes_of = [&](size_t i) -> NodeSpan {
      return i < found_.size() ? memo_.nodes(found_[i].set)
                               : NodeSpan(added_[i - found_.size()].nodes);
    };
    struct SortKey {
      NodeId front;
      size_t size;
      size_t index;
    };
    std::vector<SortKey> order(found_.size() + added_.size());
    for (size_t i = 0; i < order.size(); ++i) {
      NodeSpan nodes = nodes_of(i);
      order[i] = SortKey{nodes.front(), nodes.size(), i};
    }
    std::sort(order.begin(), order.end(), [&](const SortKey& x, const SortKey& y) {
      if (x.front != y.front) return x.front < y.front;
      if (x.size != y.size) return x.size < y.size;
      NodeSpan a = nodes_of(x.index);
      NodeSpan b = nodes_of(y.index);
      return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
    });
    std::vector<Pattern> patterns;
    patterns.reserve(order.size());
    for (const SortKey& key : order) {
      size_t i = key.index;
      if (i >= found_.size()) {
        patterns.push_back(std::move(added_[i - found_.size()]));
        continue;
      }
      const Found& found = found_[i];
      NodeSpan nodes = memo_.nodes(found.set);
      Pattern& pattern = patterns.emplace_back();
      pattern.nodes.assign(nodes.begin(), nodes.end());
      pattern.source = found.source;
      pattern.substitution_step = found.step;
      pattern.score_us = found.score_us;
      pattern.bytes_saved = found.bytes_saved;
      pattern.shared_memory_bytes = found.shared_memory_bytes;
    }
    found_.clear();
    added_.clear();
    for (const Pattern& pattern : patterns) {
      switch (pattern.source) {
        case PatternSource::kSubstitution:
          ++statistics_.substitution;
          break;
        case PatternSource::kExploratory:
          ++statistics_.exploratory;
          break;
        case PatternSource::kPacking:
          ++statistics_.packing;
          break;
        case PatternSource::kEpilogue:
          ++statistics_.epilogue;
          break;
        case PatternSource::kAttention:
          ++statistics_.attention;
          break;
      }
    }
    return patterns;
  }

  bool out_of_time() {
    if (statistics_.hit_time_limit) return true;
    double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
    if (elapsed > options_.time_limit_s) statistics_.hit_time_limit = true;
    return statistics_.hit_time_limit;
  }

 private:
  int32_t position(NodeId id) const { return position_[static_cast<size_t>(id)]; }

  static constexpr size_t kMaxAttentionPattern = 64;

  // Without attention candidates (options.attention false), no pattern may hold a
  // whole attention core either: the schedule would give it the attention composition.
  bool holds_attention_core(const NodeSet& nodes) const {
    if (options_.attention) return false;
    return std::any_of(core_nodes_.begin(), core_nodes_.end(), [&](const NodeSet& core) {
      return std::includes(nodes.begin(), nodes.end(), core.begin(), core.end());
    });
  }

  enum class Prologue { kMoves, kElementwise, kGemms };

  // `nodes` and the producers of their operands that are inlinable, repeatedly.
  NodeSet grow_prologue(const NodeSet& nodes, Prologue level) const {
    std::set<NodeId> members(nodes.begin(), nodes.end());
    for (bool grew = true; grew && members.size() < kMaxAttentionPattern;) {
      grew = false;
      for (NodeId member : NodeSet(members.begin(), members.end())) {
        // A projection's operands stay outside: recomputing what feeds it per element
        // read would multiply that work again.
        if (ir::op_kind(graph_.node(member)) == ir::OpKind::kGemm &&
            !std::binary_search(nodes.begin(), nodes.end(), member)) {
          continue;
        }
        for (ir::ValueId input : graph_.node(member).inputs) {
          if (input == ir::kNoId) continue;
          const NodeId from = graph_.value(input).producer;
          if (from == ir::kNoId || members.count(from) || !inlinable(from, members, level))
            continue;
          members.insert(from);
          grew = true;
        }
      }
    }
    return NodeSet(members.begin(), members.end());
  }

  // An attention prologue node at `level`: data movement, elementwise or a
  // fine-grained GEMM, explorable, and every output read only by `members` (so the
  // group writes nothing more).
  bool inlinable(NodeId id, const std::set<NodeId>& members, Prologue level) const {
    const ir::Node& node = graph_.node(id);
    if (!explorable_[static_cast<size_t>(id)]) return false;
    const ir::OpKind kind = ir::op_kind(node);
    const bool moves_data = kind == ir::OpKind::kView || kind == ir::OpKind::kInjective;
    const bool computes = kind == ir::OpKind::kElementwise || kind == ir::OpKind::kBroadcast;
    const bool gemm = kind == ir::OpKind::kGemm && partition_.role(id) == NodeRole::kBatchedGemm;
    if (!moves_data && !(level >= Prologue::kElementwise && computes) &&
        !(level == Prologue::kGemms && gemm)) {
      return false;
    }
    for (ir::ValueId output : node.outputs) {
      if (output == ir::kNoId) continue;
      const ir::Value& value = graph_.value(output);
      if (value.is_graph_output) return false;
      for (const ir::Use& use : value.users) {
        if (!members.count(use.node)) return false;
      }
    }
    return true;
  }

  // Splits a segment into its connected components and evaluates each.
  void substitution_segment(const NodeSet& segment, int step) {
    if (segment.size() < 2) return;
    std::unordered_map<NodeId, size_t> index;
    for (size_t i = 0; i < segment.size(); ++i) index.emplace(segment[i], i);
    std::vector<size_t> parent(segment.size());
    std::iota(parent.begin(), parent.end(), size_t{0});
    auto find = [&](size_t i) {
      while (parent[i] != i) {
        parent[i] = parent[parent[i]];
        i = parent[i];
      }
      return i;
    };
    for (size_t i = 0; i < segment.size(); ++i) {
      for (NodeId predecessor : predecessors_[static_cast<size_t>(segment[i])]) {
        auto it = index.find(predecessor);
        if (it == index.end()) continue;
        size_t a = find(i);
        size_t b = find(it->second);
        if (a != b) parent[std::max(a, b)] = std::min(a, b);
      }
    }
    std::map<size_t, NodeSet> components;  // by root, the smallest index of the component
    for (size_t i = 0; i < segment.size(); ++i) components[find(i)].push_back(segment[i]);
    for (auto& [root, nodes] : components) {
      std::sort(nodes.begin(), nodes.end());
      evaluate(nodes, PatternSource::kSubstitution, step, /*convex_known=*/false);
    }
  }

  std::vector<NodeId> exploration_seeds() const {
    auto bytes_of = [&](NodeId id) {
      const ir::Node& node = graph_.node(id);
      int64_t bytes = 0;
      for (ir::ValueId value : node.inputs) {
        if (value != ir::kNoId) bytes += std::max<int64_t>(0, graph_.value(value).type.num_bytes());
      }
      for (ir::ValueId value : node.outputs) {
        if (value != ir::kNoId) bytes += std::max<int64_t>(0, graph_.value(value).type.num_bytes());
      }
      return bytes;
    };
    std::vector<NodeId> seeds;
    std::vector<std::pair<int64_t, NodeId>> elementwise;
    for (NodeId id : order_) {
      const ir::Node& node = graph_.node(id);
      if (partition_.role(id) == NodeRole::kPartition || !cost_model::launches_work(node)) continue;
      if (node.num_inputs_present() > options_.max_operands) continue;
      ir::OpKind kind = ir::op_kind(node);
      if (kind == ir::OpKind::kReduction || kind == ir::OpKind::kGemm ||
          kind == ir::OpKind::kStencil) {
        seeds.push_back(id);
      } else if (kind == ir::OpKind::kElementwise || kind == ir::OpKind::kBroadcast ||
                 kind == ir::OpKind::kInjective) {
        elementwise.emplace_back(bytes_of(id), id);
      }
    }
    if (!elementwise.empty()) {
      std::vector<int64_t> sizes;
      for (const auto& [bytes, id] : elementwise) sizes.push_back(bytes);
      std::nth_element(sizes.begin(), sizes.begin() + static_cast<std::ptrdiff_t>(sizes.size() / 2),
                       sizes.end());
      int64_t median = sizes[sizes.size() / 2];
      for (const auto& [bytes, id] : elementwise) {
        if (bytes >= median) seeds.push_back(id);
      }
    }
    std::sort(seeds.begin(), seeds.end());
    return seeds;
  }

  // Algorithm 2: every convex one-node extension of `current`, recursively.
  // The extensions are the consumers (sorted by id), then the producers (sorted by
  // id) of `current` that lie outside it and may join a pattern.
  void explore(const NodeSet& current) {
    if (static_cast<int>(current.size()) >= options_.max_pattern_size) return;
    ExploreLevel& level = levels_[current.size()];
    level.extensions.clear();
    for (const std::vector<std::vector<NodeId>>* neighbours_of : {&successors_, &predecessors_}) {
      level.neighbours.clear();
      for (NodeId id : current) {
        const std::vector<NodeId>& neighbours = (*neighbours_of)[static_cast<size_t>(id)];
        level.neighbours.insert(level.neighbours.end(), neighbours.begin(), neighbours.end());
      }
      std::sort(level.neighbours.begin(), level.neighbours.end());
      level.neighbours.erase(std::unique(level.neighbours.begin(), level.neighbours.end()),
                             level.neighbours.end());
      for (NodeId id : level.neighbours) {
        if (explorable_[static_cast<size_t>(id)] && !in_set(current, id)) {
          level.extensions.push_back(id);
        }
      }
    }
    for (NodeId extension : level.extensions) {
      if (patterns_this_seed_ >= options_.max_patterns_per_seed || out_of_time()) return;
      // current + extension, sorted: the recursion below leaves this level's set alone.
      NodeSet& fusion = level.fusion;
      auto split = std::lower_bound(current.begin(), current.end(), extension);
      fusion.assign(current.begin(), split);
      fusion.push_back(extension);
      fusion.insert(fusion.end(), split, current.end());
      NodeSet with_casts = fusion;
      absorb_float_casts(extension, with_casts);
      if (with_casts.size() != fusion.size() &&
          static_cast<int>(with_casts.size()) <= options_.max_pattern_size) {
        // First the set with its extension's conversions (free in the budget: the
        // float32 graph has no such step), then the set itself.
        const int budget = patterns_this_seed_;
        try_extension(with_casts);
        patterns_this_seed_ = budget;
      }
      try_extension(fusion);
    }
  }

  // Evaluates `fusion` and expands it when it is new, convex and feasible.
  void try_extension(const NodeSet& fusion) {
    Memo& memo = evaluate(fusion, PatternSource::kExploratory, -1, /*convex_known=*/false);
    if (memo.explored) return;  // every set is expanded once, whichever seed reaches it
    memo.explored = true;
    ++patterns_this_seed_;
    if (memo.outcome == Outcome::kNonConvex || memo.outcome == Outcome::kInfeasible) return;
    explore(fusion);
  }

  // A Cast between float types is a conversion in registers wherever it fuses: the
  // --precision bf16/fp16 rewrite puts one on each edge between a float32 node and a
  // reduced one (ir/passes/reduced_precision.h). So the explorable float Casts that
  // `extension` reads or that read it join `fusion` (sorted) in the same step: the
  // search then takes the steps it takes on the float32 graph, instead of spending its
  // per-seed budget on sets that differ by a conversion.
  void absorb_float_casts(NodeId extension, NodeSet& fusion) const {
    auto float_cast = [&](NodeId id) {
      const ir::Node& node = graph_.node(id);
      return explorable_[static_cast<size_t>(id)] && node.op_type == "Cast" &&
             node.domain.empty() && node.inputs.size() == 1 && node.outputs.size() == 1 &&
             ir::dtype_is_float(graph_.value(node.inputs[0]).type.dtype) &&
             ir::dtype_is_float(graph_.value(node.outputs[0]).type.dtype);
    };
    for (const std::vector<std::vector<NodeId>>* neighbours_of : {&successors_, &predecessors_}) {
      for (NodeId id : (*neighbours_of)[static_cast<size_t>(extension)]) {
        if (!float_cast(id)) continue;
        auto at = std::lower_bound(fusion.begin(), fusion.end(), id);
        if (at == fusion.end() || *at != id) fusion.insert(at, id);
      }
    }
  }

  // Checks, scores and records one node set; each distinct set is evaluated once
  // (the first source to find it keeps it). The reference is valid until the next
  // evaluate.
  Memo& evaluate(const NodeSet& nodes, PatternSource source, int step, bool convex_known) {
    auto [index, inserted] = memo_.find_or_insert(nodes);
    if (inserted) memo_.at(index).outcome = evaluate_new(nodes, index, source, step, convex_known);
    return memo_.at(index);
  }

  Outcome evaluate_new(const NodeSet& nodes, size_t memo_index, PatternSource source, int step,
                       bool convex_known) {
    if (!convex_known && !convex(nodes)) {
      ++statistics_.rejected_non_convex;
      return Outcome::kNonConvex;
    }
    int launching = 0;
    for (NodeId id : nodes) launching += launching_[static_cast<size_t>(id)] ? 1 : 0;
    if (launching < 2 || holds_attention_core(nodes)) return Outcome::kDropped;
    cost_model::PatternScore score = scorer_.score(nodes);
    if (!score.feasible) {
      ++statistics_.rejected_infeasible;
      return Outcome::kInfeasible;
    }
    if (score.score_us <= 0) return Outcome::kDropped;
    found_.push_back(Found{memo_index, source, step, score.score_us, score.bytes_saved,
                           score.shared_memory_bytes});
    return Outcome::kAccepted;
  }

  // Convex iff no successor s outside P of a node of P reaches a node of P (the
  // first node of any path that leaves P is such an s). A set spanning more than
  // the reachability window cannot be proven convex.
  bool convex(const NodeSet& nodes) {
    int32_t low = position(nodes.front());
    int32_t high = low;
    for (NodeId id : nodes) {
      low = std::min(low, position(id));
      high = std::max(high, position(id));
    }
    if (static_cast<int64_t>(high) - low > reachability_->window()) return false;
    std::vector<uint64_t>& mask = convex_mask_;
    mask.assign(static_cast<size_t>(high - low) / 64 + 1, 0);
    for (NodeId id : nodes) {
      auto bit = static_cast<size_t>(position(id) - low);
      mask[bit / 64] |= uint64_t{1} << (bit % 64);
    }
    for (NodeId id : nodes) {
      for (NodeId successor : successors_[static_cast<size_t>(id)]) {
        if (in_set(nodes, successor) || position(successor) >= high) continue;
        if (reachability_->reaches_any(position(successor), low, mask)) return false;
      }
    }
    return true;
  }

  // No path between any node of `a` and any node of `b`, in either direction; a
  // pair of nodes further apart than the reachability window counts as dependent.
  bool independent(NodeSpan a, NodeSpan b) const {
    for (NodeId x : a) {
      for (NodeId y : b) {
        if (reachability_->reaches(position(x), position(y)) !=
                ir::WindowedReachability::Answer::kNo ||
            reachability_->reaches(position(y), position(x)) !=
                ir::WindowedReachability::Answer::kNo) {
          return false;
        }
      }
    }
    return true;
  }

  // The most elements of any tensor the node reads or writes (0 when none is known).
  int64_t largest_tensor_elements(NodeId id) const {
    int64_t largest = 0;
    const ir::Node& node = graph_.node(id);
    for (const std::vector<ir::ValueId>* values : {&node.inputs, &node.outputs}) {
      for (ir::ValueId value : *values) {
        if (value != ir::kNoId)
          largest = std::max(largest, graph_.value(value).type.num_elements());
      }
    }
    return largest;
  }

  // Values the unit reads that no node of the unit produces, sorted; valid until
  // the next call.
  const std::vector<ir::ValueId>& external_inputs(NodeSpan nodes) {
    inputs_.clear();
    for (NodeId id : nodes) {
      for (ir::ValueId value : graph_.node(id).inputs) {
        if (value == ir::kNoId) continue;
        NodeId producer = graph_.value(value).producer;
        if (producer != ir::kNoId && in_set(nodes, producer)) continue;
        inputs_.push_back(value);
      }
    }
    std::sort(inputs_.begin(), inputs_.end());
    inputs_.erase(std::unique(inputs_.begin(), inputs_.end()), inputs_.end());
    return inputs_;
  }

  const ir::Graph& graph_;
  const Partition& partition_;
  const cost_model::DeviceProfile& profile_;
  const CandidateOptions& options_;
  CandidateStatistics& statistics_;
  Clock::time_point start_;
  cost_model::PatternScorer scorer_;  // score_pattern with per-node facts kept across patterns

  std::vector<NodeId> order_;
  std::vector<int32_t> position_;  // by node id; -1 for dead nodes
  std::vector<bool> launching_;    // by node id: cost_model::launches_work
  // By node id: may join a substitution or exploratory pattern (not kPartition, not
  // Constant).
  std::vector<bool> explorable_;
  std::vector<std::vector<NodeId>> successors_;    // by node id, sorted
  std::vector<std::vector<NodeId>> predecessors_;  // by node id, sorted
  std::optional<ir::WindowedReachability> reachability_;

  // An accepted pattern: its nodes are the memo's set `set`.
  struct Found {
    size_t set = 0;
    PatternSource source = PatternSource::kSubstitution;
    int step = -1;
    double score_us = 0;
    int64_t bytes_saved = 0;
    int64_t shared_memory_bytes = 0;
  };
  std::vector<Found> found_;         // in the order found
  std::vector<Pattern> added_;       // from add()
  std::vector<ir::ValueId> inputs_;  // external_inputs()'s scratch
  NodeSetMemo memo_;                 // every node set evaluated so far
  // Scratch of one exploration depth, reused across calls: a level touches only its
  // own, so a recursion keeps its caller's extensions and set intact.
  struct ExploreLevel {
    std::vector<NodeId> neighbours;
    std::vector<NodeId> extensions;
    NodeSet fusion;
  };
  std::vector<ExploreLevel> levels_;   // by the size of the set being extended
  std::vector<uint64_t> convex_mask_;  // convex()'s scratch
  std::vector<NodeSet> core_nodes_;    // the nodes of each attention core (holds_attention_core)
  int patterns_this_seed_ = 0;
};

}  // namespace

std::vector<Pattern> generate_candidates(const ir::Graph& graph, const Partition& partition,
                                         const cost_model::DeviceProfile& profile,
                                         const cost_model::ScoreOptions& score_options,
                                         const CandidateOptions& options,
                                         CandidateStatistics& statistics) {
  auto start = Clock::now();
  statistics = CandidateStatistics{};
  STITCH_CHECK(partition.roles.size() == static_cast<size_t>(graph.node_capacity()))
      << "partition built for another graph: " << partition.roles.size() << " roles, "
      << graph.node_capacity() << " nodes";
  Result<std::vector<NodeId>> order = ir::topological_order(graph);
  STITCH_CHECK(order.is_ok()) << "generate_candidates needs an acyclic graph: "
                              << order.status().message();
  CandidateGenerator generator(graph, partition, profile, score_options, options, statistics,
                               std::move(order).value());
  if (options.substitution) generator.substitution();
  if (options.exploratory && !generator.out_of_time()) generator.exploratory();
  if (options.packing && !generator.out_of_time()) generator.packing();
  if (options.epilogue) {
    generator.add(generate_epilogue_candidates(graph, partition, profile, score_options));
  }
  if (options.attention) generator.attention();
  std::vector<Pattern> patterns = generator.take_patterns();
  statistics.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return patterns;
}

}  // namespace stitch::fusion
