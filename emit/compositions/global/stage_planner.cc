// The staged compositions' planner: the global composition's levels and launch, the
// reduction mappings, cheap producers recomputed, and the single stage (thread or
// packing) when no grid barrier is needed (emit/schedule.h, 3.-5.).
#include "emit/compositions/global/stage_planner.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "artifact/kernels_json.h"
#include "cost_model/device_profile.h"
#include "cost_model/recompute_cost.h"
#include "emit/compositions/group_facts.h"
#include "emit/compositions/stencil/stencil_planner.h"
#include "emit/compositions/thread/vector_planner.h"
#include "emit/compositions/tiled_gemm/tiled_gemm_plan.h"
#include "emit/cuda_text.h"
#include "emit/op_lowering.h"
#include "fusion/fusion_policy.h"
#include "ir/core/gemm_shape.h"
#include "ir/core/op_registry.h"
#include "ir/core/precision.h"
#include "ir/core/reduction_axes.h"

namespace stitch::emit {
namespace {

// Which reduction mappings a global-composition group uses (5.).
struct MappingUse {
  bool warp = false;    // a warp per output: shuffles
  bool column = false;  // a block per column tile: shuffles and shared memory
};

constexpr int64_t kSideBySideBlocksPerSm = 2;

// 3a. Cheap producers recomputed (issue 16 part 2). In the global composition a
// materialized elementwise value costs a stage (a grid barrier) and a round trip
// through the workspace; inlined, every read evaluates its expression again (up to
// materialized values and the group's inputs). It is inlined when that expression is
// small and the profile's estimate of the extra evaluations (their flops at the fp32
// peak, their operand reads at L2 bandwidth) is below one grid barrier plus the round
// trip: an unrolled GRU's new hidden state, read by the next step's three GEMMs.
constexpr int kRecomputeMaxOps = 32;
constexpr int kRecomputeMaxLeaves = 16;

// Thread mapping of a materialized reduction in the thread, packing and global
// compositions (schedule.h, 5.). Float inputs and the sum/mean/max/min/prod family
// only; the rest keeps a thread per output.
Status plan_reduction_mapping(const ir::Graph& graph, const ir::Node& node,
                              const cost_model::DeviceProfile& profile, ValueSchedule* value) {
  bool noop = false;
  STITCH_ASSIGN_OR_RETURN(std::vector<int64_t> axes, ir::reduction_axes(graph, node, &noop));
  const ir::DType in_type = graph.value(node.inputs[0]).type.dtype;
  const bool float_input = in_type == ir::DType::kFloat32 || in_type == ir::DType::kFloat16 ||
                           in_type == ir::DType::kBFloat16;
  if (noop || !float_input || reduces_per_thread_only(node)) return Status::ok();
  const std::vector<int64_t>& in = dims_of(graph, node.inputs[0]);
  int64_t reduced = 1;
  for (int64_t axis : axes) reduced *= in[static_cast<size_t>(axis)];
  int64_t inner = 1;
  for (size_t d = axes.empty() ? 0 : static_cast<size_t>(axes.back()) + 1; d < in.size(); ++d)
    inner *= in[d];
  const int64_t outputs = elements_of(graph, node.outputs[0]);
  // Zero-size: no output, or an empty set whose result is the identity; neither reads
  // an element, so there is nothing to spread over lanes.
  if (outputs == 0 || reduced == 0) return Status::ok();
  auto ceil_div = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  int64_t items = 0;      // work items without slices
  int64_t units = 0;      // co-resident warps or blocks
  int64_t min_slice = 0;  // reduced elements (rows) a slice keeps at least
  if (inner == 1) {
    if (reduced <= 32) return Status::ok();
    value->mapping = ReductionMapping::kWarp;
    items = outputs;
    units = static_cast<int64_t>(profile.sm_count) * profile.max_threads_per_sm / 32;
    min_slice = kMinSliceElements;
  } else {
    if (reduced <= 1) return Status::ok();
    value->mapping = ReductionMapping::kColumn;
    int columns = 1;
    while (columns < 32 && columns < inner) columns *= 2;
    value->columns = columns;
    value->inner = inner;
    items = outputs / inner * ceil_div(inner, columns);
    units = static_cast<int64_t>(profile.sm_count) *
            std::max(1, profile.max_threads_per_sm / kGlobalBlock);
    // 16 rows per thread keep the partials under ~2% of the input.
    min_slice = 16 * (kGlobalBlock / columns);
  }
  value->reduced = reduced;
  int64_t slices = std::min(units / std::max<int64_t>(items, 1), ceil_div(reduced, min_slice));
  slices = std::max<int64_t>(slices, 1);
  value->slice = ceil_div(reduced, slices);
  // A warp's slice of whole 128-byte lines: one starting inside a sector costs every
  // access of the warp one sector more.
  if (value->mapping == ReductionMapping::kWarp && slices >= 2)
    value->slice = align_to(value->slice, 32);
  value->slices = ceil_div(reduced, value->slice);
  value->items = items * value->slices;
  value->accumulator_bytes = reduction_accumulator_bytes(graph, node);
  return Status::ok();
}

// Whether a MatMul the stages write is computed a warp per output element
// (ValueSchedule::lanes_over_k): k of at least 32 (every lane has a term) and outputs
// that one wave of warps holds.
bool lanes_over_k(const ir::Graph& graph, const ir::Node& node,
                  const cost_model::DeviceProfile& profile) {
  if (gemm_form(node) != GemmForm::kMatMul || node.inputs.size() < 2 || node.outputs.empty())
    return false;
  const ir::TensorType& a = graph.value(node.inputs[0]).type;
  const ir::TensorType& out = graph.value(node.outputs[0]).type;
  if (!a.is_static() || !out.is_static() || a.dims.empty()) return false;
  const int64_t outputs = out.num_elements();
  return a.dims.back() >= 32 && outputs > 0 &&
         outputs * 32 <= static_cast<int64_t>(profile.sm_count) * profile.max_threads_per_sm;
}

// Whether a MatMul the stages write is computed on tensor cores, a warp per 16 x 8
// piece (ValueSchedule::warp_mma): its products are the tensor cores' at this precision
// and it has a whole piece and a whole k step. Asked only where a warp per output does
// not fit one wave (lanes_over_k): below that, 128 times more warps each walking k / 32
// terms beat a warp walking k / 8 steps of six loads (bert's layers at 2 x 16 tokens:
// 72.7 us estimated with lanes, 105.5 us with pieces everywhere).
bool warp_mma(const ir::Graph& graph, const ir::Node& node, ir::Precision products) {
  if (gemm_form(node) != GemmForm::kMatMul || node.inputs.size() < 2 || node.outputs.empty())
    return false;
  const ir::Precision precision =
      tiled_gemm_precision(graph.value(node.outputs[0]).type.dtype, products);
  if (precision == ir::Precision::kFloat32) return false;
  const std::optional<ir::GemmShape> shape = ir::gemm_shape(graph, node);
  const int64_t k_step = ir::reduces_storage(precision) ? 16 : 8;
  return shape && shape->m >= 16 && shape->n >= 8 && shape->k >= k_step;
}

// 3. Independent parts (weakly connected components of the group's data flow) that
// write an output, in order of their first node.
std::vector<std::vector<ir::NodeId>> independent_parts(const GroupFacts& group) {
  std::map<ir::NodeId, ir::NodeId> parent;
  for (ir::NodeId id : group.ordered) parent[id] = id;
  auto find = [&](ir::NodeId x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (ir::NodeId id : group.ordered) {
    for (ir::ValueId input : group.graph.node(id).inputs) {
      if (input == ir::kNoId) continue;
      ir::NodeId producer = group.graph.value(input).producer;
      if (producer != ir::kNoId && group.inside.count(producer)) {
        ir::NodeId a = find(id);
        ir::NodeId b = find(producer);
        if (a != b) parent[std::max(a, b)] = std::min(a, b);
      }
    }
  }
  std::map<ir::NodeId, std::vector<ir::NodeId>> components;
  std::vector<ir::NodeId> roots;
  for (ir::NodeId id : group.ordered) {
    ir::NodeId root = find(id);
    if (!components.count(root)) roots.push_back(root);
    components[root].push_back(id);
  }
  // A part without an output (only views feeding nothing) is dropped from packing.
  std::vector<std::vector<ir::NodeId>> parts;
  for (ir::NodeId root : roots) {
    bool writes = false;
    for (ir::NodeId id : components[root]) {
      for (ir::ValueId output : group.graph.node(id).outputs) {
        if (output != ir::kNoId && group.outputs.count(output)) writes = true;
      }
    }
    if (writes) parts.push_back(components[root]);
  }
  return parts;
}

// The ops and the operand reads of one evaluation of `id`'s producer, through the
// values it inlines; false past the limits.
bool expression_cost(const GroupFacts& group, const GroupSchedule& schedule, ir::ValueId id,
                     int* ops, int* leaves) {
  const ir::Node& node = group.graph.node(group.graph.value(id).producer);
  const ir::OpKind kind = ir::op_kind(node);
  if (kind != ir::OpKind::kElementwise && kind != ir::OpKind::kBroadcast &&
      kind != ir::OpKind::kView && kind != ir::OpKind::kInjective) {
    return false;
  }
  *ops += kind == ir::OpKind::kElementwise || kind == ir::OpKind::kBroadcast ? 1 : 0;
  for (ir::ValueId input : node.inputs) {
    if (input == ir::kNoId) continue;
    const ir::Value& value = group.graph.value(input);
    auto it = schedule.values.find(input);
    if (value.producer == ir::kNoId || !group.inside.count(value.producer) ||
        it == schedule.values.end() || it->second.materialized) {
      if (!value.is_initializer() || value.type.num_elements() != 1)
        ++*leaves;  // literals are free
    } else if (!expression_cost(group, schedule, input, ops, leaves)) {
      return false;
    }
    if (*ops > kRecomputeMaxOps || *leaves > kRecomputeMaxLeaves) return false;
  }
  return true;
}

// Same-index epilogues (ValueSchedule::epilogue_of): the lanes-over-k MatMul a value
// reads at its own index through same-index reads only, and the deepest level of
// everything else it depends on (below the MatMul's: materialized earlier).
struct Epilogue {
  ir::ValueId gemm;
  int others;
};

// What a node's inputs say of its level: the deepest materialized level it depends
// on, and the lanes-over-k MatMul it would be an epilogue of (`source`, the one
// MatMul its same-index reads reach) with the deepest level of its other inputs.
struct InputLevels {
  int depends = -1;
  ir::ValueId source = ir::kNoId;
  bool single_source = true;
  int other = -1;
};

InputLevels input_levels(const GroupFacts& group, const ir::Node& node,
                         const GroupSchedule& schedule, const std::map<ir::ValueId, int>& reach,
                         const std::map<ir::ValueId, Epilogue>& epilogue_source) {
  InputLevels scan;
  for (ir::ValueId input : node.inputs) {
    auto it = input == ir::kNoId ? schedule.values.end() : schedule.values.find(input);
    if (it == schedule.values.end()) continue;
    const ValueSchedule& in = it->second;
    const auto reached = reach.find(input);
    int beside = in.materialized ? in.level : (reached == reach.end() ? 0 : reached->second);
    scan.depends = std::max(scan.depends, beside);
    ir::ValueId from = ir::kNoId;
    if (reads_at_same_index(group.graph, node, input)) {
      auto folded = epilogue_source.find(input);
      if (in.materialized && (in.lanes_over_k || in.warp_mma)) {
        from = input;
        beside = -1;
      } else if (!in.materialized && folded != epilogue_source.end()) {
        from = folded->second.gemm;
        beside = folded->second.others;
      }
    }
    if (from != ir::kNoId) {
      if (scan.source != ir::kNoId && scan.source != from) scan.single_source = false;
      scan.source = from;
    }
    scan.other = std::max(scan.other, beside);
  }
  return scan;
}

// 3./4. Levels of the global composition; 5. reduction mappings (a reduction cut into
// slices writes its partials one level before its result).
Result<MappingUse> plan_levels(const GroupFacts& group, const cost_model::DeviceProfile& profile,
                               GroupSchedule* schedule) {
  MappingUse use;
  std::map<ir::ValueId, int> reach;  // deepest materialized level a value depends on
  std::map<ir::ValueId, Epilogue> epilogue_source;
  // Not in a group holding an attention core's P x V product: with one barrier less,
  // gpt2_block's planner took a global kernel of P x V, the output projection and the
  // residual over its attention kernel, which the emulated profile estimates slower
  // (144.9 against 141.7 us for the model): the analytic charge of such global kernels
  // is low, and the issue asks for attention kernels without grid barriers. Looked up
  // once, on the first value that would fold (the planner's schedule oracle builds a
  // schedule for every candidate).
  std::optional<bool> splits_attention;
  auto may_fold = [&] {
    if (!splits_attention) {
      splits_attention =
          std::any_of(group.ordered.begin(), group.ordered.end(), [&](ir::NodeId id) {
            return is_gemm(group.graph.node(id)) &&
                   fusion::match_fused_attention(group.graph, id).has_value();
          });
    }
    return !*splits_attention;
  };
  int max_level = -1;
  for (ir::NodeId id : group.ordered) {
    const ir::Node& node = group.graph.node(id);
    const InputLevels scan = input_levels(group, node, *schedule, reach, epilogue_source);
    const int depends = scan.depends, other = scan.other;
    ir::ValueId source = scan.source;
    if (source != ir::kNoId && scan.single_source && other < schedule->values[source].level &&
        may_fold()) {
      for (ir::ValueId output : node.outputs) {
        if (output != ir::kNoId) epilogue_source[output] = {source, other};
      }
    } else {
      source = ir::kNoId;
    }
    for (ir::ValueId output : node.outputs) {
      if (output == ir::kNoId) continue;
      ValueSchedule& value = schedule->values[output];
      reach[output] = depends;
      if (value.materialized && ir::op_kind(node) == ir::OpKind::kReduction) {
        STITCH_RETURN_IF_ERROR(plan_reduction_mapping(group.graph, node, profile, &value));
        if (value.mapping == ReductionMapping::kWarp) use.warp = true;
        if (value.mapping == ReductionMapping::kColumn) use.column = true;
      }
      if (value.materialized || group.outputs.count(output)) {
        if (lanes_over_k(group.graph, node, profile)) {
          value.lanes_over_k = true;
          use.warp = true;
        } else if (warp_mma(group.graph, node, schedule->products)) {
          value.warp_mma = true;
          use.warp = true;
        }
        value.level = depends + (value.slices >= 2 ? 2 : 1);
        if (source != ir::kNoId) {
          // Written by the thread or lane that computes the GEMM's element: one stage
          // (and one grid barrier) less.
          value.epilogue_of = source;
          value.level = schedule->values[source].level;
        }
        max_level = std::max(max_level, value.level);
      }
    }
  }
  schedule->levels = max_level + 1;
  return use;
}

// 4. Workspace of the global composition (barrier counter, partials, materialized
// values), the block and the grid. Returns the threads each stage's loops need, by
// level (4c. reads them).
std::map<int, int64_t> plan_global_launch(const GroupFacts& group,
                                          const cost_model::DeviceProfile& profile,
                                          GroupSchedule* schedule) {
  const ir::Graph& graph = group.graph;
  // Threads: the largest value's, or the busiest stage's, whose loops run side by side
  // (each starts where the stage's previous one ended, KernelWriter::stage_code), up to
  // kSideBySideBlocksPerSm blocks per SM: more blocks make every grid barrier slower
  // (each block's arrival is an atomic on one counter).
  int64_t work = 1;
  std::map<int, int64_t> stage_work;
  int64_t side_by_side = 1;
  int64_t workspace = 0;
  if (schedule->levels > 1) {
    schedule->barrier_offset = 0;
    workspace = kWorkspaceAlignment;
  }
  for (ir::NodeId id : group.ordered) {
    for (ir::ValueId output : graph.node(id).outputs) {
      if (output == ir::kNoId) continue;
      ValueSchedule& value = schedule->values[output];
      if (value.materialized || group.outputs.count(output)) {
        const int64_t threads = stage_threads(graph, output, value);
        work = std::max(work, threads);
        stage_work[value.level] += threads;
        side_by_side = std::max(side_by_side, stage_work[value.level]);
      }
      if (!value.materialized) continue;
      schedule->materialized.push_back(output);
      if (value.slices >= 2) {
        value.partial_offset = workspace;
        workspace += align_to(elements_of(graph, output) * value.slices * value.accumulator_bytes,
                              kWorkspaceAlignment);
      }
      place_written_value(graph, output, group.outputs.count(output) > 0, &value, &workspace);
    }
  }
  schedule->workspace_bytes = workspace;
  work = std::max(work, std::min<int64_t>(side_by_side, kSideBySideBlocksPerSm * profile.sm_count *
                                                            kGlobalBlock));
  schedule->block = static_cast<int>(std::min<int64_t>(kGlobalBlock, align_to(work, 32)));
  // Column reductions combine their warps' columns through shared memory.
  for (const auto& [id, value] : schedule->values) {
    if (value.mapping != ReductionMapping::kColumn) continue;
    schedule->shared_bytes = std::max<int64_t>(
        schedule->shared_bytes, schedule->block / 32 * value.columns * value.accumulator_bytes);
  }
  schedule->shared_bytes_requested = schedule->shared_bytes;
  schedule->grid = wave_grid(work, profile, *schedule);
  schedule->cooperative = schedule->levels > 1;
  return stage_work;
}

// Returns the producers it inlined, for GroupSchedule::why.
std::vector<std::string> recompute_cheap_producers(const GroupFacts& group,
                                                   const cost_model::DeviceProfile& profile,
                                                   GroupSchedule* schedule) {
  const ir::Graph& graph = group.graph;
  std::vector<std::string> recomputed;
  // A whole attention core keeps its softmax staged here: the attention composition is
  // what it should get (no grid barrier), and a cheaper-looking global kernel holding
  // one would take its place in the plan.
  // Looked up once, and only for groups with a value to recompute (the planner's
  // schedule oracle builds schedules for every candidate).
  std::optional<std::set<ir::NodeId>> attention;
  auto in_attention = [&](ir::NodeId id) {
    if (!attention) {
      attention.emplace();
      for (ir::NodeId gemm : group.ordered) {
        if (!is_gemm(graph.node(gemm))) continue;
        if (std::optional<ir::AttentionCore> core = fusion::match_fused_attention(graph, gemm)) {
          for (ir::NodeId member : core->nodes()) attention->insert(member);
        }
      }
    }
    return attention->count(id) > 0;
  };
  for (ir::NodeId id : group.ordered) {  // producers first: their decisions stand
    const ir::Node& node = graph.node(id);
    const ir::OpKind kind = ir::op_kind(node);
    if (kind != ir::OpKind::kElementwise && kind != ir::OpKind::kBroadcast) continue;
    for (ir::ValueId output : node.outputs) {
      if (output == ir::kNoId) continue;
      ValueSchedule& value = schedule->values[output];
      if (!value.materialized) continue;
      int ops = 0, leaves = 0;
      if (!expression_cost(group, *schedule, output, &ops, &leaves) || in_attention(id)) continue;
      const double elements = static_cast<double>(elements_of(graph, output));
      double reads = 0;
      for (const ir::Use& use : graph.value(output).users) {
        if (!group.inside.count(use.node)) continue;
        const ir::Node& reader = graph.node(use.node);
        if (is_gemm(reader)) {
          const std::optional<ir::GemmShape> gemm = ir::gemm_shape(graph, reader);
          if (!gemm) continue;
          reads += static_cast<double>(gemm->batch * gemm->m * gemm->n * gemm->k);
        } else {
          reads += std::max(elements, static_cast<double>(elements_of(graph, reader.outputs[0])));
        }
      }
      const double bytes = elements * ir::dtype_size(graph.value(output).type.dtype);
      if (cost_model::recompute_cost(reads - elements, ops, leaves, bytes, profile)
              .recompute_is_cheaper()) {
        value.materialized = false;
        recomputed.push_back(node_label(node));
      }
    }
  }
  return recomputed;
}

// 3. A single-stage group: packing when it has independent parts (each over its own
// blocks), else block (column reductions), warp (warp reductions) or thread.
void plan_single_stage(const GroupFacts& group, const MappingUse& use,
                       const cost_model::DeviceProfile& profile, GroupSchedule* schedule) {
  std::vector<std::vector<ir::NodeId>> parts = independent_parts(group);
  if (parts.size() < 2) {
    ThreadPlan thread;
    thread.mapping = use.column ? StageMapping::kColumn
                     : use.warp ? StageMapping::kWarp
                                : StageMapping::kThread;
    schedule->plan = thread;
    return;
  }
  PackingPlan& packing = schedule->plan.emplace<PackingPlan>();
  packing.parts = std::move(parts);
  schedule->grid = 0;
  for (const std::vector<ir::NodeId>& part : packing.parts) {
    int64_t part_work = 1;
    for (ir::NodeId id : part) {
      for (ir::ValueId output : group.graph.node(id).outputs) {
        if (output != ir::kNoId && group.outputs.count(output)) {
          part_work =
              std::max(part_work, stage_threads(group.graph, output, schedule->values[output]));
        }
      }
    }
    const int64_t part_grid = wave_grid(part_work, profile, *schedule);
    packing.part_grids.push_back(part_grid);
    schedule->grid += part_grid;
  }
}

// The why line's list of what the group is not: always whether it is row-local, and
// each other refusal that gave a reason (attention and transpose say nothing).
std::string refusals_text(const std::vector<Refusal>& refusals) {
  std::string text;
  for (const Refusal& refusal : refusals) {
    if (refusal.reason.empty() && refusal.composition != "row-local") continue;
    text += (text.empty() ? "not " : "; not ") + std::string(refusal.composition) + ": " +
            refusal.reason;
  }
  return text;
}

// "; recomputed at each read ..." with the first few by name: an unrolled RNN inlines
// one per step.
std::string recomputed_text(const std::vector<std::string>& recomputed) {
  if (recomputed.empty()) return "";
  std::string names;
  for (size_t r = 0; r < recomputed.size() && r < 3; ++r) {
    names += (r ? ", " : "") + recomputed[r];
  }
  if (recomputed.size() > 3) {
    names += " and " + num(static_cast<int64_t>(recomputed.size() - 3)) + " more";
  }
  return "; recomputed at each read rather than materialized behind a grid barrier "
         "(estimated cheaper): " +
         names;
}

// 4c. The run of at least kMinLastBlockRun stages, from stage 1 on, that saves the
// most: its stages run on the last block to finish the stage before them
// (GlobalPlan::last_block_first). A stage qualifies when every loop it holds is an
// element, warp or block loop over `tid` and `threads` (they stride over one block's
// threads there): no sliced reduction (nor the partials of the next stage's), not the
// staged stencil's tiles, and at most kMaxLastBlockRounds rounds of one block's
// threads. A run of n stages leaves out n grid barriers, each grid_barrier_time_us at
// the kernel's grid, for an arrival count (one atomic's round trip); a stage that needs
// more threads than one block (a squeeze-excitation's first MatMul: 10 warps of 240
// terms against a block's 8, EfficientNet's later MBConv kernels) costs its extra
// rounds, each its items' loads (item_load_chain) at half global_load_latency_ns: the
// loads of an item's loop do not depend on each other, and unrolled they overlap at
// least in pairs (the emulated profile of EfficientNet's MBConv kernels puts an extra
// round of 11 to 28 loads at 0.04 to 0.09 us a load). The run that saves the most,
// when it saves anything: with every stage in one round, the longest. The arrival counter is the
// workspace's second word, which the runtime zeroes with the barrier's before each launch
// (artifact::kArrivalCounterOffset).
constexpr int kMinLastBlockRun = 2;
constexpr int64_t kMaxLastBlockRounds = 8;

// The dependent global loads one work item of `id`'s loop waits for in turn: a
// thread's or a lane's share of a reduction's or GEMM's k (its sequential loop, each
// load waited for before the add that needs it), 1 for an element.
int64_t item_load_chain(const ir::Graph& graph, ir::ValueId id, const ValueSchedule& value) {
  const ir::Node& node = graph.node(graph.value(id).producer);
  auto lanes_share = [](int64_t length, int64_t lanes) { return (length + lanes - 1) / lanes; };
  if (ir::op_kind(node) == ir::OpKind::kGemm) {
    const std::optional<ir::GemmShape> gemm = ir::gemm_shape(graph, node);
    if (!gemm) return 1;
    return value.lanes_over_k ? lanes_share(gemm->k, 32)
           : value.warp_mma   ? lanes_share(gemm->k, 8)
                              : gemm->k;
  }
  if (ir::op_kind(node) != ir::OpKind::kReduction) return 1;
  const int64_t length = value.slices >= 2 ? value.slice : value.reduced;
  switch (value.mapping) {
    case ReductionMapping::kWarp:
      return lanes_share(length, 32);
    case ReductionMapping::kColumn:
      return lanes_share(length, std::max<int64_t>(1, kGlobalBlock / value.columns));
    case ReductionMapping::kThread:
      return length;
  }
  return length;
}

void plan_last_block_stages(const GroupFacts& group, const std::map<int, int64_t>& stage_work,
                            const cost_model::DeviceProfile& profile, GroupSchedule* schedule) {
  GlobalPlan* plan = schedule->as<GlobalPlan>();
  if (plan == nullptr || !schedule->cooperative || schedule->levels < 3) return;
  std::vector<char> fits(static_cast<size_t>(schedule->levels), 1);
  const StencilTile* tile = staged_tile(*schedule);
  for (const auto& [id, value] : schedule->values) {
    if (value.level < 0 || value.level >= schedule->levels) continue;
    const auto level = static_cast<size_t>(value.level);
    if (value.slices >= 2) {
      fits[level] = 0;
      if (level > 0) fits[level - 1] = 0;  // its partials are written a stage early
    }
    if (tile != nullptr && id == tile->staged_value) fits[level] = 0;
  }
  std::map<int, int64_t> chain;  // per stage: the longest item_load_chain
  for (const auto& [id, value] : schedule->values) {
    int64_t& longest = chain[value.level];
    longest = std::max(longest, item_load_chain(group.graph, id, value));
  }
  auto rounds = [&](int level) {
    auto found = stage_work.find(level);
    const int64_t work = found == stage_work.end() ? 0 : found->second;
    return std::max<int64_t>(1, (work + schedule->block - 1) / std::max(schedule->block, 1));
  };
  const double barrier_us =
      cost_model::grid_barrier_time_us(profile, static_cast<double>(schedule->grid));
  const double latency_us = profile.global_load_latency_ns * 1e-3;
  int best_first = -1, best_end = -1;
  double best_saved = 0;
  for (int first = 1; first < schedule->levels; ++first) {
    double extra_us = 0;
    for (int end = first + 1; end <= schedule->levels; ++end) {
      const int last = end - 1;
      if (!fits[static_cast<size_t>(last)] || rounds(last) > kMaxLastBlockRounds) break;
      extra_us += static_cast<double>((rounds(last) - 1) * chain[last]) * latency_us / 2;
      // The arrival count in place of the first barrier: one atomic's round trip.
      const double saved = static_cast<double>(end - first) * barrier_us - latency_us - extra_us;
      if (end - first >= kMinLastBlockRun && saved > 0 && saved > best_saved) {
        best_first = first;
        best_end = end;
        best_saved = saved;
      }
    }
  }
  if (best_first < 0) return;
  plan->last_block_first = best_first;
  plan->last_block_end = best_end;
  static_assert(artifact::kZeroedWorkspaceBytes <= kWorkspaceAlignment,
                "the zeroed counters precede the workspace's first value");
  plan->done_offset = artifact::kArrivalCounterOffset;
  plan->arrival_offset = align_to(schedule->shared_bytes, 16);
  schedule->shared_bytes = plan->arrival_offset + 16;
  schedule->shared_bytes_requested = align_to(schedule->shared_bytes_requested, 16) + 16;
  std::string rounds_text;
  for (int level = best_first; level < best_end; ++level) {
    if (rounds(level) < 2) continue;
    rounds_text += (rounds_text.empty() ? "" : ", ") + std::string("stage ") + num(level) + " in " +
                   num(rounds(level)) + " rounds";
  }
  schedule->why += "; stages " + num(best_first) + " to " + num(best_end - 1) +
                   (rounds_text.empty()
                        ? " need at most one block's threads: the last block to finish stage " +
                              num(best_first - 1) + " runs them, without grid barriers between them"
                        : " run on the last block to finish stage " + num(best_first - 1) +
                              ", without grid barriers between them (" + rounds_text +
                              " of its threads: cheaper than the barriers they save)");
}

// 4. with 4b.: the global composition, its one stencil staged when it can be.
void plan_global(PlanningContext& context, std::map<int, int64_t> stage_work,
                 GroupSchedule* schedule) {
  const GroupFacts& group = context.group;
  const ir::Graph& graph = group.graph;
  schedule->why = refusals_text(context.refusals) + "; so " + num(schedule->levels) +
                  " stages separated by grid barriers";
  if (context.options.stencil_tiles && plan_global_stencil_tile(group, context.profile, schedule)) {
    const StencilTile& tile = *staged_tile(*schedule);
    schedule->why +=
        "; the stage of " + node_label(graph.node(graph.value(tile.staged_value).producer)) +
        " walks the stencil " + node_label(graph.node(tile.stencil)) + " in tiles of " +
        stencil_tile_text(graph, tile) + " outputs, its input tile staged in shared memory";
    if (fold_plane_reductions(group, context.profile, schedule, &stage_work) > 0) {
      std::string names;
      for (ir::ValueId id : tile.plane_reductions) {
        names += (names.empty() ? "" : ", ") + node_label(graph.node(graph.value(id).producer));
      }
      schedule->why += tile.whole_planes()
                           ? "; that stage also sums each plane for " + names +
                                 " from its threads' registers, as every tile holds whole planes"
                           : "; that stage also sums each tile's part of each plane for " + names +
                                 " from its threads' registers, and " + names + " adds a plane's " +
                                 num(tile.tiles_h * tile.tiles_w) +
                                 " parts instead of reading the plane";
    }
  }
  plan_last_block_stages(group, stage_work, context.profile, schedule);
}

// 3. with 3b. and 3c.: one stage (thread, warp, block or packing), or the stencil
// composition when its one stencil's tiles pay.
void plan_one_stage(PlanningContext& context, const MappingUse& use, GroupSchedule* schedule) {
  const GroupFacts& group = context.group;
  const ir::Graph& graph = group.graph;
  plan_single_stage(group, use, context.profile, schedule);
  const PackingPlan* packing = schedule->as<PackingPlan>();
  const ThreadPlan* thread = schedule->as<ThreadPlan>();
  schedule->why = packing ? num(static_cast<int64_t>(packing->parts.size())) +
                                " independent parts, each over its own blocks"
                          : "one stage: every value is computed where it is read, or by its own "
                            "thread mapping";
  const bool plain_thread = thread && thread->mapping == StageMapping::kThread;
  if (plain_thread && context.options.stencil_tiles &&
      plan_stencil_tile(group, context.profile, schedule)) {
    const StencilTile& tile = *staged_tile(*schedule);
    const ir::Node& stencil = graph.node(tile.stencil);
    char reuse[32];
    std::snprintf(reuse, sizeof(reuse), "%.1f", tile.reuse);
    schedule->why = "one stencil " + node_label(stencil) +
                    " whose readers read it at their own index, and its window reads each "
                    "input element " +
                    reuse + " times: the input tile of each " + stencil_tile_text(graph, tile) +
                    " outputs is staged in shared memory";
    return;
  }
  if (plain_thread || packing) plan_vector_access(group, context.profile, schedule);
}

}  // namespace

Result<RuleOutcome> try_stages(PlanningContext& context, GroupSchedule* schedule) {
  const GroupFacts& group = context.group;
  const std::vector<std::string> recomputed =
      recompute_cheap_producers(group, context.profile, schedule);
  STITCH_ASSIGN_OR_RETURN(MappingUse use, plan_levels(group, context.profile, schedule));
  const std::map<int, int64_t> stage_work = plan_global_launch(group, context.profile, schedule);
  if (schedule->cooperative) {
    plan_global(context, stage_work, schedule);
  } else {
    plan_one_stage(context, use, schedule);
  }
  schedule->why += recomputed_text(recomputed);
  return RuleOutcome();
}

}  // namespace stitch::emit
