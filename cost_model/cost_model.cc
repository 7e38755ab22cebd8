// M(V) and the pattern scores (the kernel and plan estimates are in estimate.cc);
// the model is documented in cost_model.h.
#include "cost_model/cost_model.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <string_view>

#include "cost_model/graph_facts.h"
#include "ir/core/attention.h"
#include "ir/core/gemm_shape.h"
#include "ir/core/op_registry.h"
#include "ir/core/window.h"

namespace stitch::cost_model {

using namespace detail;  // NOLINT(google-build-using-namespace): this library's own helpers

namespace detail {

bool is_transcendental(const Node& node) {
  static const std::set<std::string_view> kOps = {
      "Acos", "Acosh", "Asin",     "Asinh",    "Atan", "Atanh", "Cos",        "Cosh", "Elu",
      "Erf",  "Exp",   "Gelu",     "Log",      "Mish", "Pow",   "Reciprocal", "Selu", "Sigmoid",
      "Sin",  "Sinh",  "Softplus", "Softsign", "Sqrt", "Tan",   "Tanh"};
  return kOps.count(node.op_type) != 0;
}

std::string unknown_shape_reason(const Graph& graph, const Node& node) {
  auto check = [&](ValueId value) -> std::string {
    const ir::TensorType& type = graph.value(value).type;
    if (!type.is_static() || ir::dtype_size(type.dtype) <= 0) {
      return "node " + node.display_name() + ": tensor \"" + graph.value(value).name +
             "\" has no static shape and dtype (" + ir::to_string(type) +
             "); no composition can express it";
    }
    return "";
  };
  std::string reason;
  for_each_read(node, [&](ValueId value) {
    if (reason.empty()) reason = check(value);
  });
  if (!reason.empty()) return reason;
  for (ValueId value : node.outputs) {
    if (value == kNoId) continue;
    if (std::string reason = check(value); !reason.empty()) return reason;
  }
  if (ir::op_kind(node) == OpKind::kReduction &&
      ir::classify_reduction(graph, node) == ir::ReductionKind::kNone) {
    return "node " + node.display_name() +
           ": reduction axes are not known at compile time; no composition can express it";
  }
  return "";
}

}  // namespace detail

namespace {

PatternScore infeasible(std::string reason) {
  PatternScore score;
  score.feasible = false;
  score.reason = std::move(reason);
  score.score_us = -1;
  return score;
}

// phi: the profile's launch latency unless the options override it.
double launch_latency_us(const DeviceProfile& profile, const ScoreOptions& options) {
  return options.launch_latency_us_override >= 0 ? options.launch_latency_us_override
                                                 : profile.launch_latency_us;
}

// The memory term of a score: the DRAM time of the pattern's nodes as kernels of their
// own (`alone_memory_us`, the sum of M of each one's bytes) less the time of the fused
// kernel, which moves what they moved (the sum of their bytes less what fusion saves:
// `fused_bytes`). Each removed kernel also removes its own small-transfer
// floor, which M(V_saved) would credit once per pattern.
double memory_saved_us(const DeviceProfile& profile, double alone_memory_us, int64_t fused_bytes) {
  return alone_memory_us -
         memory_time_us(profile, static_cast<double>(std::max<int64_t>(fused_bytes, 0)));
}

}  // namespace

bool launches_work(const Node& node) { return !is_view(node) && !is_constant(node); }

double memory_time_us(const DeviceProfile& profile, double bytes) {
  if (bytes <= 0) return 0;
  const std::vector<BandwidthPoint>& curve = profile.bandwidth_curve;
  STITCH_CHECK(!curve.empty()) << "device profile " << profile.name << " has no bandwidth curve";
  double bandwidth;
  if (bytes <= curve.front().bytes) {
    bandwidth = curve.front().bytes_per_second;
  } else if (bytes >= curve.back().bytes) {
    bandwidth = curve.back().bytes_per_second;
  } else {
    auto upper = std::upper_bound(curve.begin(), curve.end(), bytes,
                                  [](double b, const BandwidthPoint& p) { return b < p.bytes; });
    const BandwidthPoint& high = *upper;
    const BandwidthPoint& low = *(upper - 1);
    double fraction =
        (std::log(bytes) - std::log(low.bytes)) / (std::log(high.bytes) - std::log(low.bytes));
    bandwidth = low.bytes_per_second + (high.bytes_per_second - low.bytes_per_second) * fraction;
  }
  return bytes / bandwidth * 1e6;
}

// The scorer's state: per-node facts filled on first use, and scratch arrays by
// node and value id whose entries count only when their stamp equals the current
// pattern's epoch (or, for distinct readers, the current query's stamp), so no
// array is cleared between patterns.
class PatternScorer::Impl {
 public:
  Impl(const Graph& graph, const DeviceProfile& profile, const ScoreOptions& options)
      : graph_(graph), profile_(profile), options_(options) {
    auto node_count = static_cast<size_t>(graph.node_capacity());
    auto value_count = static_cast<size_t>(graph.value_capacity());
    facts_.resize(node_count);
    member_.assign(node_count, 0);
    after_reduction_.assign(node_count, 0);
    reader_seen_.assign(node_count, 0);
    indegree_.assign(node_count, 0);
    external_seen_.assign(value_count, 0);
    external_readers_.assign(value_count, 0);
    external_last_reader_.assign(value_count, kNoId);
    parameter_seen_.assign(value_count, 0);
    largest_reader_.assign(value_count, 0);
    attention_core_.assign(node_count, -1);
    for (ir::AttentionCore& core : ir::find_attention_cores(graph)) {
      if (std::max(core.d, core.dv) <= options.max_attention_head_dim)
        cores_.push_back(std::move(core));
    }
    for (size_t c = 0; c < cores_.size(); ++c) {
      for (NodeId id : cores_[c].nodes())
        attention_core_[static_cast<size_t>(id)] = static_cast<int>(c);
    }
  }

  PatternScore score(const std::vector<NodeId>& pattern);

 private:
  // Shared-memory staging and recomputation a pattern's one-to-many dependencies need.
  struct StagingCost {
    int64_t shared = 0;
    int64_t recompute = 0;
  };
  // The steps of score(), over nodes_ (sorted, stamped in member_).
  std::optional<std::string> why_infeasible();
  int64_t bytes_saved();
  StagingCost staging_cost();
  std::optional<std::string> parameter_overflow();
  int strided_reads();

  // What scoring needs about one node; depends on the node alone.
  struct NodeFacts {
    bool known = false;
    OpKind kind = OpKind::kOpaque;
    bool launches = false;                                   // launches_work
    bool constant = false;                                   // is_constant
    bool transcendental = false;                             // is_transcendental
    bool costable = false;                                   // unknown_shape_reason is ""
    ir::ReductionKind reduction = ir::ReductionKind::kNone;  // Reduction-kind nodes only
    int64_t max_output_elements = 0;
    // Launching, costable nodes: the bytes the node moves as a kernel of its own
    // (estimate_group's), and M of them.
    int64_t alone_bytes = 0;
    double alone_memory_us = 0;
    bool moves_innermost_axis = false;  // a Transpose whose last output axis is not its input's
  };

  // Readers of a tensor produced inside the pattern.
  struct ReaderSummary {
    int64_t inside = 0;          // distinct launching readers in the pattern
    bool outside = false;        // read outside the pattern or a graph output
    int64_t largest_inside = 0;  // largest max_output_elements among those readers
  };

  const NodeFacts& facts(NodeId id) {
    NodeFacts& facts = facts_[static_cast<size_t>(id)];
    return facts.known ? facts : fill_facts(id, facts);
  }

  // Kept out of line so that facts() inlines.
  [[gnu::noinline]] const NodeFacts& fill_facts(NodeId id, NodeFacts& facts) {
    const Node& node = graph_.node(id);
    facts.kind = ir::op_kind(node);
    facts.launches = launches_work(node);
    facts.constant = is_constant(node);
    facts.transcendental = is_transcendental(node);
    facts.costable = unknown_shape_reason(graph_, node).empty();
    if (facts.kind == OpKind::kReduction) facts.reduction = ir::classify_reduction(graph_, node);
    facts.max_output_elements = max_output_elements(graph_, node);
    if (node.op_type == "Transpose" && node.domain.empty() && !node.inputs.empty() &&
        node.inputs[0] != kNoId) {
      const size_t rank = graph_.value(node.inputs[0]).type.dims.size();
      std::vector<int64_t> perm = node.ints_attribute("perm", {});
      facts.moves_innermost_axis =
          rank > 1 && (perm.empty() || perm.back() != static_cast<int64_t>(rank) - 1);
    }
    if (facts.launches && facts.costable) {
      facts.alone_bytes = estimate_group(graph_, {id}, profile_).bytes;
      facts.alone_memory_us = memory_time_us(profile_, static_cast<double>(facts.alone_bytes));
    }
    facts.known = true;
    return facts;
  }

  bool contains(NodeId id) const {
    return id != kNoId && member_[static_cast<size_t>(id)] == epoch_;
  }

  // A new stamp for `counter`; on wrap-around the arrays it stamps are cleared so an
  // old stamp never matches.
  template <typename... Arrays>
  static uint32_t next_stamp(uint32_t& counter, Arrays&... arrays) {
    if (++counter == 0) {
      (std::fill(arrays.begin(), arrays.end(), 0u), ...);
      counter = 1;
    }
    return counter;
  }

  // NodeSet::alias_root.
  ValueId alias_root(ValueId value) {
    while (true) {
      NodeId producer = graph_.value(value).producer;
      if (!contains(producer)) return value;
      const Node& node = graph_.node(producer);
      if (facts(producer).kind != OpKind::kView || node.inputs.empty() || node.inputs[0] == kNoId) {
        return value;
      }
      value = node.inputs[0];
    }
  }

  // NodeSet::produced_inside.
  bool produced_inside(ValueId root) {
    NodeId producer = graph_.value(root).producer;
    return contains(producer) && facts(producer).launches;
  }

  // NodeSet::read_outside, and the distinct launching readers inside the pattern.
  ReaderSummary readers(ValueId root) {
    ReaderSummary summary;
    uint32_t stamp = next_stamp(reader_stamp_, reader_seen_);
    stack_.assign(1, root);
    while (!stack_.empty()) {
      const Value& value = graph_.value(stack_.back());
      stack_.pop_back();
      if (value.is_graph_output) summary.outside = true;
      for (const ir::Use& use : value.users) {
        if (!contains(use.node)) {
          summary.outside = true;
          continue;
        }
        const NodeFacts& reader = facts(use.node);
        if (reader.kind == OpKind::kView) {
          if (use.slot != 0) continue;  // a shape operand: read at compile time
          for (ValueId output : graph_.node(use.node).outputs) {
            if (output != kNoId) stack_.push_back(output);
          }
        } else if (reader.launches && reader_seen_[static_cast<size_t>(use.node)] != stamp) {
          reader_seen_[static_cast<size_t>(use.node)] = stamp;
          ++summary.inside;
          summary.largest_inside = std::max(summary.largest_inside, reader.max_output_elements);
        }
      }
    }
    return summary;
  }

  void add_parameter(ValueId value) {
    if (parameter_seen_[static_cast<size_t>(value)] == epoch_) return;
    parameter_seen_[static_cast<size_t>(value)] = epoch_;
    parameters_.push_back(value);
  }

  // Marks every node of the pattern that a reduction of the pattern precedes (a
  // path inside the pattern from a reduction to it), visiting the nodes in a
  // topological order of the induced subgraph (Kahn's algorithm).
  void mark_after_reduction() {
    ready_.clear();
    for (NodeId id : nodes_) {
      int count = 0;
      for_each_read(graph_.node(id), [&](ValueId value) {
        if (contains(graph_.value(value).producer)) ++count;
      });
      indegree_[static_cast<size_t>(id)] = count;
      if (count == 0) ready_.push_back(id);
    }
    size_t ordered = 0;
    while (!ready_.empty()) {
      NodeId id = ready_.back();
      ready_.pop_back();
      ++ordered;
      const Node& node = graph_.node(id);
      bool follows = false;
      for_each_read(node, [&](ValueId value) {
        NodeId producer = graph_.value(value).producer;
        if (contains(producer) && (after_reduction_[static_cast<size_t>(producer)] == epoch_ ||
                                   facts(producer).kind == OpKind::kReduction)) {
          follows = true;
        }
      });
      if (follows) after_reduction_[static_cast<size_t>(id)] = epoch_;
      for (ValueId output : node.outputs) {
        if (output == kNoId) continue;
        for (const ir::Use& use : graph_.value(output).users) {
          if (contains(use.node) && --indegree_[static_cast<size_t>(use.node)] == 0) {
            ready_.push_back(use.node);
          }
        }
      }
    }
    STITCH_CHECK(ordered == nodes_.size()) << "pattern nodes form a cycle";
  }

  // Whether `id` belongs to an attention core (ir/core/attention.h) whose every node
  // is in the pattern: the fused attention schedule computes it, tiling both GEMMs
  // over the keys and keeping the softmax's row state in registers.
  bool in_whole_attention(NodeId id) const {
    const int core = attention_core_[static_cast<size_t>(id)];
    if (core < 0) return false;
    for (NodeId member : cores_[static_cast<size_t>(core)].nodes()) {
      if (member_[static_cast<size_t>(member)] != epoch_) return false;
    }
    return true;
  }

  const Graph& graph_;
  const DeviceProfile profile_;  // copies: callers may pass temporaries
  const ScoreOptions options_;
  std::vector<ir::AttentionCore> cores_;
  std::vector<int> attention_core_;  // by node id: index into cores_, or -1

  std::vector<NodeFacts> facts_;  // by node id

  uint32_t epoch_ = 0;                        // the current pattern's stamp
  std::vector<uint32_t> member_;              // by node id: in the pattern
  std::vector<uint32_t> after_reduction_;     // by node id: a reduction of the pattern precedes it
  std::vector<int> indegree_;                 // by node id, members only: unvisited producers
  std::vector<uint32_t> external_seen_;       // by value id: an external input of the pattern
  std::vector<int64_t> external_readers_;     // by value id: its distinct launching readers
  std::vector<NodeId> external_last_reader_;  // by value id
  std::vector<uint32_t> parameter_seen_;      // by value id: a kernel parameter
  std::vector<int64_t> largest_reader_;       // by value id, outputs of launching members

  uint32_t reader_stamp_ = 0;          // one per readers() query
  std::vector<uint32_t> reader_seen_;  // by node id

  std::vector<NodeId> nodes_;  // the pattern, sorted
  std::vector<NodeId> reductions_;
  std::vector<NodeId> ready_;
  std::vector<ValueId> stack_;
  std::vector<ValueId> external_roots_;
  std::vector<ValueId> parameters_;
  std::vector<const std::vector<int64_t>*> shapes_;
};

// Steps 1 to 5 of scoring: why no single kernel can hold the pattern, or nullopt.
std::optional<std::string> PatternScorer::Impl::why_infeasible() {
  // 1. Size: the generated kernel must compile in reasonable time.
  if (static_cast<int64_t>(nodes_.size()) > options_.max_nodes_per_kernel) {
    return std::string(std::to_string(nodes_.size()) + " nodes in one kernel, over the limit " +
                       std::to_string(options_.max_nodes_per_kernel) +
                       " (nvcc's time grows faster than linearly with the inlined ops)");
  }
  // 2. Every tensor must have a static shape.
  for (NodeId id : nodes_) {
    if (!facts(id).costable) return unknown_shape_reason(graph_, graph_.node(id));
  }
  // 3. Ops no composition expresses.
  for (NodeId id : nodes_) {
    const NodeFacts& node_facts = facts(id);
    if (node_facts.kind == OpKind::kOpaque && !node_facts.constant) {
      return std::string(
          "node " + graph_.node(id).display_name() +
          " is an Opaque op that runs as its own kernel; no composition can express it");
    }
    if (node_facts.kind == OpKind::kConv) {
      return std::string("node " + graph_.node(id).display_name() +
                         " is a convolution (a library call); no composition can express it");
    }
    if (node_facts.kind == OpKind::kStencil) {
      if (std::optional<std::string> refusal = ir::stencil_refusal(
              graph_, graph_.node(id), options_.max_stencil_channels_per_group)) {
        return std::string("node " + graph_.node(id).display_name() + ": " + *refusal);
      }
    }
  }
  // 4. GEMMs too large for a fused kernel's shared-memory tiles.
  for (NodeId id : nodes_) {
    if (facts(id).kind != OpKind::kGemm || in_whole_attention(id)) continue;
    const Node& node = graph_.node(id);
    const ir::GemmShape shape = ir::gemm_shape(graph_, node).value_or(ir::GemmShape{});
    int64_t multiply_adds = shape.m * shape.n * shape.k;
    if (multiply_adds > kMaxFusedGemmMultiplyAdds) {
      return std::string("node " + node.display_name() + ": GEMM m*n*k = " +
                         std::to_string(shape.m) + "*" + std::to_string(shape.n) + "*" +
                         std::to_string(shape.k) + " = " + std::to_string(multiply_adds) +
                         " per batch is over the fused limit 64*64*64 = 262144; it runs as a "
                         "library call");
    }
  }
  // 5. Reductions: count and layout.
  reductions_.clear();
  for (NodeId id : nodes_) {
    if (facts(id).kind == OpKind::kReduction) reductions_.push_back(id);
  }
  if (static_cast<int>(reductions_.size()) > options_.max_reductions_per_kernel) {
    return std::string(std::to_string(reductions_.size()) +
                       " reductions in one kernel, over the limit " +
                       std::to_string(options_.max_reductions_per_kernel));
  }
  for (NodeId row_id : reductions_) {
    if (facts(row_id).reduction != ir::ReductionKind::kRow) continue;
    const Node& row = graph_.node(row_id);
    for (NodeId other_id : reductions_) {
      ir::ReductionKind kind = facts(other_id).reduction;
      if (kind != ir::ReductionKind::kColumn && kind != ir::ReductionKind::kAll) continue;
      const Node& other = graph_.node(other_id);
      const ir::TensorType& row_type = graph_.value(row.inputs[0]).type;
      const ir::TensorType& other_type = graph_.value(other.inputs[0]).type;
      if (row_type.dims != other_type.dims) {
        return std::string(std::string(ir::reduction_kind_name(kind)) + " reduction " +
                           other.display_name() + " over " + ir::dims_text(other_type.dims) +
                           " and row reduction " + row.display_name() + " over " +
                           ir::dims_text(row_type.dims) +
                           " need different thread mappings; no composition can express it");
      }
    }
  }
  return std::nullopt;
}

// Off-chip bytes the pattern saves: tensors produced and consumed inside, and
// external tensors read by several nodes. Collects the kernel's parameters.
int64_t PatternScorer::Impl::bytes_saved() {
  int64_t saved = 0;
  parameters_.clear();
  // Tensors produced inside: reads (and writes) kept on chip.
  for (NodeId id : nodes_) {
    if (!facts(id).launches) continue;
    for (ValueId output : graph_.node(id).outputs) {
      if (output == kNoId) continue;
      ReaderSummary summary = readers(output);
      largest_reader_[static_cast<size_t>(output)] = summary.largest_inside;
      int64_t bytes = value_bytes(graph_, output);
      saved += summary.inside * bytes;
      if (summary.outside) {
        add_parameter(output);
      } else if (summary.inside > 0) {
        saved += bytes;
      }
    }
  }
  // Tensors from outside read by several nodes: read once. The nodes go in
  // ascending order, so a reader repeats only right after itself.
  external_roots_.clear();
  for (NodeId id : nodes_) {
    if (!facts(id).launches) continue;
    for_each_read(graph_.node(id), [&](ValueId value) {
      ValueId root = alias_root(value);
      if (produced_inside(root)) return;
      auto index = static_cast<size_t>(root);
      if (external_seen_[index] != epoch_) {
        external_seen_[index] = epoch_;
        external_readers_[index] = 1;
        external_last_reader_[index] = id;
        external_roots_.push_back(root);
      } else if (external_last_reader_[index] != id) {
        ++external_readers_[index];
        external_last_reader_[index] = id;
      }
    });
  }
  for (ValueId root : external_roots_) {
    saved += (external_readers_[static_cast<size_t>(root)] - 1) * value_bytes(graph_, root);
    NodeId producer = graph_.value(root).producer;
    if (producer == kNoId || !is_constant(graph_.node(producer))) add_parameter(root);
  }
  return saved;
}

// One-to-many dependencies: shared-memory staging for reductions, recomputation
// for small ops computed before any reduction.
PatternScorer::Impl::StagingCost PatternScorer::Impl::staging_cost() {
  mark_after_reduction();
  StagingCost cost;
  for (NodeId id : nodes_) {
    const NodeFacts& node_facts = facts(id);
    if (!node_facts.launches) continue;
    OpKind kind = node_facts.kind;
    bool reduction = kind == OpKind::kReduction;
    bool recomputable = (kind == OpKind::kElementwise || kind == OpKind::kBroadcast ||
                         kind == OpKind::kInjective) &&
                        after_reduction_[static_cast<size_t>(id)] != epoch_;
    if (!reduction && !recomputable) continue;
    if (reduction && in_whole_attention(id)) continue;
    const Node& node = graph_.node(id);
    for (ValueId output : node.outputs) {
      if (output == kNoId) continue;
      int64_t elements = value_elements(graph_, output);
      int64_t largest_reader = largest_reader_[static_cast<size_t>(output)];
      if (largest_reader <= elements) continue;
      if (reduction) {
        if (node_facts.reduction == ir::ReductionKind::kRow) {
          int64_t input_elements = value_elements(graph_, node.inputs[0]);
          int64_t row_length = elements > 0 ? input_elements / elements : 0;
          cost.shared += row_length * ir::dtype_size(graph_.value(node.inputs[0]).type.dtype);
        } else {
          cost.shared += value_bytes(graph_, output);
        }
      } else {
        double weight = node_facts.transcendental ? kTranscendentalCost : 1.0;
        cost.recompute +=
            static_cast<int64_t>(static_cast<double>(largest_reader - elements) * weight) *
            ir::dtype_size(graph_.value(output).type.dtype);
      }
    }
  }
  return cost;
}

// Transposes of the pattern that move the innermost axis of a tensor read from outside
// the pattern: the kernel reads it across its rows.
int PatternScorer::Impl::strided_reads() {
  int count = 0;
  for (NodeId id : nodes_) {
    if (!facts(id).moves_innermost_axis) continue;
    if (!produced_inside(alias_root(graph_.node(id).inputs[0]))) ++count;
  }
  return count;
}

// Kernel parameters: a pointer per distinct tensor and the dims of each distinct
// shape. Why they are over the limit, or nullopt.
std::optional<std::string> PatternScorer::Impl::parameter_overflow() {
  shapes_.clear();
  for (ValueId value : parameters_) shapes_.push_back(&graph_.value(value).type.dims);
  std::sort(shapes_.begin(), shapes_.end(),
            [](const std::vector<int64_t>* a, const std::vector<int64_t>* b) { return *a < *b; });
  shapes_.erase(std::unique(shapes_.begin(), shapes_.end(),
                            [](const std::vector<int64_t>* a, const std::vector<int64_t>* b) {
                              return *a == *b;
                            }),
                shapes_.end());
  int64_t parameter_bytes = 8 * static_cast<int64_t>(parameters_.size());
  for (const std::vector<int64_t>* dims : shapes_)
    parameter_bytes += 8 * static_cast<int64_t>(dims->size());
  if (parameter_bytes > options_.max_kernel_parameter_bytes) {
    return std::string("kernel parameters need " + std::to_string(parameter_bytes) + " bytes (" +
                       std::to_string(parameters_.size()) + " tensors, " +
                       std::to_string(shapes_.size()) + " distinct shapes), over the limit " +
                       std::to_string(options_.max_kernel_parameter_bytes));
  }
  return std::nullopt;
}

PatternScore PatternScorer::Impl::score(const std::vector<NodeId>& pattern) {
  nodes_.assign(pattern.begin(), pattern.end());
  sort_and_check_nodes(graph_, nodes_);
  STITCH_CHECK(!nodes_.empty()) << "empty pattern";
  next_stamp(epoch_, member_, after_reduction_, external_seen_, parameter_seen_);
  for (NodeId id : nodes_) member_[static_cast<size_t>(id)] = epoch_;
  int launching = 0;
  for (NodeId id : nodes_) launching += facts(id).launches ? 1 : 0;
  if (nodes_.size() == 1) {
    PatternScore score;
    score.feasible = true;
    score.num_kernels_replaced = launching;
    return score;
  }

  if (std::optional<std::string> why = why_infeasible()) return infeasible(std::move(*why));
  PatternScore score;
  score.num_kernels_replaced = launching;
  const int64_t saved = bytes_saved();
  score.bytes_saved = saved;
  const StagingCost staging = staging_cost();
  const int64_t shared = staging.shared;
  const int64_t recompute = staging.recompute;
  score.shared_memory_bytes = shared;
  score.recompute_bytes = recompute;
  // A refusal from here on still reports what the pattern would save and need.
  auto refuse = [&](std::string reason) {
    PatternScore refused = infeasible(std::move(reason));
    refused.bytes_saved = saved;
    refused.shared_memory_bytes = shared;
    refused.recompute_bytes = recompute;
    refused.num_kernels_replaced = launching;
    return refused;
  };
  if (shared > profile_.shared_memory_per_block_optin) {
    return refuse("needs " + std::to_string(shared) +
                  " bytes of shared memory per block, over the device's " +
                  std::to_string(profile_.shared_memory_per_block_optin) + " (" + profile_.name +
                  " opt-in limit)");
  }
  if (std::optional<std::string> why = parameter_overflow()) return refuse(std::move(*why));

  score.feasible = true;
  int64_t alone_bytes = 0;
  double alone_memory_us = 0;
  for (NodeId id : nodes_) {
    alone_bytes += facts(id).alone_bytes;
    alone_memory_us += facts(id).alone_memory_us;
  }
  score.score_us = memory_saved_us(profile_, alone_memory_us, alone_bytes - saved) +
                   std::max(launching - 1, 0) * launch_latency_us(profile_, options_) -
                   memory_time_us(profile_, static_cast<double>(recompute)) -
                   kStridedReadTieBreakUs * static_cast<double>(strided_reads());
  return score;
}

PatternScorer::PatternScorer(const Graph& graph, const DeviceProfile& profile,
                             const ScoreOptions& options)
    : impl_(std::make_unique<Impl>(graph, profile, options)) {}

PatternScorer::~PatternScorer() = default;

PatternScore PatternScorer::score(const std::vector<NodeId>& nodes) { return impl_->score(nodes); }

PatternScore score_pattern(const Graph& graph, const std::vector<NodeId>& nodes,
                           const DeviceProfile& profile, const ScoreOptions& options) {
  return PatternScorer(graph, profile, options).score(nodes);
}

PatternScore score_epilogue(const Graph& graph, const std::vector<NodeId>& chain,
                            const DeviceProfile& profile, const ScoreOptions& options) {
  STITCH_CHECK(!chain.empty()) << "empty epilogue chain";
  PatternScore score;
  score.feasible = true;
  score.num_kernels_replaced = static_cast<int>(chain.size());
  int64_t saved = 0;
  for (size_t i = 0; i + 1 < chain.size(); ++i) {
    const Node& producer = graph.node(chain[i]);
    STITCH_CHECK(!producer.outputs.empty() && producer.outputs[0] != kNoId)
        << "epilogue chain node " << producer.display_name() << " has no output";
    ValueId intermediate = producer.outputs[0];
    const Value& value = graph.value(intermediate);
    bool inside = !value.is_graph_output && !value.users.empty();
    for (const ir::Use& use : value.users) {
      inside = inside && std::find(chain.begin(), chain.end(), use.node) != chain.end();
    }
    STITCH_CHECK(inside) << "epilogue intermediate " << value.name
                         << " is read outside the chain or is a graph output";
    saved += (1 + static_cast<int64_t>(value.users.size())) * value_bytes(graph, intermediate);
  }
  score.bytes_saved = saved;
  int64_t alone_bytes = 0;
  double alone_memory_us = 0;
  for (NodeId id : chain) {
    const int64_t bytes = estimate_group(graph, {id}, profile).bytes;
    alone_bytes += bytes;
    alone_memory_us += memory_time_us(profile, static_cast<double>(bytes));
  }
  score.score_us = memory_saved_us(profile, alone_memory_us, alone_bytes - saved) +
                   static_cast<double>(chain.size() - 1) *
                       (launch_latency_us(profile, options) + kEpilogueTieBreakUs);
  return score;
}

}  // namespace stitch::cost_model
