// Candidate fusion patterns: substitution, exploratory and packing, all convex.
#include "fusion/candidates.h"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <map>
#include <numeric>
#include <optional>
#include <unordered_map>
#include <utility>

#include "ir/analysis.h"
#include "ir/op_registry.h"

namespace stitch::fusion {
namespace {

using ir::NodeId;
using NodeSet = std::vector<NodeId>;  // sorted ascending, unique

// Units reading one value that packing pairs up, at most (bounds the pairs to 28 per value).
constexpr size_t kSiblingsPerValue = 8;

struct NodeSetHash {
  size_t operator()(const NodeSet& nodes) const {
    uint64_t hash = nodes.size();
    for (NodeId id : nodes) {
      // splitmix64's finalizer per element: ids differ in few low bits.
      uint64_t mixed =
          hash + static_cast<uint64_t>(static_cast<uint32_t>(id)) + 0x9e3779b97f4a7c15ULL;
      mixed = (mixed ^ (mixed >> 30)) * 0xbf58476d1ce4e5b9ULL;
      mixed = (mixed ^ (mixed >> 27)) * 0x94d049bb133111ebULL;
      hash = mixed ^ (mixed >> 31);
    }
    return static_cast<size_t>(hash);
  }
};

bool is_constant_node(const ir::Node& node) { return node.op_type == "Constant"; }

bool in_set(const NodeSet& nodes, NodeId id) {
  return std::binary_search(nodes.begin(), nodes.end(), id);
}

NodeSet set_union(const NodeSet& a, const NodeSet& b) {
  NodeSet result;
  result.reserve(a.size() + b.size());
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(result));
  return result;
}

bool intersects(const NodeSet& a, const NodeSet& b) {
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

// Reachability restricted to a window of the next `window` topological positions:
// row(u) bit i says whether the node at position pos(u) + 1 + i is reachable from u.
// Paths only go forward in a topological order, so a query whose target lies within
// the window is exact; one beyond it is unknown. With window >= N it is the full
// reachability relation.
class WindowedReachability {
 public:
  enum class Answer { kNo, kYes, kUnknown };

  // `successors_by_position[p]`: positions of the successors of the node at p.
  WindowedReachability(const std::vector<std::vector<int32_t>>& successors_by_position,
                       int64_t memory_bytes) {
    auto count = static_cast<int64_t>(successors_by_position.size());
    int64_t window = count == 0 ? 64 : std::min(count, 8 * memory_bytes / count);
    words_ = std::max<int64_t>(1, (window + 63) / 64);
    window_ = words_ * 64;
    bits_.assign(static_cast<size_t>(count * words_), 0);
    for (int64_t u = count - 1; u >= 0; --u) {
      uint64_t* row = row_at(u);
      for (int32_t s : successors_by_position[static_cast<size_t>(u)]) {
        int64_t distance = s - u;
        STITCH_CHECK(distance > 0) << "successor before its producer in the topological order";
        if (distance > window_) continue;
        set_bit(row, distance - 1);
        // Row(s) bit j is position s + 1 + j = u + 1 + (j + distance).
        const uint64_t* source = row_at(s);
        int64_t word_shift = distance / 64;
        int bit_shift = static_cast<int>(distance % 64);
        for (int64_t word = 0; word + word_shift < words_; ++word) {
          uint64_t bits = source[word];
          if (bits == 0) continue;
          row[word + word_shift] |= bits << bit_shift;
          if (bit_shift != 0 && word + word_shift + 1 < words_) {
            row[word + word_shift + 1] |= bits >> (64 - bit_shift);
          }
        }
      }
    }
  }

  int64_t window() const { return window_; }

  Answer reaches(int32_t from_position, int32_t to_position) const {
    int64_t distance = static_cast<int64_t>(to_position) - from_position;
    if (distance <= 0) return Answer::kNo;
    if (distance > window_) return Answer::kUnknown;
    const uint64_t* row = row_at(from_position);
    int64_t bit = distance - 1;
    return ((row[bit / 64] >> (bit % 64)) & 1u) != 0 ? Answer::kYes : Answer::kNo;
  }

  // Whether the node at `from_position` reaches any position set in `mask`, where
  // mask bit i stands for position `mask_start + i` and every set position lies
  // within the window of `from_position`.
  bool reaches_any(int32_t from_position, int32_t mask_start,
                   const std::vector<uint64_t>& mask) const {
    const uint64_t* row = row_at(from_position);
    // Row bit i is position from + 1 + i; mask bit j is position mask_start + j.
    int64_t offset = static_cast<int64_t>(from_position) + 1 - mask_start;  // j = i + offset
    auto mask_bits_at = [&](int64_t j) -> uint64_t {  // 64 mask bits starting at bit j
      if (j <= -64) return 0;
      if (j < 0) return get_mask_word(mask, 0) << (-j);
      int64_t word = j / 64;
      int shift = static_cast<int>(j % 64);
      uint64_t low = get_mask_word(mask, word) >> shift;
      if (shift == 0) return low;
      return low | (get_mask_word(mask, word + 1) << (64 - shift));
    };
    auto mask_words = static_cast<int64_t>(mask.size());
    for (int64_t word = 0; word < words_; ++word) {
      int64_t j = word * 64 + offset;
      if (j >= mask_words * 64) break;
      if ((row[word] & mask_bits_at(j)) != 0) return true;
    }
    return false;
  }

 private:
  static uint64_t get_mask_word(const std::vector<uint64_t>& mask, int64_t word) {
    return word >= 0 && word < static_cast<int64_t>(mask.size()) ? mask[static_cast<size_t>(word)]
                                                                 : 0;
  }
  static void set_bit(uint64_t* row, int64_t bit) { row[bit / 64] |= uint64_t{1} << (bit % 64); }
  uint64_t* row_at(int64_t position) { return &bits_[static_cast<size_t>(position * words_)]; }
  const uint64_t* row_at(int64_t position) const {
    return &bits_[static_cast<size_t>(position * words_)];
  }

  int64_t words_ = 1;
  int64_t window_ = 64;
  std::vector<uint64_t> bits_;
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
        score_options_(score_options),
        options_(options),
        statistics_(statistics),
        start_(Clock::now()),
        order_(std::move(order)) {
    auto capacity = static_cast<size_t>(graph.node_capacity());
    position_.assign(capacity, -1);
    for (size_t i = 0; i < order_.size(); ++i)
      position_[static_cast<size_t>(order_[i])] = static_cast<int32_t>(i);
    launching_.assign(capacity, false);
    for (NodeId id : order_)
      launching_[static_cast<size_t>(id)] = cost_model::launches_work(graph.node(id));
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
        } else if (!is_constant_node(graph_.node(id))) {
          segment.push_back(id);
        }
      }
      flush();
    }
  }

  void exploratory() {
    for (NodeId seed : exploration_seeds()) {
      if (out_of_time()) return;
      patterns_this_seed_ = 0;
      explore({seed});
    }
  }

  void packing() {
    // Units: single launching nodes, then the patterns found so far, in that order.
    std::vector<NodeSet> units;
    for (NodeId id : order_) {
      if (partition_.role(id) != NodeRole::kPartition && launching_[static_cast<size_t>(id)]) {
        units.push_back({id});
      }
    }
    size_t single_count = units.size();
    for (const Pattern& pattern : patterns_) units.push_back(pattern.nodes);
    const int64_t half_wave =
        static_cast<int64_t>(profile_.sm_count) * profile_.max_threads_per_sm / 2;
    std::vector<bool> small(units.size());
    for (size_t i = 0; i < units.size(); ++i)
      small[i] = largest_tensor_elements(units[i]) < half_wave;
    std::vector<double> cost(units.size(), -1.0);
    auto unit_cost = [&](size_t i) {
      if (cost[i] < 0) cost[i] = cost_model::estimate_group(graph_, units[i], profile_).time_us;
      return cost[i];
    };
    auto try_pair = [&](size_t a, size_t b) {
      if (intersects(units[a], units[b]) || !independent(units[a], units[b])) return;
      double gain = unit_cost(a) + unit_cost(b) - std::max(unit_cost(a), unit_cost(b));
      if (gain <= 0) return;
      NodeSet merged = set_union(units[a], units[b]);
      if (static_cast<int>(merged.size()) > options_.max_pattern_size) return;
      evaluate(merged, PatternSource::kPacking, -1, /*convex_known=*/true);
    };

    // Siblings: units reading the same value from outside.
    std::map<ir::ValueId, std::vector<size_t>> readers;
    for (size_t i = 0; i < units.size(); ++i) {
      if (!small[i]) continue;
      for (ir::ValueId value : external_inputs(units[i])) {
        auto& list = readers[value];
        if (list.size() < kSiblingsPerValue) list.push_back(i);
      }
    }
    for (const auto& [value, list] : readers) {
      for (size_t a = 0; a < list.size(); ++a) {
        for (size_t b = a + 1; b < list.size(); ++b) {
          if (out_of_time()) return;
          try_pair(list[a], list[b]);
        }
      }
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
      if (small[i]) by_depth[depth[static_cast<size_t>(units[i][0])]].push_back(i);
    }
    for (auto& [level, list] : by_depth) {
      std::sort(list.begin(), list.end(),
                [&](size_t a, size_t b) { return units[a][0] < units[b][0]; });
      for (size_t k = 0; k + 1 < list.size(); ++k) {
        if (out_of_time()) return;
        try_pair(list[k], list[k + 1]);
      }
    }
  }

  std::vector<Pattern> take_patterns() {
    std::sort(patterns_.begin(), patterns_.end(), [](const Pattern& a, const Pattern& b) {
      if (a.nodes.front() != b.nodes.front()) return a.nodes.front() < b.nodes.front();
      if (a.nodes.size() != b.nodes.size()) return a.nodes.size() < b.nodes.size();
      return a.nodes < b.nodes;
    });
    for (const Pattern& pattern : patterns_) {
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
      }
    }
    return std::move(patterns_);
  }

  bool out_of_time() {
    if (statistics_.hit_time_limit) return true;
    double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
    if (elapsed > options_.time_limit_s) statistics_.hit_time_limit = true;
    return statistics_.hit_time_limit;
  }

 private:
  enum class Outcome { kAccepted, kDropped, kNonConvex, kInfeasible };
  struct Memo {
    Outcome outcome = Outcome::kDropped;
    bool explored = false;  // exploration already expanded this set
  };

  int32_t position(NodeId id) const { return position_[static_cast<size_t>(id)]; }

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
      if (kind == ir::OpKind::kReduction || kind == ir::OpKind::kGemm) {
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
  void explore(const NodeSet& current) {
    if (static_cast<int>(current.size()) >= options_.max_pattern_size) return;
    std::vector<NodeId> extensions;
    auto consider = [&](NodeId id) {
      if (in_set(current, id) || partition_.role(id) == NodeRole::kPartition ||
          is_constant_node(graph_.node(id))) {
        return;
      }
      extensions.push_back(id);
    };
    std::vector<NodeId> consumers;
    std::vector<NodeId> producers;
    for (NodeId id : current) {
      for (NodeId successor : successors_[static_cast<size_t>(id)]) consumers.push_back(successor);
      for (NodeId predecessor : predecessors_[static_cast<size_t>(id)])
        producers.push_back(predecessor);
    }
    for (std::vector<NodeId>* list : {&consumers, &producers}) {
      std::sort(list->begin(), list->end());
      list->erase(std::unique(list->begin(), list->end()), list->end());
      for (NodeId id : *list) consider(id);
    }
    for (NodeId extension : extensions) {
      if (patterns_this_seed_ >= options_.max_patterns_per_seed || out_of_time()) return;
      NodeSet fusion = set_union(current, {extension});
      Memo& memo = evaluate(fusion, PatternSource::kExploratory, -1, /*convex_known=*/false);
      if (memo.explored) continue;  // every set is expanded once, whichever seed reaches it
      memo.explored = true;
      ++patterns_this_seed_;
      if (memo.outcome == Outcome::kNonConvex || memo.outcome == Outcome::kInfeasible) continue;
      explore(fusion);
    }
  }

  // Checks, scores and records one node set; each distinct set is evaluated once
  // (the first source to find it keeps it). The reference stays valid: elements of
  // an unordered_map do not move on rehash.
  Memo& evaluate(const NodeSet& nodes, PatternSource source, int step, bool convex_known) {
    auto [it, inserted] = memo_.try_emplace(nodes);
    if (inserted) it->second.outcome = evaluate_new(nodes, source, step, convex_known);
    return it->second;
  }

  Outcome evaluate_new(const NodeSet& nodes, PatternSource source, int step, bool convex_known) {
    if (!convex_known && !convex(nodes)) {
      ++statistics_.rejected_non_convex;
      return Outcome::kNonConvex;
    }
    int launching = 0;
    for (NodeId id : nodes) launching += launching_[static_cast<size_t>(id)] ? 1 : 0;
    if (launching < 2) return Outcome::kDropped;
    cost_model::PatternScore score =
        cost_model::score_pattern(graph_, nodes, profile_, score_options_);
    if (!score.feasible) {
      ++statistics_.rejected_infeasible;
      return Outcome::kInfeasible;
    }
    if (score.score_us <= 0) return Outcome::kDropped;
    Pattern pattern;
    pattern.nodes = nodes;
    pattern.source = source;
    pattern.substitution_step = step;
    pattern.score_us = score.score_us;
    pattern.bytes_saved = score.bytes_saved;
    pattern.shared_memory_bytes = score.shared_memory_bytes;
    patterns_.push_back(std::move(pattern));
    return Outcome::kAccepted;
  }

  // Convex iff no successor s outside P of a node of P reaches a node of P (the
  // first node of any path that leaves P is such an s). A set spanning more than
  // the reachability window cannot be proven convex.
  bool convex(const NodeSet& nodes) const {
    int32_t low = position(nodes.front());
    int32_t high = low;
    for (NodeId id : nodes) {
      low = std::min(low, position(id));
      high = std::max(high, position(id));
    }
    if (static_cast<int64_t>(high) - low > reachability_->window()) return false;
    std::vector<uint64_t> mask(static_cast<size_t>(high - low) / 64 + 1, 0);
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
  bool independent(const NodeSet& a, const NodeSet& b) const {
    for (NodeId x : a) {
      for (NodeId y : b) {
        if (reachability_->reaches(position(x), position(y)) != WindowedReachability::Answer::kNo ||
            reachability_->reaches(position(y), position(x)) != WindowedReachability::Answer::kNo) {
          return false;
        }
      }
    }
    return true;
  }

  int64_t largest_tensor_elements(const NodeSet& nodes) const {
    int64_t largest = 0;
    for (NodeId id : nodes) {
      const ir::Node& node = graph_.node(id);
      for (const std::vector<ir::ValueId>* values : {&node.inputs, &node.outputs}) {
        for (ir::ValueId value : *values) {
          if (value != ir::kNoId)
            largest = std::max(largest, graph_.value(value).type.num_elements());
        }
      }
    }
    return largest;
  }

  // Values the unit reads that no node of the unit produces, sorted.
  std::vector<ir::ValueId> external_inputs(const NodeSet& nodes) const {
    std::vector<ir::ValueId> inputs;
    for (NodeId id : nodes) {
      for (ir::ValueId value : graph_.node(id).inputs) {
        if (value == ir::kNoId) continue;
        NodeId producer = graph_.value(value).producer;
        if (producer != ir::kNoId && in_set(nodes, producer)) continue;
        inputs.push_back(value);
      }
    }
    std::sort(inputs.begin(), inputs.end());
    inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
    return inputs;
  }

  const ir::Graph& graph_;
  const Partition& partition_;
  const cost_model::DeviceProfile& profile_;
  const cost_model::ScoreOptions& score_options_;
  const CandidateOptions& options_;
  CandidateStatistics& statistics_;
  Clock::time_point start_;

  std::vector<NodeId> order_;
  std::vector<int32_t> position_;                  // by node id; -1 for dead nodes
  std::vector<bool> launching_;                    // by node id: cost_model::launches_work
  std::vector<std::vector<NodeId>> successors_;    // by node id, sorted
  std::vector<std::vector<NodeId>> predecessors_;  // by node id, sorted
  std::optional<WindowedReachability> reachability_;

  std::vector<Pattern> patterns_;
  // Every node set evaluated so far, and whether exploration expanded it; looked
  // up, never iterated.
  std::unordered_map<NodeSet, Memo, NodeSetHash> memo_;
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
  generator.substitution();
  if (options.exploratory && !generator.out_of_time()) generator.exploratory();
  if (options.packing && !generator.out_of_time()) generator.packing();
  std::vector<Pattern> patterns = generator.take_patterns();
  statistics.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return patterns;
}

}  // namespace stitch::fusion
