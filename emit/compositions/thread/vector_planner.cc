// 128-bit accesses of the thread and packing compositions (emit/schedule.h, 3b.).
#include "emit/compositions/thread/vector_planner.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "emit/compositions/group_facts.h"
#include "emit/cuda_text.h"
#include "emit/op_lowering.h"
#include "ir/core/op_registry.h"

namespace stitch::emit {
namespace {

// 3b. 128-bit accesses of the thread composition (VectorAccess::width): how
// a value is read while an output is written in aligned runs of kVectorWidth
// consecutive elements. kRuns: at aligned runs of as many consecutive indices, through
// one index map (the broadcasts on the way), so one 16-byte window per run holds
// every element the run reads; kUniform: at one index per run (a per-row scale, a
// scalar bound); kOther: anything else (a transpose, a gather, a slice, two maps).
constexpr int64_t kVectorWidth = 4;
enum class RunRead { kRuns, kUniform, kOther };

struct RunAccess {
  RunRead read = RunRead::kRuns;
  BroadcastSteps steps;  // the value's index from the output's (when `mapped`)
  bool mapped = true;    // false: a kUniform read at another index (a scalar bound)
};

// Two reads of one value: the same kind through the same map stay; two kUniform reads
// through different maps (or at another index) stay kUniform without a map; anything
// else is kOther.
RunAccess meet(const RunAccess& a, const RunAccess& b) {
  const bool same_map = a.mapped && b.mapped && a.steps == b.steps;
  if (a.read != b.read || (a.read == RunRead::kRuns && !same_map)) {
    return {RunRead::kOther, {}, false};
  }
  return same_map ? a : RunAccess{a.read, {}, false};
}

// How `operand` is read by a broadcasting elementwise read into `out` read as `reads`.
RunAccess broadcast_access(const std::vector<int64_t>& operand, const std::vector<int64_t>& out,
                           const RunAccess& reads) {
  if (reads.read == RunRead::kOther || operand == out) return reads;
  RunAccess access = reads;
  access.steps.emplace_back(operand, out);
  if (reads.read == RunRead::kUniform) return access;
  const int64_t last = out.empty() ? 0 : out.back();
  if (last % kVectorWidth != 0) return {RunRead::kOther, {}, false};  // runs would cross rows
  if (!operand.empty() && operand.back() == last) return access;
  if (operand.empty() || operand.back() == 1) {
    access.read = RunRead::kUniform;
    return access;
  }
  return {RunRead::kOther, {}, false};
}

// How every value `output` depends on is read while `output` is written in runs; the
// group's index-function ops only (nullopt when the group holds a reduction or a GEMM).
std::optional<std::map<ir::ValueId, RunAccess>> run_accesses(const GroupFacts& group,
                                                             ir::ValueId output) {
  const ir::Graph& graph = group.graph;
  std::map<ir::ValueId, RunAccess> reads;
  auto merge = [&](ir::ValueId id, const RunAccess& access) {
    auto [it, fresh] = reads.emplace(id, access);
    if (!fresh) it->second = meet(it->second, access);
  };
  merge(output, {});
  for (auto n = group.ordered.rbegin(); n != group.ordered.rend(); ++n) {
    const ir::Node& node = graph.node(*n);
    const ir::OpKind kind = ir::op_kind(node);
    if (kind == ir::OpKind::kReduction || kind == ir::OpKind::kGemm) return std::nullopt;
    std::optional<RunAccess> out_access;
    for (ir::ValueId id : node.outputs) {
      auto it = id == ir::kNoId ? reads.end() : reads.find(id);
      if (it == reads.end()) continue;
      out_access = out_access ? meet(*out_access, it->second) : it->second;
    }
    if (!out_access) continue;  // not read on the way to `output`
    const OpLowering* lowering = find_op_lowering(node);
    const std::vector<int64_t>& out = dims_of(graph, node.outputs[0]);
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const ir::ValueId input = node.inputs[k];
      if (input == ir::kNoId) continue;
      RunAccess operand{RunRead::kOther, {}, false};
      if (kind == ir::OpKind::kView || (lowering != nullptr && lowering->passes_through)) {
        if (k != 0) continue;   // a shape operand: never read
        operand = *out_access;  // the same flat index
      } else if (kind == ir::OpKind::kElementwise) {
        operand = k > 0 && lowering != nullptr && lowering->later_operands_scalar
                      ? RunAccess{RunRead::kUniform, {}, false}
                      : broadcast_access(dims_of(graph, input), out, *out_access);
      } else if (kind == ir::OpKind::kBroadcast) {
        if (k != 0) continue;
        operand = broadcast_access(dims_of(graph, input), out, *out_access);
      }
      merge(input, operand);
    }
  }
  return reads;
}

}  // namespace

void plan_vector_access(const GroupFacts& group, const cost_model::DeviceProfile& profile,
                        GroupSchedule* schedule) {
  const ir::Graph& graph = group.graph;
  auto float_runs = [&](ir::ValueId id) {
    const ir::TensorType& type = graph.value(id).type;
    const int64_t elements = type.num_elements();
    return type.dtype == ir::DType::kFloat32 && elements > 0 && elements % kVectorWidth == 0;
  };
  int64_t work = 0;
  std::map<ir::ValueId, std::map<ir::ValueId, BroadcastSteps>> maps;
  std::map<ir::ValueId, RunRead> input_reads;  // over every output
  std::set<ir::ValueId> unmapped;              // kUniform inputs read at another index
  for (ir::ValueId output : schedule->boundary.outputs) {
    if (!float_runs(output)) return;
    work = std::max(work, elements_of(graph, output) / kVectorWidth);
    const std::optional<std::map<ir::ValueId, RunAccess>> reads = run_accesses(group, output);
    if (!reads) return;
    for (ir::ValueId input : schedule->boundary.inputs) {
      auto it = reads->find(input);
      if (it == reads->end() || is_baked_scalar(graph.value(input))) continue;
      RunRead read = it->second.read;
      if (read == RunRead::kRuns && !float_runs(input)) read = RunRead::kOther;
      auto [seen, fresh] = input_reads.emplace(input, read);
      // One accessor serves every output: the same kind of read from each.
      if (read == RunRead::kOther || (!fresh && seen->second != read)) return;
      if (!it->second.mapped) unmapped.insert(input);
      maps[output][input] = it->second.steps;
    }
  }
  PackingPlan* packing = schedule->as<PackingPlan>();
  VectorAccess& vector = packing ? packing->vector : std::get<ThreadPlan>(schedule->plan).vector;
  vector.width = static_cast<int>(kVectorWidth);
  for (const auto& [input, read] : input_reads) {
    if (read == RunRead::kRuns) {
      vector.inputs.insert(input);
    } else if (!unmapped.count(input)) {
      vector.uniform_inputs.insert(input);
    }
  }
  for (const auto& [output, inputs] : maps) {
    for (const auto& [input, steps] : inputs) {
      if (vector.inputs.count(input) || vector.uniform_inputs.count(input)) {
        vector.maps[output][input] = steps;
      }
    }
  }
  if (packing) {
    // Each part over its own blocks, a quarter of the threads it had.
    schedule->grid = 0;
    for (size_t p = 0; p < packing->parts.size(); ++p) {
      const std::set<ir::NodeId> part(packing->parts[p].begin(), packing->parts[p].end());
      int64_t part_work = 1;
      for (ir::ValueId output : schedule->boundary.outputs) {
        if (part.count(graph.value(output).producer)) {
          part_work = std::max(part_work, elements_of(graph, output) / kVectorWidth);
        }
      }
      packing->part_grids[p] = wave_grid(part_work, profile, *schedule);
      schedule->grid += packing->part_grids[p];
    }
  } else {
    schedule->block = static_cast<int>(std::min<int64_t>(kGlobalBlock, align_to(work, 32)));
    schedule->grid = wave_grid(work, profile, *schedule);
  }
  schedule->why +=
      "; 4 elements per thread, 128-bit loads and stores (scalar when a pointer is not "
      "16-byte aligned)";
}

}  // namespace stitch::emit
